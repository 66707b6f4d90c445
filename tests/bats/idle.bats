#!/usr/bin/env bats
# Idle closes (capture/window.c): in observe mode a window closes when work arrives after
# TCFUSE_IDLE_US of quiet; the acting modes never close on idle (interpose/init.c). In
# fuse mode such a cut freed nothing (held work had waited through the gap already), and
# where a GPU-bound program's host pauses (its launches block whenever the driver's queue
# is full) differs from run to run, and with it the groups a run meets.

load helpers
bats_require_minimum_version 1.5.0

setup() {
    fusechain_setup || return 1
}

@test "idle: fuse mode's windows are not cut where launches block in the driver or the host sleeps; observe mode's are" {
    need_nvrtc
    export FAKECUDA_MEM=1
    base plain "$PROGS/fusechain" 20
    # Every launch of the stand-in takes 500 us, more than the idle time: mul is issued
    # (and blocks) before add arrives, the fused kernel before tanh does.
    FAKECUDA_LAUNCH_DELAY_US=500 TCFUSE_IDLE_US=200 TCFUSE_MODE=fuse \
        TCFUSE_COMPILE_WAIT=1 TCFUSE_STATS=1 TCFUSE_CACHE_DIR="$T/cache" TCFUSE_NVRTC="$NVRTC" \
        tcf slow "$PROGS/fusechain" 20
    [ "$status" = 0 ] || { cat "$T/slow.err"; return 1; }
    same_text "stdout" "$T/plain.out" "$T/slow.out"
    # one window per iteration, cut at its synchronize; the chain fused from the second on
    # (the window holds the two launches fuse mode decodes: the third, a functor it does
    # not know, is counted, not recorded)
    expect_line "$T/slow.err" '^tcfuse: +boundaries +cuStreamSynchronize 20$'
    expect_line "$T/slow.err" '^tcfuse: +windows +20 \(launches per window: median 2, max 2\)'
    expect_line "$T/slow.err" '^tcfuse: +fused +19 groups'
    # The host asleep 20 ms between two launches: observe mode cuts there, fuse mode not.
    local m
    for m in observe fuse; do
        TCFUSE_IDLE_US=1000 TCFUSE_MODE=$m TCFUSE_STATS=1 TCFUSE_CACHE_DIR="$T/cache" \
            tcf "sleep.$m" "$PROGS/scen" idle 20
        [ "$status" = 0 ] || { cat "$T/sleep.$m.err"; return 1; }
    done
    expect_line "$T/sleep.observe.err" '^tcfuse: +boundaries +.*idle 1'
    stats_line "$T/sleep.fuse.err" boundaries
    ! stats_line "$T/sleep.fuse.err" boundaries | grep -q idle
}
