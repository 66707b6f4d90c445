#!/usr/bin/env bats
# A driver call that fails returns its result unchanged through tcfuse: FAKECUDA_FAIL
# makes the stub fail one entry point with CUDA_ERROR_UNKNOWN (999); the program must
# print the same results and make the same calls with tcfuse as without. This covers
# tcfuse's own queries failing too (names, parameter layouts, context, lookups).

load helpers

# fail_case SYMBOL PROGRAM ARGS...: the run with tcfuse matches the run without, and the
# failure really happened (a logged call of SYMBOL with rc=999).
fail_case() {
    local sym="$1" name="fail-$1-$BATS_TEST_NUMBER-$RANDOM"
    shift
    FAKECUDA_FAIL="$sym" compare_runs "$name" "$@" || return 1
    if ! untagged_log "$T/$name.base.log" | grep -q "^$sym .*rc=999$"; then
        echo "$sym: the scenario $* never called it"
        return 1
    fi
}

# fail_all "SYMBOL PROGRAM ARGS..." ...: fail_case for each, reporting all that differ.
fail_all() {
    local line failed=()
    for line in "$@"; do
        # shellcheck disable=SC2086
        fail_case $line || failed+=("$line")
    done
    if [ "${#failed[@]}" -gt 0 ]; then
        printf 'FAKECUDA_FAIL case differs with tcfuse: %s\n' "${failed[@]}"
        return 1
    fi
}

@test "fail: failing launches return their results unchanged" {
    fail_all "cuLaunchKernel $PROGS/scen windows" \
        "cuLaunchKernel_ptsz $PROGS/scen -l gpa-ptds windows" \
        "cuLaunchKernelEx $PROGS/scen launch" \
        "cuLaunchKernelEx_ptsz $PROGS/scen -l gpa-ptds launch" \
        "cuLaunchKernel $PROGS/linked" \
        "cuLaunchKernel_ptsz $PROGS/linked_ptsz"
}

@test "fail: failing allocations, frees, memsets and copies return their results unchanged" {
    fail_all "cuMemAlloc_v2 $PROGS/alloc seq" \
        "cuMemAllocAsync $PROGS/alloc seq" \
        "cuMemAllocAsync_ptsz $PROGS/alloc -l gpa-ptds seq" \
        "cuMemFreeAsync $PROGS/alloc seq" \
        "cuMemFreeAsync_ptsz $PROGS/alloc -l gpa-ptds seq" \
        "cuMemAllocFromPoolAsync $PROGS/alloc seq" \
        "cuMemAllocFromPoolAsync_ptsz $PROGS/alloc -l gpa-ptds seq" \
        "cuMemFree_v2 $PROGS/alloc seq" \
        "cuMemsetD8Async $PROGS/scen ops" \
        "cuMemsetD16Async_ptsz $PROGS/scen -l gpa-ptds ops" \
        "cuMemsetD32Async $PROGS/scen ops" \
        "cuMemcpyDtoDAsync_v2 $PROGS/scen ops" \
        "cuMemcpyDtoDAsync_v2_ptsz $PROGS/scen -l gpa-ptds ops" \
        "cuMemAlloc_v2 $PROGS/linked" \
        "cuMemFreeAsync_ptsz $PROGS/linked_ptsz"
}

@test "fail: failing boundary calls and the unknown call return their results unchanged" {
    fail_all "cuStreamSynchronize $PROGS/scen boundary cuStreamSynchronize" \
        "cuStreamSynchronize_ptsz $PROGS/scen -l gpa-ptds boundary cuStreamSynchronize" \
        "cuEventRecord $PROGS/scen boundary cuEventRecord" \
        "cuCtxSynchronize $PROGS/scen boundary cuCtxSynchronize" \
        "cuStreamWaitEvent $PROGS/scen boundary cuStreamWaitEvent" \
        "cuMemcpyHtoDAsync_v2 $PROGS/scen boundary cuMemcpyHtoDAsync" \
        "cuMemcpyDtoHAsync_v2 $PROGS/scen boundary cuMemcpyDtoHAsync" \
        "cuLaunchHostFunc $PROGS/scen boundary cuLaunchHostFunc" \
        "cuFakeUnknownCall $PROGS/scen boundary cuFakeUnknownCall" \
        "cuStreamDestroy_v2 $PROGS/scen boundary cuStreamDestroy"
}

@test "fail: failing queries, including the ones tcfuse makes itself, change nothing" {
    fail_all "cuStreamIsCapturing $PROGS/scen query cuStreamIsCapturing" \
        "cuCtxGetDevice_v2 $PROGS/scen query cuCtxGetDevice_v2" \
        "cuDeviceGetAttribute $PROGS/scen query cuDeviceGetAttribute" \
        "cuOccupancyMaxActiveBlocksPerMultiprocessor $PROGS/scen query cuOccupancyMaxActiveBlocksPerMultiprocessor" \
        "cuDriverGetVersion $PROGS/scen query cuDriverGetVersion" \
        "cuKernelGetName $PROGS/scen query cuKernelGetName" \
        "cuKernelGetParamInfo $PROGS/scen query cuKernelGetParamInfo" \
        "cuCtxGetCurrent $PROGS/scen query cuCtxGetCurrent"
    # tcfuse's own introspection failing: the launches must still pass through intact.
    local sym
    for sym in cuKernelGetName cuKernelGetParamInfo cuFuncGetName cuFuncGetParamInfo \
        cuCtxGetCurrent; do
        FAKECUDA_FAIL=$sym compare_runs "introspect-$sym" "$PROGS/scen" launch
    done
}

@test "fail: failing loads and lookups return their results unchanged" {
    fail_all "cuInit $PROGS/scen windows" \
        "cuLibraryGetKernel $PROGS/scen windows" \
        "cuModuleGetFunction $PROGS/scen launch" \
        "cuDevicePrimaryCtxRetain $PROGS/scen windows" \
        "cuGetProcAddress_v2 $PROGS/scen windows" \
        "cuGetProcAddress $PROGS/scen -l gpa1 windows" \
        "cuGetProcAddress_v2 $PROGS/lookup v2" \
        "cuGetProcAddress $PROGS/lookup v1"
}

@test "fail: the trace records the driver's result of a failing launch" {
    FAKECUDA_FAIL=cuLaunchKernel TCFUSE_TRACE="$T/fail.trace" tcf trace "$PROGS/scen" windows
    trace_valid "$T/fail.trace"
    run python3 "$CHECK" events "$T/fail.trace" launch
    [ "${#lines[@]}" = 12 ]
    for l in "${lines[@]}"; do
        [[ "$l" == *'"rc":999'* ]] || { echo "launch not recorded with rc 999: $l"; return 1; }
    done
}
