#!/usr/bin/env bats
# The hold policy (exec/sites.c): a window held from a kernel that starts a fusable group,
# at a place where it does not, fuses nothing; after two such holds the place is passed
# (its launches go out at once) and re-checked now and then. The program is fusechain
# (tests/stub/progs/fusechain.c) with `alone`: each iteration runs the fused chain
# (mul, add, tanh), then mul alone between two tanh. With NVRTC at hand, FAKECUDA_MEM=1
# and TCFUSE_COMPILE_WAIT=1, mul is a start from the first synchronize on.

load helpers
bats_require_minimum_version 1.5.0

ITERS=40

setup() {
    fusechain_setup || return 1
    need_nvrtc
    export FAKECUDA_MEM=1
}

# chain NAME [VAR=VALUE...]: fusechain alone in fuse mode (its own cache), which must end
# as it does without tcfuse. Stats in $T/NAME.err.
chain() {
    local name=$1
    shift
    [ -f "$T/plain.out" ] || base plain "$PROGS/fusechain" "$ITERS" alone
    (
        export TCFUSE_MODE=fuse TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 \
            TCFUSE_CACHE_DIR="$T/cache-$name" TCFUSE_NVRTC="$NVRTC"
        local kv
        for kv in "$@"; do export "${kv?}"; done
        _run "$LIB" "$name" "$PROGS/fusechain" "$ITERS" alone
    )
    status=$(cat "$T/$name.rc")
    [ "$status" = "$(cat "$T/plain.rc")" ] || { echo "$name: exit $status"; cat "$T/$name.err"; return 1; }
    same_text "$name: stdout" "$T/plain.out" "$T/$name.out" || return 1
}

# policy NAME: "vain passed checks" from the hold policy's stats line.
policy() {
    stats_line "$T/$1.err" "hold policy" |
        sed -E 's/.* ([0-9]+) held windows fused nothing; ([0-9]+) holds passed.*, ([0-9]+) held again.*/\1 \2 \3/'
}
groups() { stats_line "$T/$1.err" fused | sed -E 's/^tcfuse: +fused +([0-9]+) groups.*/\1/'; }

@test "hold policy: a place where holding fused nothing is passed, the fused chain still held" {
    chain adapt
    chain always TCFUSE_HOLD_ADAPT=0
    # The chain fuses in every iteration after the first, with the policy and without.
    [ "$(groups adapt)" = "$((ITERS - 1))" ] || { cat "$T/adapt.err"; return 1; }
    [ "$(groups always)" = "$((ITERS - 1))" ] || { cat "$T/always.err"; return 1; }
    # Without it, mul alone is held and fuses nothing every time (from the first
    # iteration's: the chain's synchronize made mul a start).
    read -r vain passed checks <<<"$(policy always)"
    [ "$vain $passed $checks" = "$ITERS 0 0" ] || { cat "$T/always.err"; return 1; }
    # With it: two vain holds, then passes; one re-check after 16 passes (vain too, so the
    # next comes after 32 more).
    read -r vain passed checks <<<"$(policy adapt)"
    [ "$vain $passed $checks" = "3 $((ITERS - 3)) 1" ] || { cat "$T/adapt.err"; return 1; }
    expect_line "$T/adapt.err" '^tcfuse: +held +42 windows from a known start'
    # Holding or passing, the driver saw the same launches with the same bytes, in order.
    log_launches "$T/adapt.log" >"$T/adapt.launches"
    log_launches "$T/always.log" >"$T/always.launches"
    same_text "launches" "$T/always.launches" "$T/adapt.launches"
}

@test "hold policy: TCFUSE_HOLD_ALL holds everywhere, the policy stays out of it" {
    chain all TCFUSE_HOLD_ALL=1
    # held from the first window on: the chain fuses in every iteration, mul alone never
    [ "$(groups all)" = "$ITERS" ] || { cat "$T/all.err"; return 1; }
    read -r vain passed checks <<<"$(policy all)"
    [ "$vain $passed $checks" = "$ITERS 0 0" ] || { cat "$T/all.err"; return 1; }
    expect_line "$T/all.err" '^tcfuse: +hold policy .*\(TCFUSE_HOLD_ALL: always held\)'
}
