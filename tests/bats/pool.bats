#!/usr/bin/env bats
# The stream-ordered pool grown at fuse mode's first allocation (exec/reserve.c): a run
# learns what its command line had in use at its peak (the pool's watermark, read at
# boundaries), stores it in the disk cache at exit, and the next run of that command line
# grows the pool by it and a quarter more with one allocation freed at once, before the
# program's own first allocation. alloc's `pool` scenario (tests/stub/progs/alloc.c) sets
# the pool's release threshold to the maximum, as PyTorch's cudaMallocAsync backend does,
# and peaks at 3 MiB of its own (5 MiB with fuse mode's kept blocks, which the driver
# still counts in use).

load helpers
bats_require_minimum_version 1.5.0

setup() {
    common_setup || return 1
    export TCFUSE_CACHE_DIR="$T/cache" TCFUSE_MODE=fuse TCFUSE_STATS=1
}

# The size of the program's first stream-ordered allocation and what came before it.
first_async() { grep -m1 -E '^cuMemAllocAsync .*rc=0$' "$1" | sed -E 's/.*size=([0-9]+) .*/\1/'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

@test "pool: a run learns its peak; the next run of its command line reserves it and a quarter more" {
    base plain "$PROGS/alloc" pool
    [ "$status" = 0 ]
    tcf one "$PROGS/alloc" pool
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/one.out"
    expect_line "$T/one.err" '^tcfuse: +pool reserve +none \(nothing learned yet\); at most 5\.0 MiB in use$'
    [ "$(first_async "$T/one.log")" = 1048576 ]   # the program's own: no reserve
    # the cache holds the program's entry
    run -0 "$TCFUSE" cache ls
    [[ "$output" =~ [0-9a-f]{16}\ +program\ +8\ +ok ]] || { echo "$output"; return 1; }

    tcf two "$PROGS/alloc" pool
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/two.out"
    expect_line "$T/two.err" '^tcfuse: +pool reserve +6\.2 MiB at the first allocation \(.* ms; learned 5\.0 MiB\); at most 5\.0 MiB in use$'
    # the reserve: allocated and freed on the program's stream before its own first
    # allocation, then the watermark reset, so the program's peak is its own
    grep -E '^cuMem(AllocAsync|FreeAsync|PoolSetAttribute) ' "$T/two.log" | head -5 >"$T/order"
    cat "$T/order"
    sed -n 1p "$T/order" | grep -q 'attr=4 value=18446744073709551615 rc=0'   # the program's threshold
    sed -n 2p "$T/order" | grep -qE '^cuMemAllocAsync size=6553600 stream=0x550100000100 ptr=(0x[0-9a-f]+) rc=0$'
    local p
    p=$(sed -n 2p "$T/order" | sed -E 's/.*ptr=(0x[0-9a-f]+) .*/\1/')
    sed -n 3p "$T/order" | grep -q "^cuMemFreeAsync ptr=$p stream=0x550100000100 rc=0$"
    sed -n 4p "$T/order" | grep -q '^cuMemPoolSetAttribute .*attr=8 value=0 rc=0$'
    sed -n 5p "$T/order" | grep -q '^cuMemAllocAsync size=1048576 '
    run -0 python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/two.log"

    # another command line learns for itself
    tcf other "$PROGS/alloc" pool keep
    expect_line "$T/other.err" '^tcfuse: +pool reserve +none \(nothing learned yet\)'
}

@test "pool: nothing is reserved where the pool would give it back, nor with TCFUSE_POOL_RESERVE=0" {
    tcf low1 "$PROGS/alloc" pool lowkeep
    tcf low2 "$PROGS/alloc" pool lowkeep
    [ "$status" = 0 ]
    expect_line "$T/low2.err" '^tcfuse: +pool reserve +none \(the pool.s release threshold is lower\); at most 5\.0 MiB in use$'
    [ "$(first_async "$T/low2.log")" = 1048576 ]
    tcf one "$PROGS/alloc" pool
    TCFUSE_POOL_RESERVE=0 tcf off "$PROGS/alloc" pool
    [ "$status" = 0 ]
    expect_line "$T/off.err" '^tcfuse: +pool reserve +none \(TCFUSE_POOL_RESERVE=0\)'
    [ "$(first_async "$T/off.log")" = 1048576 ]
    # observe mode never reserves (it selects no allocator)
    TCFUSE_MODE=observe tcf obs "$PROGS/alloc" pool
    [ "$(first_async "$T/obs.log")" = 1048576 ]
    ! grep -q 'pool reserve' "$T/obs.err"
}

@test "pool: TCFUSE_POOL_RESERVE sets the size, at most the free memory less 1 GiB" {
    TCFUSE_POOL_RESERVE=8M tcf set "$PROGS/alloc" pool
    [ "$status" = 0 ]
    expect_line "$T/set.err" '^tcfuse: +pool reserve +8\.0 MiB at the first allocation'
    [ "$(first_async "$T/set.log")" = 8388608 ]
    # the stand-in has 80 GiB, all free
    TCFUSE_POOL_RESERVE=100G tcf big "$PROGS/alloc" pool
    [ "$status" = 0 ]
    expect_line "$T/big.err" '^tcfuse: +pool reserve +80896\.0 MiB at the first allocation'
    [ "$(first_async "$T/big.log")" = $((79 << 30)) ]
}

@test "pool: an allocation out of memory trims the grown pool once, and is tried again" {
    base plain "$PROGS/alloc" pool
    # 2.5 MiB of stream-ordered memory: the third 1 MiB block fails, with tcfuse as without
    FAKECUDA_ASYNC_LIMIT=2621440 base plainlim "$PROGS/alloc" pool
    FAKECUDA_ASYNC_LIMIT=2621440 TCFUSE_POOL_RESERVE=2M tcf lim "$PROGS/alloc" pool
    [ "$status" = 0 ]
    same_text stdout "$T/plainlim.out" "$T/lim.out"
    ! same_text stdout "$T/plain.out" "$T/lim.out" >/dev/null   # the limit did bite
    expect_line "$T/lim.err" '; trimmed after running out of memory$'
    [ "$(grep -c '^cuMemPoolTrimTo pool=0x550700000100 keep=0 rc=0$' "$T/lim.log")" = 1 ]
    # the failed allocation, the trim, the retry
    grep -E '^cuMemAllocAsync .*rc=2$|^cuMemPoolTrimTo' "$T/lim.log" | head -3 | awk '{print $1}' |
        tr '\n' ' ' >"$T/seq"
    [ "$(cat "$T/seq")" = "cuMemAllocAsync cuMemPoolTrimTo cuMemAllocAsync " ] || { cat "$T/seq"; return 1; }
}
