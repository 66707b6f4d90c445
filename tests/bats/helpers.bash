# Shared setup of the BATS suites: whole processes under LD_PRELOAD=build/libtcfuse.so
# against the stand-in driver build/stub/libcuda.so.1 (tests/stub). Run from the
# repository root: `make bats` (or `bats tests/bats` after `make all stub`).
#
# Every test starts from a clean environment: no TCFUSE_* or FAKECUDA_* variable set
# except TCFUSE_IDLE_US=0 (idle closes depend on time; a test that wants them sets it),
# and LD_LIBRARY_PATH=build/stub so that dlopen("libcuda.so.1") finds the stub.
#
# Runs: `base NAME CMD...` runs CMD without tcfuse, `tcf NAME CMD...` with it preloaded.
# Each leaves $T/NAME.out (stdout), $T/NAME.err (stderr), $T/NAME.log (the stub's
# FAKECUDA_LOG) and $T/NAME.rc (exit status), and sets $status.
# Logs: the stub prefixes "[tcfuse] " to the queries tcfuse made itself (see
# tests/stub/fakecuda.c); `work_log` drops those lines and every cuGetProcAddress(_v2)
# line (under tcfuse the program's own lookups reach the driver through tcfuse's
# cuGetProcAddress, so they are tagged too: the programs print what each lookup
# returned instead, and the calls through the pointers show which variant ran);
# `untagged_log` drops only the prefix.

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
LIB="$ROOT/build/libtcfuse.so"
TCFUSE="$ROOT/build/tcfuse"
STUB="$ROOT/build/stub"
PROGS="$STUB/progs"
CHECK="$BATS_TEST_DIRNAME/trace_check.py"

# The boundary calls scen.c can make, by the name the trace should give as "reason".
BOUNDARIES=(cuStreamSynchronize cuStreamQuery cuCtxSynchronize cuCtxSynchronize_v2
            cuEventRecord cuEventSynchronize cuEventQuery cuStreamWaitEvent
            cuMemcpyHtoDAsync cuMemcpyDtoHAsync cuLaunchHostFunc cuFakeUnknownCall
            cuStreamDestroy)
# Harmless queries: known to tcfuse, handed back unwrapped, never closing a window.
QUERIES=(cuCtxGetDevice cuCtxGetDevice_v2 cuCtxGetCurrent cuDeviceGet cuDeviceGetAttribute
         cuDevicePrimaryCtxGetState cuStreamIsCapturing cuKernelGetFunction cuLibraryLoadData
         cuLibraryGetKernel cuOccupancyMaxActiveBlocksPerMultiprocessor cuDriverGetVersion
         cuInit cuGetErrorString cuKernelGetName cuKernelGetParamInfo)
LOOKUPS=(gpa gpa-legacy gpa-ptds gpa1 gpa-global dlsym dlsym-ptsz)

# No TCFUSE_*, FAKECUDA_* or LD_PRELOAD; $T; the repository root as working directory.
clean_setup() {
    local v
    for v in $(env | sed -n 's/^\(TCFUSE_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(FAKECUDA_[A-Za-z0-9_]*\)=.*/\1/p'); do
        unset "$v"
    done
    unset LD_PRELOAD
    T="$BATS_TEST_TMPDIR"
    cd "$ROOT" || return 1
}

# Suites of the tcfuse command alone, on trace files (no stub driver): plan, report.
command_setup() {
    clean_setup || return 1
    [ -x "$TCFUSE" ] || { echo "missing $TCFUSE: run make" >&2; return 1; }
}

# Runs the command with stdout and stderr kept apart: $T/out, $T/err, $status. Returns 0
# whatever the command's status, like bats' `run`, so tests check $status themselves.
split() {
    status=0
    "$@" >"$T/out" 2>"$T/err" || status=$?
    return 0
}

common_setup() {
    clean_setup || return 1
    export TCFUSE_IDLE_US=0
    export LD_LIBRARY_PATH="$STUB"
    [ -x "$LIB" ] || { echo "missing $LIB: run make" >&2; return 1; }
    [ -x "$PROGS/scen" ] || { echo "missing $PROGS/scen: run make stub" >&2; return 1; }
}

setup() { common_setup; }

# fusechain_setup: common_setup for the files that run fusechain (PyTorch's mul, add and
# tanh on the stand-in), with $NVRTC the newest NVRTC under CUDA_HOME (empty when none;
# need_nvrtc skips the test then).
fusechain_setup() {
    common_setup || return 1
    [ -x "$PROGS/fusechain" ] || { echo "missing $PROGS/fusechain: run make stub" >&2; return 1; }
    NVRTC=
    local c
    for c in "${CUDA_HOME:-/usr/local/cuda}"/lib64/libnvrtc.so.1[0-9]; do
        [ -f "$c" ] && NVRTC=$c
    done
    return 0
}
need_nvrtc() { [ -n "$NVRTC" ] || skip "no NVRTC under ${CUDA_HOME:-/usr/local/cuda}/lib64"; }

# _run PRELOAD NAME CMD...
_run() {
    local pre="$1" name="$2"
    shift 2
    rm -f "$T/$name.log"
    status=0
    if [ -n "$pre" ]; then
        FAKECUDA_LOG="$T/$name.log" LD_PRELOAD="$pre" "$@" >"$T/$name.out" 2>"$T/$name.err" ||
            status=$?
    else
        FAKECUDA_LOG="$T/$name.log" "$@" >"$T/$name.out" 2>"$T/$name.err" || status=$?
    fi
    echo "$status" >"$T/$name.rc"
    touch "$T/$name.log"
    return 0
}
base() { _run "" "$@"; }
tcf() { _run "$LIB" "$@"; }

work_log() { grep -Ev '^(\[tcfuse\] |cuGetProcAddress(_v2)? )' "$1" || true; }
untagged_log() { sed 's/^\[tcfuse\] //' "$1"; }

# The stub log's successful launches as "NAME P0,P1,..." (see trace_check.py launches).
log_launches() {
    grep -E '^cuLaunchKernel(Ex)?(_ptsz)? .* rc=0$' "$1" |
        sed -E 's/^[^ ]+ name=([^ ]+) .* params=([^ ]*) form=.*/\1 \2/'
}

# same_text LABEL FILE_A FILE_B: passes when equal, else prints a unified diff.
same_text() {
    if ! diff -u "$2" "$3" >"$T/diff.txt"; then
        echo "$1: $2 and $3 differ:"
        head -40 "$T/diff.txt"
        return 1
    fi
}

# compare_runs NAME CMD...: runs CMD without and with tcfuse (observe mode unless the
# environment says otherwise) and requires the same exit status, stdout, and stub log
# once tcfuse's own queries are dropped, and nothing on tcfuse's stderr that the
# program did not print itself.
compare_runs() {
    local name="$1"
    shift
    base "$name.base" "$@"
    tcf "$name.tcf" "$@"
    local ok=0
    if [ "$(cat "$T/$name.base.rc")" != "$(cat "$T/$name.tcf.rc")" ]; then
        echo "$name: exit status $(cat "$T/$name.base.rc") without tcfuse, $(cat "$T/$name.tcf.rc") with"
        ok=1
    fi
    same_text "$name: stdout" "$T/$name.base.out" "$T/$name.tcf.out" || ok=1
    same_text "$name: stderr" "$T/$name.base.err" "$T/$name.tcf.err" || ok=1
    work_log "$T/$name.base.log" >"$T/$name.base.work"
    work_log "$T/$name.tcf.log" >"$T/$name.tcf.work"
    same_text "$name: driver calls" "$T/$name.base.work" "$T/$name.tcf.work" || ok=1
    [ -s "$T/$name.base.log" ] || { echo "$name: the stub logged nothing"; ok=1; }
    return $ok
}

# stats_line FILE WHAT: the first stats line "tcfuse:   WHAT ..." of FILE.
stats_line() { grep -E "^tcfuse: +$2 " "$1" | head -1; }

# boundary_count FILE REASON: the count the stats' boundaries line gives REASON (0 if absent).
boundary_count() {
    stats_line "$1" boundaries | sed -E 's/^tcfuse: +boundaries +//' | tr ',' '\n' |
        awk -v r="$2" '$1 == r { n = $2 } END { print n + 0 }'
}

# expect_line FILE ERE: passes when a line of FILE matches, else shows FILE.
expect_line() {
    if ! grep -Eq -- "$2" "$1"; then
        echo "no line of $1 matches /$2/; it holds:"
        cat "$1"
        return 1
    fi
}

# trace_valid FILE: the trace passes trace_check.py valid.
trace_valid() {
    [ -s "$1" ] || { echo "no trace at $1"; return 1; }
    python3 "$CHECK" valid "$1"
}

# The base name of a driver call: without the _v2/_v3 and _ptsz/_ptds suffixes.
base_name() { sed -E 's/_ptsz$|_ptds$//; s/_v[0-9]+$//' <<<"$1"; }
