#!/usr/bin/env bats
# Exits with windows open: fusechain (tests/stub/progs/fusechain.c) launches its chain once
# more without synchronizing, so that a window holds it (fuse mode, warm cache,
# TCFUSE_HOLD_ALL=1), then returns from main, calls exit or _exit, or exits from a signal
# handler; or it launches until a timer's signal lands wherever it lands, often inside
# tcfuse with a lock held, and the handler calls exit. Each must end as it does without
# tcfuse: the same status and output, in bounded time (a hung exit is killed at 20 s).

load helpers
bats_require_minimum_version 1.5.0

setup() {
    fusechain_setup || return 1
    # FAKECUDA_FAST: the stub's logging looks its callers up (dladdr, under the loader's
    # lock); a signal landing there would wait on the stub, not on tcfuse.
    export FAKECUDA_MEM=1 TCFUSE_CACHE_DIR="$T/cache" TCFUSE_NVRTC="$NVRTC"
}

# warm: the chain's kernels compiled, checked and on disk, so that a window holds it.
warm() {
    need_nvrtc
    TCFUSE_MODE=fuse TCFUSE_COMPILE_WAIT=1 TCFUSE_STATS=1 tcf warm "$PROGS/fusechain" 2
    expect_line "$T/warm.err" '^tcfuse: +fused +1 groups'
}

# ends NAME WANT_STATUS CMD...: CMD with tcfuse ends with WANT_STATUS within 20 s.
ends() {
    local name=$1 want=$2
    shift 2
    tcf "$name" timeout -k 1 20 "$@"
    [ "$status" = "$want" ] || { echo "$name: exit status $status, want $want"; cat "$T/$name.err"; return 1; }
}

@test "exit: return, exit, _exit and exit from a signal handler with a window held" {
    warm
    local how want mode
    declare -A wants=([return]=0 [exit]=3 [_exit]=4 [handler]=5)
    for how in return exit _exit handler; do
        want=${wants[$how]}
        base "$how.plain" "$PROGS/fusechain" 2 "$how"
        [ "$status" = "$want" ]
        for mode in observe fuse; do
            TCFUSE_MODE=$mode TCFUSE_HOLD_ALL=1 TCFUSE_STATS=1 ends "$how.$mode" "$want" \
                "$PROGS/fusechain" 2 "$how"
            same_text "$how $mode: stdout" "$T/$how.plain.out" "$T/$how.$mode.out"
            # exit handlers ran (stats printed) unless _exit skipped them
            if [ "$how" = _exit ]; then
                ! grep -q 'stats:' "$T/$how.$mode.err"
            else
                expect_line "$T/$how.$mode.err" "^tcfuse: stats: mode $mode"
            fi
        done
        # the window really held the last launches when the process ended
        [ "$how" = return ] || [ "$how" = _exit ] ||
            expect_line "$T/$how.fuse.err" '^tcfuse: +held +[1-9][0-9]* windows'
    done
}

@test "exit: a signal handler that calls exit wherever the signal lands, observe and fuse" {
    warm
    local us mode n=0 slow=()
    for us in 300 700 1500 2500 4000 6000 9000 14000 20000 30000 50000 90000; do
        for mode in "observe" "fuse" "fuse TCFUSE_HOLD_ALL=1"; do
            set -- $mode
            (
                export TCFUSE_MODE="$1" FAKECUDA_FAST=1 TCFUSE_STATS=1
                [ -z "${2:-}" ] || export "${2?}"
                ends alarm 6 "$PROGS/fusechain" 2 alarm "$us"
            ) || { echo "timer ${us} us, $mode"; return 1; }
            n=$((n + 1))
        done
    done
    echo "$n runs exited 6" >&3
}

@test "exit: a child forked while fuse mode's worker compiles exits, and so does its parent" {
    need_nvrtc
    base fork.plain "$PROGS/fusechain" 1 fork
    grep -qx 'child: exit 0' "$T/fork.plain.out"
    local mode i
    for i in 1 2 3; do
        for mode in observe fuse; do
            rm -rf "$T/cache"  # a compile queued at the fork: the worker is busy in the parent
            TCFUSE_MODE=$mode TCFUSE_STATS=1 ends "fork.$mode" 0 "$PROGS/fusechain" 1 fork
            same_text "fork $mode: stdout" "$T/fork.plain.out" "$T/fork.$mode.out"
            # the parent's stats, once: the child neither prints nor closes the parent's windows
            [ "$(grep -c '^tcfuse: stats:' "$T/fork.$mode.err")" = 1 ] || { cat "$T/fork.$mode.err"; false; }
        done
    done
}
