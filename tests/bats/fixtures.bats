#!/usr/bin/env bats
# Real traces recorded on an H100 (torch 2.11+cu130) by tests/gpu/run, bench/programs/census
# and bench/programs/trace: the CPU-side tools must read them whole, and what they hold must
# be what the recording promised.

setup() {
    cd "$BATS_TEST_DIRNAME/../.."
    FIX=tests/fixtures
    # The programs that are not Python PyTorch (bench/programs/trace): ResNet-50 is
    # torchvision's, the rest are other hosts: libtorch from C++, JAX, plain CUDA C.
    PROGRAMS=("$FIX"/trace-resnet50.jsonl "$FIX"/trace-libtorch.jsonl "$FIX"/trace-jax.jsonl
              "$FIX"/trace-smallk.jsonl)
}

# family NAME: "launches decoded fused" of that row of the report's coverage table.
family() {
    sed -n '/^coverage by kernel family/,/^$/p' <<<"$output" | awk -v f="$1" '$1 == f { print $2, $3, $4 }'
}

@test "fixtures: every recorded trace is valid version-1 JSON lines" {
    for f in $FIX/trace-gpt2.jsonl $FIX/trace-train.jsonl $FIX/trace-ops.jsonl $FIX/trace-launches.jsonl \
             $FIX/trace-hf-*.jsonl "${PROGRAMS[@]}"; do
        run python3 tests/bats/trace_check.py valid "$f"
        [ "$status" -eq 0 ] || { echo "$f: $output"; false; }
    done
}

@test "fixtures: every launch carries the parameter bytes its kernel's layout spans" {
    run python3 - "$FIX"/trace-gpt2.jsonl "$FIX"/trace-train.jsonl "$FIX"/trace-ops.jsonl \
        "$FIX"/trace-hf-*.jsonl "${PROGRAMS[@]}" <<'PY'
import json, sys
bad = total = 0
for path in sys.argv[1:]:
    kernels = {}
    for line in open(path):
        e = json.loads(line)
        if e.get("ev") == "kernel":
            kernels[e["id"]] = max([o + s for o, s in e["params"]] or [0])
        elif e.get("ev") == "launch":
            total += 1
            if len(e["params"]) // 2 < kernels[e["k"]]:
                bad += 1
print(total, bad)
sys.exit(1 if bad or total < 1000 else 0)
PY
    [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "fixtures: report reads the GPT-2 trace: 799 launches, cuBLAS and PyTorch kernels" {
    run build/tcfuse report $FIX/trace-gpt2.jsonl
    [ "$status" -eq 0 ]
    [[ "$output" == *"launches        799"* ]]
    [[ "$output" == *"0 malformed"* ]]
    [[ "$output" == *"CUDAFunctor_add<float>"* ]]
    [[ "$output" == *"tanh_kernel_cuda"* ]]
    [[ "$output" == *"cuMemcpyHtoDAsync"* ]]
}

@test "fixtures: report --chrome writes a timeline for the training trace" {
    out=$BATS_TEST_TMPDIR/train.json
    run build/tcfuse report --chrome "$out" $FIX/trace-train.jsonl
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d["traceEvents"]) > 500 else 1)' "$out"
}

@test "fixtures: the training trace saw device copies and cuBLAS launches via cuLaunchKernelEx" {
    grep -q '"via":"cuLaunchKernelEx"' $FIX/trace-train.jsonl
    grep -q '"ev":"memcpy"' $FIX/trace-train.jsonl
}

@test "fixtures: the HF programs' traces (bench/programs/census) hold the kernels real models run" {
    # Llama: strided/broadcast elementwise loops (RMSNorm's broadcast multiply, rotary
    # embedding), casts and copies, cat, a mean reduction; the training step: foreach AdamW.
    grep -q 'elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocast' $FIX/trace-hf-llama.jsonl
    grep -q 'direct_copy_kernel_cuda' $FIX/trace-hf-llama.jsonl
    grep -q 'bfloat16_copy_kernel_cuda' $FIX/trace-hf-llama.jsonl
    grep -q 'CatArrayBatchedCopy' $FIX/trace-hf-llama.jsonl
    grep -q 'reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOps' $FIX/trace-hf-llama.jsonl
    grep -q 'multi_tensor_apply_kernel' $FIX/trace-hf-llama-train.jsonl
    for m in llama gpt2 gpt2-b16 bert llama-train; do
        run build/tcfuse report $FIX/trace-hf-$m.jsonl
        [ "$status" -eq 0 ] || { echo "$m: $output"; false; }
    done
}

@test "fixtures: ResNet-50 (bf16, channels-last): every contiguous elementwise launch decodes; add + ReLU chains fuse" {
    run build/tcfuse report $FIX/trace-resnet50.jsonl
    [ "$status" -eq 0 ]
    [[ "$output" == *"0 malformed"* ]]
    [[ "$output" == *"batch_norm_transform_input_channels_last_kernel<BFloat16"* ]]
    [[ "$output" == *"launch_clamp_scalar"* ]]           # ReLU(inplace=True)
    [[ "$output" == *"CUDAFunctor_add<BFloat16>"* ]]     # the residual add
    [[ "$output" == *"fprop_implicit_gemm"*"cudnn"* ]]   # the convolutions: cuDNN's
    read -r n d f <<<"$(family elementwise)"
    [ "$n" -eq 130 ] && [ "$d" -eq 130 ] && [ "$f" -gt 0 ]
    read -r n d f <<<"$(family norm)"
    [ "$n" -eq 212 ] && [ "$d" -eq 0 ]
    run build/tcfuse plan $FIX/trace-resnet50.jsonl
    [ "$status" -eq 0 ]
    [[ "$(tail -n 3 <<<"$output")" =~ summary:\ 80\ windows,\ 585\ launches,\ [0-9]+\ decoded,\ [1-9][0-9]*\ fused ]]
}

@test "fixtures: a C++ binary linking libtorch launches PyTorch's kernels, and they decode as from Python" {
    head -n 1 $FIX/trace-libtorch.jsonl | grep -q '"argv0":"libtorch_block"'
    run build/tcfuse report $FIX/trace-libtorch.jsonl
    [ "$status" -eq 0 ]
    [[ "$output" == *"0 malformed"* ]]
    [[ "$output" == *"GeluCUDAKernelImpl"* ]]
    [[ "$output" == *"vectorized_layer_norm_kernel<float, float, false>"* ]]
    [[ "$output" == *"softmax_warp_forward"* ]]
    read -r n d f <<<"$(family elementwise)"
    [ "$n" -eq 32 ] && [ "$d" -eq 32 ]
    read -r n d f <<<"$(family gemm)"
    [ "$n" -eq 64 ] && [ "$d" -eq 0 ]
}

@test "fixtures: JAX op by op: XLA's kernels, none taken for PyTorch's; windows cut at XLA's event records" {
    run build/tcfuse report $FIX/trace-jax.jsonl
    [ "$status" -eq 0 ]
    [[ "$output" == *"0 malformed"* ]]
    [[ "$output" == *"loop_add_fusion"* ]]
    [[ "$output" == *"gemm_fusion_dot"* ]]
    [[ "$output" == *"RedzoneAllocatorKernelImpl"* ]]    # XLA's GEMM autotuner at work
    sed -n '/^boundary reasons/,/^$/p' <<<"$output" | sed -n 3p | grep -q 'cuEventRecord$'
    run build/tcfuse plan $FIX/trace-jax.jsonl
    [ "$status" -eq 0 ]
    [[ "$output" == *"summary: 648 windows, 674 launches, 0 decoded, 0 fused"* ]]
}

@test "fixtures: plain CUDA C (bench/programs/smallk.cu): its own kernels, none taken for PyTorch's" {
    head -n 1 $FIX/trace-smallk.jsonl | grep -q '"argv0":"smallk"'
    grep -q '"name":"_Z5axpbyPfPKfffi"' $FIX/trace-smallk.jsonl
    run build/tcfuse report $FIX/trace-smallk.jsonl
    [ "$status" -eq 0 ]
    [[ "$output" == *"0 malformed"* ]]
    [[ "$output" == *"mix3"* ]]
    read -r n d f <<<"$(family other)"
    [ "$n" -eq 606 ] && [ "$d" -eq 0 ]
    run build/tcfuse plan $FIX/trace-smallk.jsonl
    [ "$status" -eq 0 ]
    [[ "$output" == *"summary: 5 windows, 606 launches, 0 decoded, 0 fused"* ]]
}
