# The GPU suites' bookkeeping (tests/gpu/run, tests/gpu/reliability.sh) without a GPU: their
# suite functions loaded alone, each program they run replaced by one that ends as scripted.
#
# suite_status SUITE CUT [NAME=RC...]: runs suite_SUITE with each run NAME ending with RC
# (0 when not named; its output files written alike, so that runs compare equal) and, after
# the run named CUT (-: from the start), the budget spent, so that run_cmd leaves every
# later run out; prints the suite's status line (STATUS<tab>detail).

GPU_DIR=$BATS_TEST_DIRNAME/../gpu

# gpu_fn_text NAME: NAME's definition in the GPU scripts (a function opened at the start
# of a line and closed by a "}" at the start of a line, or on one line).
gpu_fn_text() {
    awk -v n="$1" '
        !p && index($0, n "() {") == 1 { p = 1; if ($0 ~ /}$/) { print; exit } }
        p { print } p && /^}/ { exit }' "$GPU_DIR/run" "$GPU_DIR/reliability.sh"
}
gpu_fn() { local f; for f; do eval "$(gpu_fn_text "$f")"; done; }

suite_status() {
    local suite=$1 cut=$2; shift 2
    (
        gpu_fn now report not_run last_line fork_lines fork_compare "suite_$suite" \
            fault_case graph_fault_case
        eval "$(gpu_fn_text run_cmd | sed '1s/^run_cmd()/real_run_cmd()/')"
        WORK=$T/gpu-work LOGS=$T/gpu-work/logs CUR_SUITE=$suite PY=true LIB=libtcfuse.so
        FUSE_ENV=() FORK_MODES="observe fuse graph full" SUITE_NOTRUN=""
        CONC_MODES=("observe TCFUSE_MODE=observe" "full TCFUSE_MODE=full")
        DEADLINE=$(( $(now) + 3600 )) SUITE_DEADLINE=$(( $(now) + 3600 ))
        rm -rf "$WORK"; mkdir -p "$WORK"/{status,res,faults-cache.none} "$LOGS"
        say() { :; }; need_bin() { true; }; replay_env() { echo TCFUSE_MODE=graph; }
        replayed_of() { echo "5 windows"; }; fused_of() { :; }; upgraded_of() { :; }
        rebind_of() { :; }; differed_of() { :; }; fuse_disabled() { echo 0; }
        fuse_groups() { echo 3; }; stat_count() { echo 1; }
        declare -A RC; local kv; for kv; do RC[${kv%=*}]=${kv#*=}; done
        [[ $cut == - ]] && SUITE_DEADLINE=0
        # the suite's own run_cmd, its program replaced; the budget spent after CUT
        run_cmd() {
            local name=$1 limit=$2 a rc; shift 2
            while [[ $1 != -- ]]; do shift; done
            shift
            if (( SUITE_DEADLINE > 0 )); then
                for a; do [[ $a == "$WORK"/res/* ]] && echo output >"$a"; done
            fi
            real_run_cmd "$name" "$limit" -- bash -c 'echo output; exit "$1"' _ "${RC[$name]:-0}"
            rc=$?
            [[ $name == "$cut" ]] && SUITE_DEADLINE=0
            return $rc
        }
        "suite_$suite"
        cat "$WORK/status/$suite"
    )
}
