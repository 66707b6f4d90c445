#!/usr/bin/env bats
# The tcfuse command: `report` (text and --chrome) on the hand-written trace
# tests/fixtures/sample-observe.jsonl, help/version/usage exit codes, and `run`
# (LD_PRELOAD, the TCFUSE_* variables, exit codes when the command or the library is
# missing). Run from anywhere: `bats tests/bats/report.bats` after `make all`.

load helpers

setup() {
    command_setup
    FIX="tests/fixtures/sample-observe.jsonl"
}

need_lib() { [ -f "$LIB" ] || skip "no $LIB (make build/libtcfuse.so)"; }

# --- report -----------------------------------------------------------------------------

@test "report: the sample trace summarizes to exactly this text" {
    cat >"$T/want" <<'EOF'
trace tests/fixtures/sample-observe.jsonl
  written by tcfuse 0.1.0, pid 4242, mode observe, argv0 python3
  complete, 0 events dropped
  32 lines, 0 malformed, 0 unknown events

totals
  launches         14
  kernels           4  (4 distinct names)
  windows           7
  allocs            2
  frees             1
  memsets           1
  memcpys           1

top kernels by launches
   launches   share  kernel
          6   42.9%  at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3>>
          3   21.4%  at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1>>
          3   21.4%  at::native::vectorized_elementwise_kernel<4, tanh_kernel_cuda::{lambda}, array<char*, 2>>
          2   14.3%  ampere_sgemm_32x32_sliced1x4_nn

windows
  count 7, launches per window: min 0, median 2, max 3
     launches  windows
            0        1  ########
            1        1  ########
          2-3        5  ########################################

repeated windows
  4 distinct keys in 7 windows; 2 keys seen more than once cover 5 windows (71.4%)
  windows  key                 launches  kernels of one window
        3  0x9e3779b97f4a7c15         3  at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1>>
                                         at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3>>
                                         at::native::vectorized_elementwise_kernel<4, tanh_kernel_cuda::{lambda}, array<char*, 2>>
        2  0x00000000deadbeef         2  ampere_sgemm_32x32_sliced1x4_nn
                                         at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3>>

boundary reasons
  windows   share  reason
        2   28.6%  cuEventRecord
                1  at libtorch_cuda.so+0x8800 at::cuda::CUDAEvent::record(c10::cuda::CUDAStream const&)
        2   28.6%  cuStreamSynchronize
                1  at libc10_cuda.so+0x2f00 c10::cuda::device_synchronize()
                1  at libtorch_cuda.so+0x4c10 at::native::_local_scalar_dense_cuda(at::Tensor const&)
        1   14.3%  cuStreamWaitEvent
        1   14.3%  exit
        1   14.3%  idle
  (call sites from 3 windows with a backtrace; top 3 per reason)

coverage by kernel family
  family                launches  decoded    fused  not decoded
  elementwise                 12       12        9
  gemm                         2        0        0  2 not-elementwise
kernels left as issued (most such launches first)
    left  launches  decoded    fused  most left by       kernel
       3         6        6        3  alone              at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3>>
       2         2        0        0  not-elementwise    ampere_sgemm_32x32_sliced1x4_nn
EOF
    split "$TCFUSE" report "$FIX"
    [ "$status" -eq 0 ]
    diff -u "$T/want" "$T/out"
    [ ! -s "$T/err" ]
}

@test "report: the same output twice, and from stdin" {
    "$TCFUSE" report "$FIX" >"$T/a"
    "$TCFUSE" report "$FIX" >"$T/b"
    cmp "$T/a" "$T/b"
    "$TCFUSE" report - <"$FIX" | sed '1s/^trace -$/trace tests\/fixtures\/sample-observe.jsonl/' >"$T/c"
    # stdin cannot be read a second time for the coverage table: all the rest is the same
    sed '/^coverage by kernel family$/,$d' "$T/a" | sed '$d' >"$T/a2"
    diff -u "$T/a2" "$T/c"
}

@test "report: malformed, unknown, blank and truncated lines are counted and skipped" {
    {
        cat "$FIX"
        echo 'not json at all'
        echo '{"ev":"hologram","t":1}'
        echo ''
        echo '{"ev":"launch","t":5,"win":9,"k":0,"grid":[1,1,1],"block":[1,1,1],"params":"zz"}'
        printf '{"ev":"launch","t":5,"win":9,"k":0,"gri'
    } >"$T/messy.jsonl"
    split "$TCFUSE" report "$T/messy.jsonl"
    [ "$status" -eq 0 ]
    grep -qx '  37 lines, 3 malformed, 1 unknown events' "$T/out"
    grep -qx '  launches         14' "$T/out"
    grep -q '3 malformed lines skipped' "$T/err"
    # everything below the header block is unchanged
    "$TCFUSE" report "$FIX" | sed 1,4d >"$T/want"
    sed 1,4d "$T/out" >"$T/got"
    diff -u "$T/want" "$T/got"
}

@test "report: a trace cut short says so" {
    head -n 20 "$FIX" >"$T/cut.jsonl"
    split "$TCFUSE" report "$T/cut.jsonl"
    [ "$status" -eq 0 ]
    grep -q 'incomplete: no end line' "$T/out"
}

@test "report: --top limits the tables" {
    split "$TCFUSE" report --top 1 "$FIX"
    [ "$status" -eq 0 ]
    sed -n '/^top kernels/,/^$/p' "$T/out" >"$T/kern"
    [ "$(grep -c '%' "$T/kern")" -eq 1 ]
    grep -q '(3 more kernels)' "$T/kern"
    grep -q '(1 more keys)' "$T/out"
}

@test "report: bad usage exits 2, an unreadable or foreign file exits 1" {
    split "$TCFUSE" report
    [ "$status" -eq 2 ]
    grep -q 'no trace file given' "$T/err"
    split "$TCFUSE" report "$FIX" "$FIX"
    [ "$status" -eq 2 ]
    split "$TCFUSE" report --top zero "$FIX"
    [ "$status" -eq 2 ]
    split "$TCFUSE" report --frobnicate "$FIX"
    [ "$status" -eq 2 ]
    split "$TCFUSE" report "$T/does-not-exist.jsonl"
    [ "$status" -eq 1 ]
    grep -q 'No such file' "$T/err"
    printf 'hello\nworld\n' >"$T/foreign.txt"
    split "$TCFUSE" report "$T/foreign.txt"
    [ "$status" -eq 1 ]
    grep -q 'not a tcfuse trace' "$T/err"
}

# --- report --chrome --------------------------------------------------------------------

@test "report --chrome: valid JSON with one event per launch, op and window" {
    split "$TCFUSE" report --chrome "$T/trace.json" "$FIX"
    [ "$status" -eq 0 ]
    grep -q 'wrote 28 events' "$T/out"
    python3 -m json.tool "$T/trace.json" >/dev/null
    # 1 process name + 2 streams x (name, sort index) + 14 launches + 1 memset + 1 memcpy
    # + 7 windows
    python3 - "$T/trace.json" <<'EOF'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
assert len(ev) == 28, len(ev)
cats = collections.Counter(e["cat"] for e in ev)
assert cats == {"launch": 14, "window": 7, "__metadata": 5, "memset": 1, "memcpy": 1}, cats
names = sorted(e["args"]["name"] for e in ev if e["name"] == "thread_name")
assert names == ["stream 0x55e0a0001000", "stream 0x55e0a0002000"], names
assert all(e["pid"] == 4242 for e in ev)
# windows span their first to last event, on their stream's track, and hold their launches
win = {e["args"]["id"]: e for e in ev if e["cat"] == "window"}
assert win[1]["ph"] == "X" and win[1]["ts"] == 1000100.0 and win[1]["dur"] == 10.0, win[1]
assert win[3]["ts"] == 1000250.0 and win[3]["dur"] == 20.0, win[3]  # from its alloc
assert win[7]["ts"] == 1000800.0 and win[7]["dur"] == 0.0, win[7]   # a free only
for e in ev:
    if e["cat"] == "launch":
        w = win[e["args"]["win"]]
        assert e["ph"] == "i" and e["tid"] == w["tid"], e
        assert w["ts"] <= e["ts"] <= w["ts"] + w["dur"], (e, w)
gemm = [e for e in ev if e["name"] == "ampere_sgemm_32x32_sliced1x4_nn"]
assert len(gemm) == 2 and gemm[0]["args"]["grid"] == [8, 8, 1], gemm
assert gemm[0]["args"]["block"] == [128, 1, 1] and gemm[0]["args"]["smem"] == 16384, gemm
EOF
}

@test "report --chrome: to stdout, and a foreign file fails without leaving output" {
    "$TCFUSE" report --chrome - "$FIX" | python3 -m json.tool >/dev/null
    printf 'hello\n' >"$T/foreign.txt"
    split "$TCFUSE" report --chrome "$T/x.json" "$T/foreign.txt"
    [ "$status" -eq 1 ]
    [ ! -e "$T/x.json" ]
}

# --- help, version, usage ---------------------------------------------------------------

@test "help and version" {
    split "$TCFUSE" --help
    [ "$status" -eq 0 ]
    grep -q '^usage: tcfuse' "$T/out"
    for c in run report config; do grep -q "^  $c" "$T/out"; done
    split "$TCFUSE" help run
    [ "$status" -eq 0 ]
    grep -q -- '--trace FILE' "$T/out"
    split "$TCFUSE" help report
    [ "$status" -eq 0 ]
    grep -q -- '--chrome' "$T/out"
    split "$TCFUSE" run --help
    [ "$status" -eq 0 ]
    split "$TCFUSE" --version
    [ "$status" -eq 0 ]
    want="$(sed -n 's/^#define TCF_VERSION "\(.*\)"/\1/p' config/config.h)"
    [ "$(cat "$T/out")" = "tcfuse $want" ]
}

@test "config prints the option table" {
    split "$TCFUSE" config
    [ "$status" -eq 0 ]
    grep -q 'TCFUSE_MODE' "$T/out"
    grep -q 'TCFUSE_TRACE' "$T/out"
}

@test "bad usage: usage on stderr, exit 2" {
    split "$TCFUSE"
    [ "$status" -eq 2 ]
    grep -q '^usage: tcfuse' "$T/err"
    [ ! -s "$T/out" ]
    split "$TCFUSE" frobnicate
    [ "$status" -eq 2 ]
    [ "$(cat "$T/err")" = "tcfuse: unknown command 'frobnicate' (tcfuse --help)" ]
    [ ! -s "$T/out" ]
    split "$TCFUSE" help frobnicate
    [ "$status" -eq 2 ]
    split "$TCFUSE" --bogus
    [ "$status" -eq 2 ]
    split "$TCFUSE" config extra
    [ "$status" -eq 2 ]
}

# --- run --------------------------------------------------------------------------------

@test "run -- true: exit 0; the command's own status passes through" {
    need_lib
    split "$TCFUSE" run -- true
    [ "$status" -eq 0 ]
    split "$TCFUSE" run --mode off -- sh -c 'exit 7'
    [ "$status" -eq 7 ]
}

@test "run -- /nonexistent: exit 127 and says so; a directory: 126" {
    need_lib
    split "$TCFUSE" run -- /nonexistent
    [ "$status" -eq 127 ]
    grep -q '/nonexistent: command not found' "$T/err"
    split "$TCFUSE" run -- no-such-command-tcfuse
    [ "$status" -eq 127 ]
    split "$TCFUSE" run -- /
    [ "$status" -eq 126 ]
}

@test "run: bad usage exits 2" {
    split "$TCFUSE" run
    [ "$status" -eq 2 ]
    grep -q 'no command given' "$T/err"
    split "$TCFUSE" run --
    [ "$status" -eq 2 ]
    split "$TCFUSE" run --mode turbo -- true
    [ "$status" -eq 2 ]
    grep -q "unknown mode 'turbo'" "$T/err"
    split "$TCFUSE" run --bogus -- true
    [ "$status" -eq 2 ]
    split "$TCFUSE" run --trace
    [ "$status" -eq 2 ]
}

@test "run: a missing library exits 125 and names TCFUSE_LIB" {
    TCFUSE_LIB="$T/nope/libtcfuse.so" split "$TCFUSE" run -- true
    [ "$status" -eq 125 ]
    grep -q 'TCFUSE_LIB' "$T/err"
    # a copy of the command with no library beside it
    cp "$TCFUSE" "$T/tcfuse"
    split "$T/tcfuse" run -- true
    [ "$status" -eq 125 ]
    grep -q 'libtcfuse.so not found' "$T/err"
}

@test "run: sets the variables asked for and puts the library first in LD_PRELOAD" {
    need_lib
    split env LD_PRELOAD=libm.so.6 "$TCFUSE" run --mode off --stats --trace "$T/t.jsonl" \
        --backtrace --print-config -- sh -c 'env | grep -E "^(TCFUSE_|LD_PRELOAD=)" | sort'
    [ "$status" -eq 0 ]
    cat >"$T/want" <<EOF
LD_PRELOAD=$LIB:libm.so.6
TCFUSE_BACKTRACE=1
TCFUSE_MODE=off
TCFUSE_PRINT_CONFIG=1
TCFUSE_STATS=1
TCFUSE_TRACE=$T/t.jsonl
EOF
    diff -u "$T/want" "$T/out"
}

@test "run: the library is preloaded once; CMD's options are its own" {
    need_lib
    split env LD_PRELOAD="$LIB" "$TCFUSE" run --mode off -- sh -c 'echo "$LD_PRELOAD"'
    [ "$(cat "$T/out")" = "$LIB" ]
    split "$TCFUSE" run --mode off -- sh -c 'echo "$@"' sh --stats -- --mode
    [ "$(cat "$T/out")" = "--stats -- --mode" ]
    split "$TCFUSE" run --mode off echo --trace x
    [ "$(cat "$T/out")" = "--trace x" ]
    split "$TCFUSE" run --mode off -- sh -c 'echo "${TCFUSE_STATS-unset}"'
    [ "$(cat "$T/out")" = "unset" ]
}

# --- the reader against the writer ------------------------------------------------------

@test "run --trace on the stub's windows scenario, then report it" {
    need_lib
    [ -x build/stub/progs/scen ] || skip "no build/stub/progs/scen (make stub)"
    LD_LIBRARY_PATH="$ROOT/build/stub" TCFUSE_IDLE_US=0 \
        split "$TCFUSE" run --trace "$T/scen.jsonl" --backtrace -- build/stub/progs/scen windows
    [ "$status" -eq 0 ]
    split "$TCFUSE" report "$T/scen.jsonl"
    [ "$status" -eq 0 ]
    # scen.c: 12 launches, 4 kernels, 5 windows (median 2, max 5), 5 distinct keys
    grep -q ', 0 malformed, 0 unknown events' "$T/out"
    grep -qx '  complete, 0 events dropped' "$T/out"
    grep -qx '  launches         12' "$T/out"
    grep -qx '  kernels           4  (4 distinct names)' "$T/out"
    grep -qx '  count 5, launches per window: min 1, median 2, max 5' "$T/out"
    grep -qx '  5 distinct keys in 5 windows; no key seen twice' "$T/out"
    grep -qE '^ +2 +40\.0%  cuStreamSynchronize$' "$T/out"
    grep -qE '^ +1 +at scen\+0x' "$T/out"
    "$TCFUSE" report --chrome "$T/scen.json" "$T/scen.jsonl" >/dev/null
    python3 -m json.tool "$T/scen.json" >/dev/null
}

@test "report: coverage by kernel family on a real Llama trace (decoded, fused, why not)" {
    split "$TCFUSE" report tests/fixtures/trace-hf-llama.jsonl
    [ "$status" -eq 0 ]
    sed -n '/^coverage by kernel family$/,/^kernels left/p' "$T/out" | sed '$d' >"$T/cov"
    sed -n '/^kernels left/,$p' "$T/out" >"$T/left"
    cat "$T/cov" "$T/left"
    # strided and broadcast launches plan into N-d groups and row groups (RMSNorm's tails,
    # `q * cos` with rotate_half's cat and its `* sin`, the negation stepped over, q's sum
    # walked in the cat's order); the others have no neighbour they can join
    grep -Eq '^  elementwise-strided +52 +52 +38$' "$T/cov"
    grep -Eq '^  gemm +32 +0 +0  32 not-elementwise$' "$T/cov"
    grep -Eq '^  reduce +10 +10 +9$' "$T/cov"                 # each RMSNorm's mean in its row group
    # rotate_half's with `* sin`, the KV cache's key cat with k's sum, the rotary table's
    # with its cos, sin, scales and casts; the value cache's cat, whose source block this
    # trace's allocator (frees not visible) hands out again inside the group, alone
    grep -Eq '^  cat +18 +18 +15$' "$T/cov"
    grep -Eq '^  elementwise +56 +54 +37  2 unsupported-dtype$' "$T/cov"
    grep -Eq '^  copy-cast +28 +26 +23  2 unsupported-dtype$' "$T/cov"
    # every launch is in exactly one family: the rows add up to the trace's launches
    total=$(awk 'NR > 2 { s += $2 } END { print s }' "$T/cov")
    [ "$total" -eq 204 ]
    # the kernels left as issued, most first: the GEMMs, then the negation rotate_half
    # steps over (its space differs from the group's), then the casts with no neighbour
    # (the rotary embedding's sums over views now join walked in the group's order); each
    # row's left is its launches less its fused
    [ "$(sed -n 3p "$T/left" | awk '{ print $1, $2, $3, $4, $5, $6 }')" = \
      "28 28 0 0 not-elementwise nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT" ]
    sed -n 4p "$T/left" | grep -Eq '^ +8 +8 +8 +0  size-differs +.*neg_kernel_cuda'
    sed -n 5p "$T/left" | grep -Eq '^ +5 +14 +12 +9  alone +.*direct_copy_kernel_cuda'
    grep -Eq '^ +4 +4 +4 +0  alone +at::native::vectorized_elementwise_kernel<8, silu_kernel' "$T/left"
    [ "$(awk 'NR > 2 && $1 != $2 - $4' "$T/left")" = "" ]
    [ "$(awk 'NR > 2' "$T/left" | wc -l)" -eq 10 ]   # --top, 10 by default
    awk 'NR > 3 && $1 > prev { exit 1 } NR > 2 { prev = $1 }' "$T/left"
    "$TCFUSE" report --top 3 tests/fixtures/trace-hf-llama.jsonl | sed -n '/^kernels left/,$p' >"$T/left3"
    [ "$(awk 'NR > 2' "$T/left3" | wc -l)" -eq 3 ]
    cmp <(head -n 5 "$T/left") "$T/left3"
}

@test "report: the training step's kernels left as issued name what to decode next" {
    split "$TCFUSE" report tests/fixtures/trace-hf-llama-train.jsonl
    [ "$status" -eq 0 ]
    sed -n '/^kernels left/,$p' "$T/out" >"$T/left"
    cat "$T/left"
    # the float fills (deterministic mode's NaN before each kernel that writes a fresh
    # buffer) all fuse with that kernel; the bf16 ones decode but meet ops of other sizes;
    # AdamW's foreach kernels and the GEMMs are not elementwise
    ! grep -q 'FillFunctor<float>' "$T/left"
    grep -Eq '^ +16 +16 +16 +0  size-differs +at::native::vectorized_elementwise_kernel<8, FillFunctor<BFloat16>' "$T/left"
    grep -Eq '^ +20 +20 +0 +0  not-elementwise +.*multi_tensor_apply_kernel<TensorListMetadata<1>' "$T/left"
}

@test "report: from stdin, no coverage table (the trace cannot be read twice)" {
    run bash -c "'$TCFUSE' report - < tests/fixtures/trace-hf-llama.jsonl"
    [ "$status" -eq 0 ]
    [[ "$output" != *"coverage by kernel family"* ]]
    [[ "$output" == *"top kernels by launches"* ]]
}
