#!/usr/bin/env bats
# Real traces recorded on an H100 (torch 2.11+cu130) by tests/gpu/run: the CPU-side tools
# must read them whole, and what they hold must be what the recording promised.

setup() {
    cd "$BATS_TEST_DIRNAME/../.."
    FIX=tests/fixtures
}

@test "fixtures: every recorded trace is valid version-1 JSON lines" {
    for f in $FIX/trace-gpt2.jsonl $FIX/trace-train.jsonl $FIX/trace-ops.jsonl $FIX/trace-launches.jsonl \
             $FIX/trace-hf-*.jsonl; do
        run python3 tests/bats/trace_check.py valid "$f"
        [ "$status" -eq 0 ] || { echo "$f: $output"; false; }
    done
}

@test "fixtures: every launch carries the parameter bytes its kernel's layout spans" {
    run python3 - "$FIX"/trace-gpt2.jsonl "$FIX"/trace-train.jsonl "$FIX"/trace-ops.jsonl \
        "$FIX"/trace-hf-*.jsonl <<'PY'
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
