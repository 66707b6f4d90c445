#!/usr/bin/env bats
# Stream-ordered frees in fuse mode: fusechain's `async` scenario (tests/stub/progs/
# fusechain.c) allocates and frees y, z and w stream-ordered each iteration, as PyTorch's
# cudaMallocAsync backend does. Once mul and add are fused, the window holding them holds
# y's free too, and w's allocation (y's size, the same stream) is handed y's block instead
# of the pool's (exec/hold.c, tcf_exec_alloc). What must hold: the program's output and
# status are those of a plain run; the driver sees one allocation fewer per fused
# iteration; and, in the order the driver received the calls, no launch touches memory that
# is not live and no block is freed twice (stub_liveness.py).

load helpers
bats_require_minimum_version 1.5.0

setup() {
    fusechain_setup || return 1
    # the hand-over tests count the driver's allocations: nothing kept for reuse there
    export FAKECUDA_MEM=1 TCFUSE_CACHE_DIR="$T/cache" TCFUSE_NVRTC="$NVRTC" TCFUSE_REUSE=0
}

# the program's stream-ordered allocations that reached the driver (stream 0x0: tcfuse's
# worker allocates verification's scratch on its own stream)
driver_allocs() { grep -c '^cuMemAllocAsync .* stream=0x0 ' "$1" || true; }

# fusechain run plain (every launch touching live memory only), then in fuse mode with
# every compile waited for: both end well and print the same (the test checks the rest)
plain_then_fused() {
    base plain "$PROGS/fusechain" "$@"
    [ "$status" = 0 ]
    run -0 python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/plain.log"
    TCFUSE_MODE=fuse TCFUSE_COMPILE_WAIT=1 TCFUSE_STATS=1 tcf fuse "$PROGS/fusechain" "$@"
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/fuse.out"
}

@test "frees: a held free's block goes to the next allocation of its size on its stream" {
    need_nvrtc
    # every compile waited for: iteration 1 learns, 2-4 are fused and hand y's block to w
    plain_then_fused 4 async
    expect_line "$T/fuse.err" '^tcfuse: +fused +3 groups'
    expect_line "$T/fuse.err" '^tcfuse: +held .* 3 frees \(3 handed to an allocation of their size\)'
    local p f
    p=$(driver_allocs "$T/plain.log") f=$(driver_allocs "$T/fuse.log")
    [ "$p" = 12 ] || { echo "plain: $p stream-ordered allocations, want 12"; return 1; }
    [ "$f" = 9 ] || { echo "fuse: $f stream-ordered allocations reached the driver, want 9"; return 1; }
    run python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/fuse.log"
    echo "$output"
    [ "$status" = 0 ]
    # every block the driver handed out stream-ordered was freed exactly once
    [ "$(grep -c '^cuMemFreeAsync .* stream=0x0 rc=0$' "$T/fuse.log")" = "$f" ]
}

@test "frees: with every decoded launch held (TCFUSE_HOLD_ALL), the block goes over in order" {
    need_nvrtc
    base plain "$PROGS/fusechain" 3 async
    # an empty cache and no waiting: each window holds its launches whether or not it fuses
    TCFUSE_MODE=fuse TCFUSE_HOLD_ALL=1 TCFUSE_STATS=1 tcf hold "$PROGS/fusechain" 3 async
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/hold.out"
    expect_line "$T/hold.err" '^tcfuse: +held .* 3 frees \(3 handed to an allocation of their size\)'
    [ "$(driver_allocs "$T/hold.log")" = 6 ]
    run python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/hold.log"
    echo "$output"
    [ "$status" = 0 ]
}

@test "frees: observe mode and TCFUSE_FUSION=0 hand nothing over" {
    base plain "$PROGS/fusechain" 3 async
    local m
    for m in observe fusion0; do
        if [ "$m" = observe ]; then
            TCFUSE_MODE=observe tcf "$m" "$PROGS/fusechain" 3 async
        else
            TCFUSE_MODE=fuse TCFUSE_FUSION=0 TCFUSE_HOLD_ALL=1 tcf "$m" "$PROGS/fusechain" 3 async
        fi
        [ "$status" = 0 ]
        same_text "$m stdout" "$T/plain.out" "$T/$m.out"
        [ "$(driver_allocs "$T/$m.log")" = 9 ]
    done
}

# driver_frees LOG: the program's stream-ordered frees that reached the driver
driver_frees() { grep -c '^cuMemFreeAsync .* stream=0x0 rc=0$' "$1" || true; }

@test "frees: kept blocks serve the next allocations of their size on their stream (TCFUSE_REUSE)" {
    need_nvrtc
    base plain "$PROGS/fusechain" 4 async
    [ "$status" = 0 ]
    [ "$(driver_allocs "$T/plain.log")" = 12 ]
    TCFUSE_REUSE=2G TCFUSE_MODE=fuse TCFUSE_COMPILE_WAIT=1 TCFUSE_STATS=1 tcf reuse "$PROGS/fusechain" 4 async
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/reuse.out"
    expect_line "$T/reuse.err" '^tcfuse: +fused +3 groups'
    # iteration 1: y and z from the driver, w takes y's block; later ones reach it no more
    [ "$(driver_allocs "$T/reuse.log")" = 2 ] || { echo "want 2 driver allocations"; return 1; }
    [ "$(driver_frees "$T/reuse.log")" = 0 ] || { echo "want no driver frees"; return 1; }
    expect_line "$T/reuse.err" '^tcfuse: +reuse +7 allocations served from kept blocks; 9 frees kept, 0 not'
    run python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/reuse.log"
    echo "$output"
    [ "$status" = 0 ]
}

@test "frees: observe mode keeps no block, nor TCFUSE_REUSE=0 or TCFUSE_FUSION=0 in fuse mode" {
    base plain "$PROGS/fusechain" 3 async
    local m
    for m in observe fusion0 reuse0; do
        if [ "$m" = observe ]; then
            TCFUSE_REUSE=2G TCFUSE_MODE=observe tcf "$m" "$PROGS/fusechain" 3 async
        elif [ "$m" = fusion0 ]; then
            TCFUSE_REUSE=2G TCFUSE_MODE=fuse TCFUSE_FUSION=0 tcf "$m" "$PROGS/fusechain" 3 async
        else
            TCFUSE_REUSE=0 TCFUSE_MODE=fuse TCFUSE_STATS=1 tcf "$m" "$PROGS/fusechain" 3 async
            expect_line "$T/$m.err" '^tcfuse: +reuse +0 allocations served .*\(TCFUSE_REUSE=0: off\)'
        fi
        [ "$status" = 0 ]
        same_text "$m stdout" "$T/plain.out" "$T/$m.out"
        [ "$(driver_allocs "$T/$m.log")" = 9 ]
        [ "$(driver_frees "$T/$m.log")" = 9 ]
    done
}

@test "frees: a block kept past TCFUSE_REUSE goes to the driver" {
    base plain "$PROGS/fusechain" 3 async
    # fusechain's blocks are 16 KiB: a 16 KiB cap keeps one at a time
    TCFUSE_REUSE=16K TCFUSE_MODE=fuse TCFUSE_STATS=1 tcf cap "$PROGS/fusechain" 3 async
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/cap.out"
    expect_line "$T/cap.err" '^tcfuse: +reuse +[1-9][0-9]* allocations served .* [1-9][0-9]* not \(TCFUSE_REUSE full\)'
    run python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/cap.log"
    echo "$output"
    [ "$status" = 0 ]
}

@test "frees: kept blocks go back when an allocation runs out of memory, and before cuMemPoolTrimTo" {
    base plain "$PROGS/alloc" keep
    [ "$status" = 0 ]
    # 4 blocks of 64 KiB freed and kept, then 200 KiB asked for under a 300 KiB limit
    FAKECUDA_ASYNC_LIMIT=300000 TCFUSE_REUSE=2G TCFUSE_MODE=fuse TCFUSE_STATS=1 tcf keep "$PROGS/alloc" keep
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/keep.out"
    expect_line "$T/keep.err" '^tcfuse: +reuse .* 6 given back to the driver'
    # the driver's view: the failed allocation, the 4 kept blocks freed, the retry
    grep -E '^(cuMemAllocAsync|cuMemFreeAsync|cuMemPoolTrimTo) .*stream=0x[0-9a-f]{6,}|^cuMemPoolTrimTo' "$T/keep.log" |
        awk '{print $1, $NF, ($2 ~ /^size/ ? $2 : "")}' >"$T/order"
    cat "$T/order"
    sed -n 5p "$T/order" | grep -q '^cuMemAllocAsync rc=2 size=204800$'
    [ "$(sed -n 6,9p "$T/order" | grep -c '^cuMemFreeAsync rc=0')" = 4 ]
    sed -n 10p "$T/order" | grep -q '^cuMemAllocAsync rc=0 size=204800$'
    # both blocks kept since are freed before the trim, which comes last
    [ "$(sed -n 12,13p "$T/order" | grep -c '^cuMemFreeAsync rc=0')" = 2 ]
    sed -n 14p "$T/order" | grep -q '^cuMemPoolTrimTo rc=0'
    run python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/keep.log" 0x550100000100
    echo "$output"
    [ "$status" = 0 ]
}

@test "frees: nothing is kept or handed out while the application captures a stream" {
    base plain "$PROGS/replay" capfree 3
    [ "$status" = 0 ]
    TCFUSE_REUSE=2G TCFUSE_MODE=fuse TCFUSE_STATS=1 tcf cap "$PROGS/replay" capfree 3
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/cap.out"
    # outside the captures the block is kept and served again (iterations 2 and 3)
    expect_line "$T/cap.err" '^tcfuse: +reuse +2 allocations served from kept blocks; 3 frees kept'
    # inside each capture the allocation and the free are the driver's (graph nodes)
    awk '/^cuStreamBeginCapture/ {c = 1} /^cuStreamEndCapture/ {c = 0}
         c && /^cuMem(Alloc|Free)Async / && / rc=0$/ {n++} END {print n + 0}' "$T/cap.log" >"$T/n"
    [ "$(cat "$T/n")" = 6 ] || { echo "want 6 driver allocations and frees inside the captures, got $(cat "$T/n")"; return 1; }
}

@test "frees: by default at most a quarter of the device's memory is kept; TCFUSE_REUSE set is taken as is" {
    need_nvrtc
    base plain "$PROGS/fusechain" 3 async
    # a 64 KiB device: a quarter is one of fusechain's 16 KiB blocks at a time
    unset TCFUSE_REUSE
    FAKECUDA_TOTAL_MEM=65536 TCFUSE_MODE=fuse TCFUSE_STATS=1 tcf small "$PROGS/fusechain" 3 async
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/small.out"
    expect_line "$T/small.err" '^tcfuse: +reuse .* [1-9][0-9]* not \(TCFUSE_REUSE full\)'
    FAKECUDA_TOTAL_MEM=65536 TCFUSE_REUSE=1G TCFUSE_MODE=fuse TCFUSE_STATS=1 tcf set "$PROGS/fusechain" 3 async
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/set.out"
    expect_line "$T/set.err" '^tcfuse: +reuse .* 0 not \(TCFUSE_REUSE full\)'
}

# exec/ahead.c: fusechain's `ahead` scenario is HF Llama's MLP in small. A GEMM by cuBLAS's
# nvjet name (through cuLaunchKernelEx, after a 4-byte memset of its semaphore) sits between
# mul and add, and writes the block mul's input had: the pool hands it over the moment that
# input is freed. The first time, the GEMM touches mul's bytes and waits for it (mul's kernel
# is learned); from then on mul's input is kept from hand-over, the memset and the GEMM go
# ahead of the held mul, and mul and add run as one kernel.
@test "frees: a GEMM and a memset go ahead of held work they do not touch; a learned kernel's input is kept from hand-over" {
    need_nvrtc
    export TCFUSE_REUSE=16M
    plain_then_fused 6 ahead
    cat "$T/fuse.err"   # shown when a check below fails
    # the up GEMM waits at the first iteration (mul's kernel learned) and goes ahead at the
    # other five, mul's input kept back; every memset goes ahead
    expect_line "$T/fuse.err" '^tcfuse: +ahead +5 launches and 6 memsets .*, 1 not \(they may\); 5 frees kept from hand-over \(1 kernels learned\)'
    expect_line "$T/fuse.err" '^ahead: up.s output took gate.s block 1 times'
    # mul and add fused across the GEMM at iterations 3-6 (2 planned them as issued)
    expect_line "$T/fuse.err" '^tcfuse: +fused +4 groups; 4 launches removed, 4 stores dropped'
    run -0 python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/fuse.log"
    # with TCFUSE_AHEAD=0 the GEMM ends the window: nothing goes ahead, nothing is kept back
    TCFUSE_MODE=fuse TCFUSE_AHEAD=0 TCFUSE_COMPILE_WAIT=1 TCFUSE_STATS=1 tcf off "$PROGS/fusechain" 6 ahead
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/off.out"
    ! grep -q '^tcfuse: +ahead' "$T/off.err"
    expect_line "$T/off.err" '^ahead: up.s output took gate.s block 6 times'
}

@test "frees: a block kept on a default stream is kept for its device's context only" {
    # twodev: each iteration allocates and frees a block on device 0's legacy stream, then
    # one of the same size on device 1's (the same handle, 0, in both contexts). Kept
    # blocks are matched by context there: device 1 never gets device 0's block, each
    # device reuses its own, and at the trim each goes back under its own context.
    need_nvrtc
    export FAKECUDA_DEVICES=2
    base plain "$PROGS/fusechain" 4 twodev
    [ "$status" = 0 ]
    TCFUSE_REUSE=2G TCFUSE_MODE=fuse TCFUSE_STATS=1 tcf two "$PROGS/fusechain" 4 twodev
    [ "$status" = 0 ] || { cat "$T/two.out" "$T/two.err"; return 1; }
    same_text stdout "$T/plain.out" "$T/two.out"
    grep -q "device 1 got device 0's block 0 times" "$T/two.out"
    # one driver allocation a device; the six others served from that device's own block
    [ "$(driver_allocs "$T/two.log")" = 2 ] || { echo "want 2 driver allocations"; return 1; }
    expect_line "$T/two.err" '^tcfuse: +reuse +6 allocations served from kept blocks; 8 frees kept, 0 not .*; 2 given back to the driver'
    # device 1's block (its first allocation, after device 1's context was made current)
    # is freed back under device 1's context, before the trim, which then runs under 0's
    local d1
    d1=$(grep -vE '^(\[tcfuse\] )?cuCtxGetCurrent ' "$T/two.log" |
         grep -A1 '^cuCtxSetCurrent ctx=0x550000000200 ' |
         sed -nE 's/^cuMemAllocAsync .* ptr=(0x[0-9a-f]+) rc=0$/\1/p' | head -1)
    [ -n "$d1" ]
    grep -E '^(\[tcfuse\] )?(cuCtxSetCurrent|cuMemFreeAsync|cuMemPoolTrimTo) ' "$T/two.log" |
        tail -5 | sed -E 's/^\[tcfuse\] //; s/ rc=0$//' >"$T/tail.txt"
    grep -A1 '^cuCtxSetCurrent ctx=0x550000000200$' "$T/tail.txt" | grep -q "^cuMemFreeAsync ptr=$d1 " ||
        { cat "$T/tail.txt"; return 1; }
    [ "$(tail -2 "$T/tail.txt" | head -1)" = "cuCtxSetCurrent ctx=0x550000000100" ]
    [ "$(tail -1 "$T/tail.txt" | cut -d' ' -f1)" = cuMemPoolTrimTo ]
}
