#!/usr/bin/env bats
# `tcfuse reduce`: the recorded reduce_kernel launches through the row-reduction decoder and
# the code generator. tests/fixtures/trace-ops.jsonl holds 54 of them (x.sum(), mean, amax
# of 1, 127 and 1000003 elements, A.sum(1) and A.sum(0) of a [127, 1000] A, A.sum(), in
# float, half and bfloat16). Run from anywhere: `bats tests/bats/reduce.bats` after `make`.

load helpers

setup() {
    command_setup
    OPS="tests/fixtures/trace-ops.jsonl"
}

@test "reduce: every recorded launch decodes or is refused by its reason" {
    split "$TCFUSE" reduce "$OPS"
    [ "$status" -eq 0 ]
    [ ! -s "$T/err" ]
    [ "$(tail -n 1 "$T/out")" = "summary: 54 reduce_kernel launches, 33 decoded, 12 reduce-global, 9 reduce-outer-dim" ]
    [ "$(grep -c '^reduce [0-9]*: ' "$T/out")" -eq 54 ]
    # A.sum(1) of a float [127, 1000]: 8 blocks of (32, 16), a row per warp-row, 4-float loads
    grep -Eq '^reduce 12: ok op=SUM root=0 in=f32 out=f32 acc=f32 K=1000 M=127 bw=32 bh=16 vec=1 ivs=4 vt0=4 split_y=0 shift=0 grid=8,1,1 smem=0 factor=0x00000000 odims=1 rows=127:4:4000 src=0x7ff1f5c00000 dst=0x7ff1f5da1800$' "$T/out"
    # half amax of 127 elements: arg_t half, 64 threads
    grep -Eq '^reduce 25: ok op=AMAX root=0 in=f16 out=f16 acc=f16 K=127 M=1 bw=64 bh=1 vec=0 ivs=4 vt0=4 split_y=0 shift=0 grid=1,1,1 smem=128 ' "$T/out"
    # x.mean() of 127 floats: the factor the launch carries, fl(1)/fl(127)
    grep -Eq '^reduce 6: ok op=MEAN .* factor=0x3c010204 ' "$T/out"
    # a sum of 127000 elements in one block: 512 lanes, warps sharing the row
    grep -Eq '^reduce 16: ok op=SUM .* K=127000 M=1 bw=512 bh=1 vec=1 .* split_y=1 ' "$T/out"
    # x.sum() of 1000003: 123 blocks per output; A.sum(0): lanes take outputs
    # (a refusal after the name says where the launch reads and writes; one by the name cannot)
    grep -q '^reduce 8: reduce-global grid=1,123,1 block=512,1,1 src=0x7ff1f6a00000 dst=0x7ff1f5de8800 at::native::reduce_kernel<512, 1, ReduceOp<float, ' "$T/out"
    grep -q '^reduce 13: reduce-outer-dim grid=8,1,1 block=32,4,1 at::native::reduce_kernel<128, 4, ' "$T/out"
    # stable: the same text twice
    "$TCFUSE" reduce "$OPS" | cmp - "$T/out"
}

@test "reduce: the real models' traces (Llama forward: the RMSNorm means)" {
    split "$TCFUSE" reduce tests/fixtures/trace-hf-llama.jsonl
    [ "$status" -eq 0 ]
    [ "$(tail -n 1 "$T/out")" = "summary: 10 reduce_kernel launches, 10 decoded" ]
    [ "$(grep -c '^reduce [0-9]*: ok op=MEAN root=0 in=f32 out=f32 acc=f32 K=2048 M=8192 bw=32 bh=16 vec=1 ivs=4 vt0=4 split_y=0 shift=0 grid=512,1,1 smem=0 factor=0x3a000000 odims=1 rows=8192:4:8192 ' "$T/out")" -eq 10 ]
    split "$TCFUSE" reduce tests/fixtures/trace-hf-llama-train.jsonl
    [ "$status" -eq 0 ]
    [ "$(tail -n 1 "$T/out")" = "summary: 30 reduce_kernel launches, 20 decoded, 10 reduce-outer-dim" ]
    split "$TCFUSE" reduce tests/fixtures/trace-train.jsonl
    [ "$status" -eq 0 ]
    grep -Eq '^reduce 9: ok op=NORM2 root=1 in=f32 out=f32 acc=f32 K=28 M=1 bw=16 ' "$T/out"
}

@test "reduce: --source prints the generated kernel of one launch" {
    split "$TCFUSE" reduce --source --launch 12 "$OPS"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^reduce ' "$T/out")" -eq 1 ]
    grep -q '^reduce 12: ok op=SUM ' "$T/out"
    grep -q '^    | /\* tcfuse reduce 1: SUM float->float acc float, block 32x16, vec 4, a row per warp-row, 1 row dims \*/$' "$T/out"
    grep -q '^    | extern "C" __global__ void __launch_bounds__(512) tcf_reduce(const tcf_rargs a) {$' "$T/out"
    [ "$(tail -n 1 "$T/out")" = "summary: 1 reduce_kernel launches, 1 decoded" ]
    # a refused launch prints no source
    split "$TCFUSE" reduce --source --launch 8 "$OPS"
    [ "$status" -eq 0 ]
    ! grep -q '^    | ' "$T/out"
}

@test "reduce: spliced code lands in the kernel" {
    printf '  return (tcf_in)0.5f;\n' >"$T/pro"
    printf '  /* ROW PASS %%u */ (void)g;\n' >"$T/row"
    split "$TCFUSE" reduce --source --launch 12 --prologue "$T/pro" --row-pass "$T/row" "$OPS"
    [ "$status" -eq 0 ]
    grep -q '^    |   return (tcf_in)0.5f;$' "$T/out"
    grep -q '^    |   /\* ROW PASS %u \*/ (void)g;$' "$T/out"
    grep -q 'tcf_rowpass(a, r, g, rv\[ty\]);' "$T/out"
    split "$TCFUSE" reduce --prologue "$T/nonexistent" "$OPS"
    [ "$status" -eq 1 ]
    grep -q 'nonexistent' "$T/err"
}

@test "reduce: --emit writes each distinct kernel, its cubin and the launch (skipped without NVRTC)" {
    split "$TCFUSE" reduce --emit "$T" "$OPS"
    if [ "$status" -ne 0 ] && grep -q 'NVRTC unavailable' "$T/err"; then
        skip "$(cat "$T/err")"
    fi
    cat "$T/err"
    [ "$status" -eq 0 ]
    grep -Eq '^kernels: 24 distinct, written to .* \(sm_90, NVRTC [0-9]+\.[0-9]+\)$' "$T/out"
    [ -s "$T/r0.cu" ] && [ -s "$T/r0.cubin" ] && [ -s "$T/r23.cubin" ] && [ ! -e "$T/r24.cu" ]
    # each decoded launch names its kernel, the launch of it and its 224-byte argument,
    # src and dst first (the launch's own pointers)
    [ "$(grep -c ' kernel=r[0-9]* lgrid=[0-9]*,1,1 lblock=[0-9]*,[0-9]*,1 args=[0-9a-f]\{448\}$' "$T/out")" -eq 33 ]
    grep -q '^reduce 12: ok .* dst=0x7ff1f5da1800 kernel=r[0-9]* lgrid=8,1,1 lblock=32,16,1 args=0000c0f5f17f00000018daf5f17f0000e80300007f000000' "$T/out"
    # a kernel that does not compile: said at each launch, NVRTC's log once, exit 1
    printf '  return not C++;\n' >"$T/pro"
    mkdir "$T/bad"
    split "$TCFUSE" reduce --emit "$T/bad" --jobs 2 --prologue "$T/pro" "$OPS"
    [ "$status" -eq 1 ]
    [ "$(grep -c '^reduce [0-9]*: ok .* error=compile kernel=r[0-9]*$' "$T/out")" -eq 33 ]
    grep -q '^    ! .*error' "$T/out"
}

@test "reduce: usage errors and a missing file" {
    split "$TCFUSE" reduce
    [ "$status" -eq 2 ]
    grep -q 'no trace file given' "$T/err"
    split "$TCFUSE" reduce --arch 7 "$OPS"
    [ "$status" -eq 2 ]
    split "$TCFUSE" reduce --launch x "$OPS"
    [ "$status" -eq 2 ]
    split "$TCFUSE" reduce --bogus "$OPS"
    [ "$status" -eq 2 ]
    split "$TCFUSE" reduce "$T/nonexistent.jsonl"
    [ "$status" -eq 1 ]
    split "$TCFUSE" help reduce
    [ "$status" -eq 0 ]
    grep -q '^usage: tcfuse reduce \[options\] FILE' "$T/out"
    "$TCFUSE" --help | grep -q '^  reduce '
}
