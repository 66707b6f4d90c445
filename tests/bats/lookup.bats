#!/usr/bin/env bats
# Entry points by every version and flag: the stub's cuGetProcAddress follows the real
# driver's rules (tests/stub/fakecuda_proc.c); through tcfuse every lookup returns the same
# result and status, and every pointer reaches the same variant when called; harmless
# queries come back as the driver's own pointer, everything else as tcfuse's.

load helpers

# ident_of FILE BASE@VER FLAGS: the "is=" of that lookup in a `lookup ident` output.
ident_of() {
    grep -F "ident $2 flags=$3: " "$1" | sed -E 's/.* is=([^ ]+)$/\1/'
}
result_of() {
    grep -F "ident $2 flags=$3: " "$1" | sed -E 's/^[^:]*: (rc=[0-9]+ status=[0-9]+ fn=[a-z]+).*/\1/'
}

@test "stub: cuGetProcAddress picks variants by version and flag like the driver" {
    base ident "$PROGS/lookup" ident
    [ "$status" = 0 ]
    local f="$T/ident.out" want got line
    while read -r line; do
        set -- $line
        got="$(ident_of "$f" "$1" "$2")"
        [ "$got" = "$3" ] || { echo "$1 flags=$2: got $got, want $3"; return 1; }
    done <<'TABLE'
cuLaunchKernel@4000 0 cuLaunchKernel
cuLaunchKernel@4000 2 cuLaunchKernel
cuLaunchKernel@7000 1 cuLaunchKernel
cuLaunchKernel@7000 2 cuLaunchKernel_ptsz
cuLaunchKernel@13000 0 cuLaunchKernel
cuLaunchKernel@13000 2 cuLaunchKernel_ptsz
cuLaunchKernelEx@11060 2 cuLaunchKernelEx_ptsz
cuMemAlloc@2000 0 cuMemAlloc
cuMemAlloc@3020 0 cuMemAlloc_v2
cuMemAlloc@13000 2 cuMemAlloc_v2
cuMemFree@2000 1 cuMemFree
cuMemFree@13000 0 cuMemFree_v2
cuMemAllocAsync@11020 2 cuMemAllocAsync_ptsz
cuMemAllocAsync@13000 1 cuMemAllocAsync
cuMemcpyDtoDAsync@3000 2 cuMemcpyDtoDAsync
cuMemcpyDtoDAsync@3020 2 cuMemcpyDtoDAsync_v2
cuMemcpyDtoDAsync@7000 2 cuMemcpyDtoDAsync_v2_ptsz
cuMemsetD8Async@3020 2 cuMemsetD8Async
cuMemsetD8Async@7000 2 cuMemsetD8Async_ptsz
cuStreamSynchronize@2000 2 cuStreamSynchronize
cuStreamSynchronize@7000 2 cuStreamSynchronize_ptsz
cuCtxGetDevice@2000 0 cuCtxGetDevice
cuCtxGetDevice@13000 0 cuCtxGetDevice_v2
cuCtxSynchronize@13000 2 cuCtxSynchronize_v2
cuGetProcAddress@11030 0 cuGetProcAddress
cuGetProcAddress@12000 0 cuGetProcAddress_v2
cuFakeUnknownCall@2000 0 cuFakeUnknownCall
TABLE
    [ "$(result_of "$f" cuLaunchKernel@3020 0)" = "rc=500 status=2 fn=null" ]
    [ "$(result_of "$f" cuMemAlloc@1000 2)" = "rc=500 status=2 fn=null" ]
    [ "$(result_of "$f" cuGetProcAddress@11020 0)" = "rc=500 status=2 fn=null" ]
    [ "$(result_of "$f" cuNoSuchCall@13000 0)" = "rc=500 status=1 fn=null" ]
    [ "$(result_of "$f" cuMemAlloc_v2@13000 0)" = "rc=500 status=1 fn=null" ]
    [ "$(result_of "$f" cuLaunchKernel@13000 4)" = "rc=1 status=1 fn=null" ]
    # Every pointer handed out is one of the stub's exports, and each call through it works.
    ! grep -E 'fn=set is=-$' "$f"
    ! grep -E '^  call rc=[1-9]' "$f"
}

@test "tcfuse: lookups by every version and flag return the same and reach the same variant" {
    local mode failed=0
    for mode in v2 v1 self dlsym; do
        compare_runs "lookup-$mode" "$PROGS/lookup" "$mode" || { echo "differs: lookup $mode"; failed=1; }
    done
    [ "$failed" = 0 ]
}

@test "tcfuse: harmless queries come back as the driver's pointer, the rest wrapped" {
    base ident.base "$PROGS/lookup" ident
    tcf ident.tcf "$PROGS/lookup" ident
    local f="$T/ident.tcf.out" b="$T/ident.base.out" line sym flags got
    for sym in cuCtxGetDevice@2000 cuCtxGetDevice@13000 cuCtxGetCurrent@4000 \
        cuDriverGetVersion@2020 cuDeviceGetAttribute@2000 cuStreamIsCapturing@10000 \
        cuOccupancyMaxActiveBlocksPerMultiprocessor@6050; do
        for flags in 0 1 2; do
            got="$(ident_of "$f" "$sym" "$flags")"
            [ "$got" = "$(ident_of "$b" "$sym" "$flags")" ] ||
                { echo "$sym flags=$flags: tcfuse handed out $got, not the driver's pointer"; return 1; }
        done
    done
    for sym in cuLaunchKernel@13000 cuLaunchKernelEx@13000 cuMemAlloc@2000 cuMemAlloc@13000 \
        cuMemFree@13000 cuMemAllocAsync@13000 cuMemFreeAsync@13000 \
        cuMemAllocFromPoolAsync@11020 cuMemsetD8Async@7000 cuMemsetD32Async@13000 \
        cuMemcpyDtoDAsync@3000 cuMemcpyDtoDAsync@13000 cuMemcpyHtoDAsync@7000 \
        cuMemcpyDtoHAsync@7000 cuStreamSynchronize@7000 cuStreamQuery@7000 \
        cuStreamWaitEvent@7000 cuEventRecord@7000 cuEventSynchronize@2000 \
        cuLaunchHostFunc@10000 cuCtxSynchronize@2000 cuCtxSynchronize@13000 \
        cuFakeUnknownCall@2000 cuGetProcAddress@12000; do
        for flags in 0 1 2; do
            got="$(ident_of "$f" "$sym" "$flags")"
            [ "$got" = "-" ] ||
                { echo "$sym flags=$flags: tcfuse handed out the driver's $got unwrapped"; return 1; }
        done
    done
    # Lookups that fail fail the same way (no pointer invented).
    diff <(grep 'fn=null' "$b" | sed 's/ is=.*//') <(grep 'fn=null' "$f" | sed 's/ is=.*//')
}

@test "tcfuse: dlsym of a name the driver lacks gives NULL, through tcfuse too" {
    tcf dl "$PROGS/lookup" dlsym
    grep -qx 'dlsym cuNoSuchCall: null' "$T/dl.out"
    grep -qx 'dlsym cuFakeUnknownCall: set' "$T/dl.out"
}
