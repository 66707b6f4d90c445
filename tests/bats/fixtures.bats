#!/usr/bin/env bats
# Real traces recorded on an H100 (torch 2.11+cu130) by tests/gpu/run: the CPU-side tools
# must read them whole, and what they hold must be what the recording promised.

setup() {
    cd "$BATS_TEST_DIRNAME/../.."
    FIX=tests/fixtures
}

@test "fixtures: every recorded trace is valid version-1 JSON lines" {
    for f in $FIX/trace-gpt2.jsonl $FIX/trace-train.jsonl $FIX/trace-ops.jsonl $FIX/trace-launches.jsonl; do
        run python3 tests/bats/trace_check.py valid "$f"
        [ "$status" -eq 0 ] || { echo "$f: $output"; false; }
    done
}

@test "fixtures: every launch carries the parameter bytes its kernel's layout spans" {
    run python3 - "$FIX"/trace-gpt2.jsonl "$FIX"/trace-train.jsonl "$FIX"/trace-ops.jsonl <<'PY'
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
