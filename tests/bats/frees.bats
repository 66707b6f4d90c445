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
    export FAKECUDA_MEM=1 TCFUSE_CACHE_DIR="$T/cache" TCFUSE_NVRTC="$NVRTC"
}

# the program's stream-ordered allocations that reached the driver (stream 0x0: tcfuse's
# worker allocates verification's scratch on its own stream)
driver_allocs() { grep -c '^cuMemAllocAsync .* stream=0x0 ' "$1" || true; }

@test "frees: a held free's block goes to the next allocation of its size on its stream" {
    need_nvrtc
    base plain "$PROGS/fusechain" 4 async
    [ "$status" = 0 ]
    run -0 python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/plain.log"
    # every compile waited for: iteration 1 learns, 2-4 are fused and hand y's block to w
    TCFUSE_MODE=fuse TCFUSE_COMPILE_WAIT=1 TCFUSE_STATS=1 tcf fuse "$PROGS/fusechain" 4 async
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/fuse.out"
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
