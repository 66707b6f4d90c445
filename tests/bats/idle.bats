#!/usr/bin/env bats
# Idle closes in fuse mode (capture/window.c, tcf_window_busy): a window closes when the
# host made no launch for TCFUSE_IDLE_US, but the time a launch hook spends blocked in the
# driver (a GPU-bound program's launches block whenever the driver's queue is full) or
# issuing held work is not the host's idleness. Cutting there made windows, and the groups
# a run meets, differ from process to process.

load helpers
bats_require_minimum_version 1.5.0

setup() {
    fusechain_setup || return 1
}

@test "idle: launches that block in the driver do not cut fuse mode's windows; a host that sleeps does" {
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
    expect_line "$T/slow.err" '^tcfuse: +boundaries +cuStreamSynchronize 20$'
    expect_line "$T/slow.err" '^tcfuse: +windows +20 \(launches per window: median 3, max 3\)'
    expect_line "$T/slow.err" '^tcfuse: +fused +19 groups'
    # The host's own quiet still closes a window: 20 ms asleep between two launches.
    TCFUSE_IDLE_US=1000 TCFUSE_MODE=fuse TCFUSE_STATS=1 TCFUSE_CACHE_DIR="$T/cache" \
        tcf sleep "$PROGS/scen" idle 20
    [ "$status" = 0 ] || { cat "$T/sleep.err"; return 1; }
    expect_line "$T/sleep.err" '^tcfuse: +boundaries +.*idle 1'
}
