#!/usr/bin/env bats
# TCFUSE_* options (config/options.def): a value that does not parse or is out of bounds
# warns once, with the "tcfuse: " prefix, and keeps the default; TCFUSE_PRINT_CONFIG lists
# every option and where its value came from; TCFUSE_LOG_FILE takes tcfuse's output;
# TCFUSE_VERBOSE=0 silences warnings. The program itself is never affected.

load helpers

OPTIONS_DEF="$BATS_TEST_DIRNAME/../../config/options.def"

# The TCFUSE_ names options.def defines, one a line.
all_options() {
    sed -n 's/^TCF_OPT(\([a-z_0-9]*\),.*/\1/p' "$OPTIONS_DEF" | tr '[:lower:]' '[:upper:]' | sed 's/^/TCFUSE_/'
}

# invalid_case VAR VALUE DEFAULT: VAR=VALUE warns once (naming VAR), the printed
# configuration shows DEFAULT kept, and the program runs exactly as without tcfuse.
invalid_case() {
    local var="$1" val="$2" def="$3" name="inv-$1-$RANDOM"
    (
        export "$var=$val" TCFUSE_PRINT_CONFIG=1
        compare_runs_stderr_ok "$name" "$PROGS/scen" windows
    ) || return 1
    local err="$T/$name.tcf.err" warns
    warns="$(grep "^tcfuse: " "$err" | grep -v "^tcfuse: TCFUSE_[A-Z_]*=.* (\(default\|environment\|invalid.*kept default\))$" | grep -c "$var")"
    [ "$warns" = 1 ] || { echo "$var=$val: $warns warnings, expected 1:"; cat "$err"; return 1; }
    expect_line "$err" "^tcfuse: $var=$def \(invalid( \"[^\"]*\")?: kept default\)$"
}

# compare_runs, but stderr may hold tcfuse's own lines (all prefixed) besides the program's.
compare_runs_stderr_ok() {
    local name="$1" ok=0
    shift
    base "$name.base" "$@"
    tcf "$name.tcf" "$@"
    [ "$(cat "$T/$name.base.rc")" = "$(cat "$T/$name.tcf.rc")" ] || { echo "$name: exit status"; ok=1; }
    same_text "$name: stdout" "$T/$name.base.out" "$T/$name.tcf.out" || ok=1
    grep -v '^tcfuse: ' "$T/$name.tcf.err" >"$T/$name.tcf.app-err" || true
    same_text "$name: the program's stderr" "$T/$name.base.err" "$T/$name.tcf.app-err" || ok=1
    work_log "$T/$name.base.log" >"$T/$name.base.work"
    work_log "$T/$name.tcf.log" >"$T/$name.tcf.work"
    same_text "$name: driver calls" "$T/$name.base.work" "$T/$name.tcf.work" || ok=1
    return $ok
}

@test "options: invalid values warn once and keep the default" {
    local failed=0 c
    while read -r c; do
        # shellcheck disable=SC2086
        invalid_case $c || { echo "case: $c"; failed=1; }
    done <<'CASES'
TCFUSE_MODE bogus observe
TCFUSE_MODE 1 observe
TCFUSE_STATS maybe 0
TCFUSE_STATS 2 0
TCFUSE_WINDOW_MAX 0 256
TCFUSE_WINDOW_MAX abc 256
TCFUSE_WINDOW_MAX 65537 256
TCFUSE_WINDOW_MAX 12x 256
TCFUSE_IDLE_US -5 200
TCFUSE_IDLE_US 10000001 200
TCFUSE_VERBOSE 4 1
TCFUSE_BACKTRACE_DEPTH 0 8
TCFUSE_BACKTRACE maybe 0
TCFUSE_TRACE_LIMIT 12Q [0-9A-Za-z]+
TCFUSE_TRACE_LIMIT 1K [0-9A-Za-z]+
CASES
    [ "$failed" = 0 ]
}

@test "options: a kept default really is in force" {
    TCFUSE_MODE=bogus TCFUSE_STATS=1 tcf mode "$PROGS/scen" windows
    expect_line "$T/mode.err" '^tcfuse: stats: mode observe, pid [0-9]+$'
    expect_line "$T/mode.err" '^tcfuse: +windows +5 '
    TCFUSE_WINDOW_MAX=0 TCFUSE_STATS=1 tcf cap "$PROGS/scen" sizecap 10
    expect_line "$T/cap.err" '^tcfuse: +windows +1 \(launches per window: median 10, max 10\)$'
    TCFUSE_STATS=maybe tcf nostats "$PROGS/scen" windows
    ! grep -q 'stats:' "$T/nostats.err"
}

@test "options: valid spellings are accepted without a warning" {
    local v
    for v in 1 true on yes TRUE On; do
        TCFUSE_STATS=$v tcf "b-$v" "$PROGS/scen" windows
        expect_line "$T/b-$v.err" '^tcfuse: stats: mode observe'
        ! grep -q 'not valid' "$T/b-$v.err"
    done
    TCFUSE_TRACE_LIMIT=1MiB TCFUSE_WINDOW_MAX=" 4 " TCFUSE_PRINT_CONFIG=1 tcf sz "$PROGS/scen" windows
    expect_line "$T/sz.err" '^tcfuse: TCFUSE_TRACE_LIMIT=[^ ]+ \(environment\)$'
    expect_line "$T/sz.err" '^tcfuse: TCFUSE_WINDOW_MAX=4 \(environment\)$'
    TCFUSE_MODE=off tcf off "$PROGS/scen" windows
    [ ! -s "$T/off.err" ]
}

@test "options: TCFUSE_PRINT_CONFIG lists every option once, with its source" {
    TCFUSE_PRINT_CONFIG=1 TCFUSE_WINDOW_MAX=32 tcf pc "$PROGS/scen" windows
    [ "$status" = 0 ]
    local opt n
    for opt in $(all_options); do
        n="$(grep -c "^tcfuse: $opt=" "$T/pc.err")"
        [ "$n" = 1 ] || { echo "$opt printed $n times:"; cat "$T/pc.err"; return 1; }
    done
    [ "$(all_options | wc -l)" -ge 11 ]
    expect_line "$T/pc.err" '^tcfuse: TCFUSE_WINDOW_MAX=32 \(environment\)$'
    expect_line "$T/pc.err" '^tcfuse: TCFUSE_IDLE_US=0 \(environment\)$'
    expect_line "$T/pc.err" '^tcfuse: TCFUSE_MODE=observe \(default\)$'
    expect_line "$T/pc.err" '^tcfuse: TCFUSE_PRINT_CONFIG=(1|on|true|yes) \(environment\)$'
    # Nothing else: no stats unless asked, and the program's output is untouched.
    run grep -v '^tcfuse: TCFUSE_' "$T/pc.err"
    [ -z "$output" ]
    grep -qx done "$T/pc.out"
}

@test "options: TCFUSE_LOG_FILE takes warnings and the configuration, stderr stays clean" {
    TCFUSE_LOG_FILE="$T/msgs.%p" TCFUSE_PRINT_CONFIG=1 TCFUSE_WINDOW_MAX=abc TCFUSE_STATS=1 \
        tcf lf "$PROGS/scen" windows
    [ "$status" = 0 ]
    [ ! -s "$T/lf.err" ] || { echo "stderr:"; cat "$T/lf.err"; return 1; }
    local f
    f="$(ls "$T"/msgs.*)"
    [[ "$f" =~ /msgs\.[0-9]+$ ]]
    expect_line "$f" '^tcfuse: .*TCFUSE_WINDOW_MAX.*abc'
    expect_line "$f" '^tcfuse: TCFUSE_MODE=observe \(default\)$'
    expect_line "$f" '^tcfuse: stats: mode observe'
    run grep -v '^tcfuse: ' "$f"
    [ -z "$output" ]
}

@test "options: TCFUSE_VERBOSE=0 silences warnings, not what was asked for" {
    TCFUSE_VERBOSE=0 TCFUSE_WINDOW_MAX=abc tcf v0 "$PROGS/scen" windows
    [ ! -s "$T/v0.err" ] || { cat "$T/v0.err"; return 1; }
    TCFUSE_VERBOSE=0 TCFUSE_WINDOW_MAX=abc TCFUSE_STATS=1 tcf v0s "$PROGS/scen" windows
    expect_line "$T/v0s.err" '^tcfuse: stats: mode observe'
    ! grep -q 'TCFUSE_WINDOW_MAX' "$T/v0s.err"
}

# TCFUSE_SET_ALLOCATOR: fuse mode sets PYTORCH_CUDA_ALLOC_CONF for a process that will load
# PyTorch later (Python), never one that has libc10_cuda mapped already (a C++ program linked
# against libtorch: c10 parsed the variable at load, and a backend that changes between its
# two parses aborts it), never an explicit setting, never with the option off.
@test "set_allocator: set for Python's case, left alone when c10 is loaded, explicit or off" {
    local d="$BATS_TEST_TMPDIR/c10" show='echo "${PYTORCH_CUDA_ALLOC_CONF-unset}"'
    mkdir -p "$d"
    echo 'int tcf_test_c10_marker;' >"$d/c10.c"
    cc -shared -fPIC -Wl,-soname,libc10_cuda.so -o "$d/libc10_cuda.so" "$d/c10.c"
    run env -u PYTORCH_CUDA_ALLOC_CONF TCFUSE_MODE=fuse LD_PRELOAD="$LIB" sh -c "$show"
    [ "$output" = "backend:cudaMallocAsync" ]
    run env -u PYTORCH_CUDA_ALLOC_CONF TCFUSE_MODE=fuse LD_PRELOAD="$d/libc10_cuda.so $LIB" sh -c "$show"
    [ "$output" = "unset" ]
    run env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True TCFUSE_MODE=fuse LD_PRELOAD="$LIB" sh -c "$show"
    [ "$output" = "expandable_segments:True" ]
    run env -u PYTORCH_CUDA_ALLOC_CONF TCFUSE_MODE=fuse TCFUSE_SET_ALLOCATOR=0 LD_PRELOAD="$LIB" sh -c "$show"
    [ "$output" = "unset" ]
    run env -u PYTORCH_CUDA_ALLOC_CONF TCFUSE_MODE=observe LD_PRELOAD="$LIB" sh -c "$show"
    [ "$output" = "unset" ]
}
