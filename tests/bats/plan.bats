#!/usr/bin/env bats
# `tcfuse plan`: recorded windows through decoding and the planner.
#
# tests/fixtures/gelu-window.jsonl holds the hand-written tanh-GELU
# 0.5*x*(1+tanh(0.7978846*(x+0.044715*x**3))) on 2^20 floats in the trace format:
#   window 1: the 8 launches of "MARK manual_gelu" in torch-2.11-h100-single-ops.log, bytes
#             as recorded (the caching allocator: results reuse three blocks, no frees);
#   window 2: the same launches as a cudaMallocAsync run with deferred frees shows them:
#             each result in a block of its own, every temporary freed after its last use.
# Run from anywhere: `bats tests/bats/plan.bats` after `make build/tcfuse`.

load helpers

setup() {
    command_setup
    GELU="tests/fixtures/gelu-window.jsonl"
    SAMPLE="tests/fixtures/sample-observe.jsonl"
}

# The output without the generated source (another module's text, checked elsewhere).
plan_only() { grep -v '^    | ' "$T/out"; }

@test "plan: the recorded GELU window is one group of eight, stores overwritten dropped" {
    cat >"$T/want" <<'EOF'
trace tests/fixtures/gelu-window.jsonl
window 1: 8 launches, 8 ops decoded, 8 items
  group 0: items 0-7, 8 ops, n=1048576, 4 buffers, 6 scalars, vec 4, 5 stores dropped, 58720256 bytes avoided
    op 0 (item 0): MUL f32 n=1048576 in buf0 -> buf1
    op 1 (item 1): POW3 f32 n=1048576 in buf0 -> -
    op 2 (item 2): MUL f32 n=1048576 in op1 -> -
    op 3 (item 3): ADD f32 n=1048576 in buf0,op2 -> -
    op 4 (item 4): MUL f32 n=1048576 in op3 -> -
    op 5 (item 5): TANH f32 n=1048576 in op4 -> -
    op 6 (item 6): ADD f32 n=1048576 in op5 -> buf3
    op 7 (item 7): MUL f32 n=1048576 in op0,op6 -> buf2
  source of group 0:
  fused: 8 of 8 ops in 1 group
coverage by kernel family
  family                launches  decoded    fused  not decoded
  elementwise                  8        8        8
summary: 1 windows, 8 launches, 8 decoded, 8 fused, 1 groups, 5 stores dropped, 58720256 bytes avoided
EOF
    split "$TCFUSE" plan --window 1 "$GELU"
    [ "$status" -eq 0 ]
    plan_only | diff -u "$T/want" -
    [ ! -s "$T/err" ]
    # the generated kernel is printed under its group
    grep -q '^    | .*tcf_fused' "$T/out"
}

@test "plan: with visible frees only the final result is stored" {
    split "$TCFUSE" plan "$GELU"
    [ "$status" -eq 0 ]
    plan_only >"$T/plan"
    grep -qx '  group 0: items 1-20, 8 ops, n=1048576, 2 buffers, 6 scalars, vec 4, 7 stores dropped, 67108864 bytes avoided' "$T/plan"
    grep -qx '    op 0 (item 1): MUL f32 n=1048576 in buf0 -> -' "$T/plan"
    grep -qx '    op 7 (item 20): MUL f32 n=1048576 in op0,op6 -> buf1' "$T/plan"
    [ "$(tail -n 1 "$T/plan")" = "summary: 2 windows, 16 launches, 16 decoded, 16 fused, 2 groups, 12 stores dropped, 125829120 bytes avoided" ]
    # stable: the same text twice
    "$TCFUSE" plan "$GELU" | cmp - "$T/out"
}

@test "plan: the sample trace counts what was not decoded and not fused" {
    split "$TCFUSE" plan "$SAMPLE"
    [ "$status" -eq 0 ]
    plan_only >"$T/plan"
    # x.fill_(...), x += y, tanh(x): the fill's value feeds the add in registers, and the
    # add overwrites it in memory: its store is dropped
    grep -qx '  group 0: items 0-2, 3 ops, n=1024, 3 buffers, 2 scalars, vec 4, 1 stores dropped, 12288 bytes avoided' "$T/plan"
    grep -qx '    op 0 (item 0): FILL f32 n=1024 in - -> -' "$T/plan"
    grep -qx '    op 1 (item 1): ADD f32 n=1024 in op0,buf1 -> buf0' "$T/plan"
    grep -qx '    op 2 (item 2): TANH f32 n=1024 in op1 -> buf2' "$T/plan"
    grep -qx 'window 3: 2 launches, 1 ops decoded, 3 items' "$T/plan"
    grep -qx '  not decoded: 1 not-elementwise' "$T/plan"
    tail -n 3 "$T/plan" >"$T/tail"
    cat >"$T/want" <<'EOF'
summary: 7 windows, 14 launches, 12 decoded, 9 fused, 3 groups, 3 stores dropped, 36864 bytes avoided
  not decoded: 2 not-elementwise
  not fused: 3 alone
EOF
    diff -u "$T/want" "$T/tail"
}

@test "plan: HF Llama's RMSNorm (residual add, cast, square, mean, + eps, rsqrt, x * r, cast, weight *) is one row group" {
    split "$TCFUSE" plan --window 29 tests/fixtures/trace-hf-llama.jsonl
    [ "$status" -eq 0 ]
    plan_only >"$T/plan"
    cat >"$T/want" <<'EOF'
  group 0: items 2-10, 9 ops, n=16777216, 9 buffers, 3 scalars, vec 1, 1 stores dropped, 603979776 bytes avoided, rows 2048x8192, reduction op 3
    buf0 bf16 strides 2 4096
    buf1 bf16 strides 2 4096
    buf2 bf16 strides 2 4096
    buf3 f32 strides 4 8192
    buf4 f32 strides 4 8192
    buf5 f32 strides 0 4
    buf6 f32 strides 0 4
    buf7 f32 strides 0 4
    buf8 bf16 strides 2 0
    op 0 (item 2): ADD bf16 n=16777216 in buf0,buf1 -> buf2
    op 1 (item 3): CAST bf16->f32 n=16777216 in op0 -> buf3
    op 2 (item 4): POW2 f32 n=16777216 in op1 -> -
    op 3 (item 5): REDUCE MEAN f32 n=16777216 in op2 -> buf5
    op 4 (item 6): ADD (per row) f32 n=8192 in op3 -> buf6
    op 5 (item 7): RSQRT (per row) f32 n=8192 in op4 -> buf7
    op 6 (item 8): MUL f32 n=16777216 in op1,op5 -> buf4
    op 7 (item 9): CAST f32->bf16 n=16777216 in op6 -> buf0
    op 8 (item 10): MUL bf16 n=16777216 in buf8,op7 -> buf1
EOF
    grep -A 18 -x '  group 0: items 2-10, .*' "$T/plan" | diff -u "$T/want" -
    # its kernel is the mean's reduce_kernel (a block of 32x16: a row per warp), the square
    # its prologue, the per-row ops once a row, the broadcast consumers in a second pass
    grep -q '^    | extern "C" __global__ void __launch_bounds__(512) tcf_reduce(const tcf_rargs a) {$' "$T/out"
    grep -q '^    | __forceinline__ tcf_in tcf_pro(const tcf_rargs &a, const tcf_row &r, unsigned j) {$' "$T/out"
    # (four elements a step, their loads before their chains; the rest one at a time)
    grep -qxF '    |   for (; j0 + (TCF_RP - 1) * TCF_G < a.num_inputs; j0 += TCF_RP * TCF_G) {' "$T/out"
    grep -qxF '    |   for (unsigned j = j0; j < a.num_inputs; j += TCF_G) {' "$T/out"
    # the last norm's cast writes into the block of the float x it reads, through another
    # view: the row group ends before it, and the cast and weight * are an N-d group
    grep -Eq '^  group 5: items 40-41, 2 ops, .*vec 4.*space 2048x8192$' "$T/plan"
    # q * cos, rotate_half's cat and its `* sin` are one group, the negation of half of q
    # (item 18) stepped over, walked in the cat's order ([D, S, H, B]: q * cos, walked in
    # q's, turns), in packs of 8 (the cat splits D = 128 at 64: a pack picks one input);
    # k's sum and the KV cache's two cats one kernel
    grep -Eq '^  group 1: items 17-20, 3 ops, .*vec 8.*space 128x2048x16x4$' "$T/plan"
    grep -qx '    op 1 (item 19): CAT bf16 n=16777216 in buf3,buf4 -> buf5' "$T/plan"
    grep -Eq '^  group 3: items 26-28, 3 ops, .*vec 8.*space 128x2048x16x4$' "$T/plan"
}

@test "plan: --compile compiles each group for sm_90 (skipped without NVRTC)" {
    split "$TCFUSE" plan --compile "$GELU"
    if [ "$status" -ne 0 ] && grep -q 'NVRTC unavailable' "$T/err"; then
        skip "$(cat "$T/err")"
    fi
    cat "$T/err"
    [ "$status" -eq 0 ]
    grep -Eq '^nvrtc [0-9]+\.[0-9]+, sm_90$' "$T/out"
    [ "$(grep -Ec '^  cubin of group 0: [1-9][0-9]* bytes \(sm_90\)$' "$T/out")" -eq 2 ]
}

@test "plan: a missing NVRTC fails --compile with the reason" {
    TCFUSE_NVRTC=/nonexistent/libnvrtc.so split "$TCFUSE" plan --compile "$GELU"
    [ "$status" -eq 1 ]
    grep -q 'NVRTC unavailable' "$T/err"
}

@test "plan: usage errors, a missing file and an unknown window" {
    split "$TCFUSE" plan
    [ "$status" -eq 2 ]
    grep -q 'no trace file given' "$T/err"
    split "$TCFUSE" plan --window x "$GELU"
    [ "$status" -eq 2 ]
    split "$TCFUSE" plan --bogus "$GELU"
    [ "$status" -eq 2 ]
    split "$TCFUSE" plan "$T/nonexistent.jsonl"
    [ "$status" -eq 1 ]
    split "$TCFUSE" plan --window 9 "$GELU"
    [ "$status" -eq 1 ]
    grep -q 'no window 9' "$T/err"
    split "$TCFUSE" help plan
    [ "$status" -eq 0 ]
    grep -q '^usage: tcfuse plan \[--compile\] \[--window ID\] \[--time N\] FILE' "$T/out"
    "$TCFUSE" --help | grep -q '^  plan '
    split "$TCFUSE" plan --time 0 "$GELU"
    [ "$status" -eq 2 ]
    grep -q -- '--time wants a count from 1 to 1000000' "$T/err"
    split "$TCFUSE" plan --time
    [ "$status" -eq 2 ]
}

@test "plan: --time says what planning and binding cost, per window and in all, and plans the same" {
    split "$TCFUSE" plan "$GELU"
    [ "$status" -eq 0 ]
    cp "$T/out" "$T/plain"
    split "$TCFUSE" plan --time 50 "$GELU"
    [ "$status" -eq 0 ]
    # each window with launches gets its line, and the rest of the output is unchanged
    [ "$(grep -cE '^  planning: [0-9]+\.[0-9] us \(mean of 50\)$' "$T/out")" -eq 2 ]
    diff <(grep -v -e 'planning: ' -e '^binding: ' "$T/out") "$T/plain"
    # the total covers both windows' 16 launches
    grep -qE '^planning: 2 windows of 16 launches, [0-9]+\.[0-9] us a window, [0-9]+ ns a launch; the longest [0-9]+\.[0-9] us \(window [12]\)$' "$T/out"
    # and each of the plans' groups bound again (the hand GELU: one group a window)
    grep -qE '^binding: 2 groups, [0-9]+\.[0-9]{2} us a group$' "$T/out"
}

@test "plan: recorded program traces plan without failures (skipped when absent)" {
    local f any=0
    for f in tests/fixtures/trace-*.jsonl; do
        [ -f "$f" ] || continue
        any=1
        split "$TCFUSE" plan "$f"
        [ "$status" -eq 0 ]
        grep -q '^summary: ' "$T/out"
        ! grep -q 'error' "$T/out"
    done
    [ "$any" -eq 1 ] || skip "no tests/fixtures/trace-*.jsonl yet"
}

@test "plan: Llama's rotary embedding of q and k and the KV cache's cats are one kernel, the negations stepped over" {
    # recorded in fuse mode (frees visible), bench/programs/hf.py llama --layers 2
    split "$TCFUSE" plan --window 95 tests/fixtures/trace-hf-llama-fuse.jsonl
    [ "$status" -eq 0 ]
    # items 9 (q * cos), 13 (cat), 16 (* sin), 19 (their sum, which walks q's order: it
    # joins walked in the group's); k's the same (23-33), its sum stored only by the cache's
    # cat (39); the negations of half of q and of k run before the kernel
    grep -q '^  group 0: items 9-41, 10 ops, n=16777216, .*7 stores dropped' "$T/out"
    grep -q '^    op 0 (item 9): MUL bf16 ' "$T/out"
    grep -q '^    op 1 (item 13): CAT bf16 .* -> -$' "$T/out"
    grep -q '^    op 2 (item 16): MUL bf16 n=16777216 in op1,' "$T/out"
    grep -q '^    op 3 (item 19): ADD bf16 n=16777216 in op0,op2 -> buf' "$T/out"
    grep -q '^    op 7 (item 33): ADD bf16 n=16777216 in op4,op6 -> -$' "$T/out"
    grep -q '^    op 8 (item 39): CAT bf16 n=16777216 in op7 -> buf' "$T/out"
    grep -Eq '^  not fused: .*size-differs' "$T/out"
}

@test "plan: Llama's rotary tables (cat, cos, sin, scale, casts) fuse into one kernel; ops left out are listed" {
    split "$TCFUSE" plan --window 94 tests/fixtures/trace-hf-llama-fuse.jsonl
    [ "$status" -eq 0 ]
    # emb = cat(freqs, freqs); cos = emb.cos() * scale; sin = emb.sin() * scale; both to bf16
    grep -q '^  group 0: items 7-21, 7 ops, n=262144, 4 buffers, .*5 stores dropped' "$T/out"
    grep -q '^    op 1 (item 9): COS f32 n=262144 in op0 -> -$' "$T/out"
    grep -q '^    op 3 (item 14): SIN f32 n=262144 in op0 -> -$' "$T/out"
    grep -q '^    op 6 (item 21): CAST f32->bf16 n=262144 in op4 -> buf3$' "$T/out"
    # the one decoded op no group holds, named with its item
    grep -qx '  as issued: item 1 (alone): CAST bf16->f32 n=64' "$T/out"
    [ "$(grep -c '^  as issued: ' "$T/out")" -eq 1 ]
    # over the whole trace: at least 80% of the elementwise, strided, copy, cat and reduce
    # launches are fused (265 of 328 when this was written)
    split "$TCFUSE" plan tests/fixtures/trace-hf-llama-fuse.jsonl
    [ "$status" -eq 0 ]
    awk '$1 ~ /^(elementwise|elementwise-strided|copy-cast|cat|reduce)$/ { l += $2; f += $4 }
         END { printf "%d of %d fused\n", f, l; exit !(l > 0 && f * 5 >= l * 4) }' "$T/out"
}
