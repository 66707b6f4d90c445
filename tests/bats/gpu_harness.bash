# The GPU suites' bookkeeping (tests/gpu/run, tests/gpu/reliability.sh) without a GPU: their
# suite functions loaded alone, every program run by a scripted run_cmd.
#
# suite_status SUITE CUT [NAME=RC...]: runs suite_SUITE with each run NAME ending with RC
# (0 when not named; its output files written alike, so that runs compare equal) and, after
# the run named CUT (-: from the start), every run left out for want of time as run_cmd
# leaves it; prints the suite's status line (STATUS<tab>detail).

GPU_DIR=$BATS_TEST_DIRNAME/../gpu

# gpu_fn NAME...: NAME's definition from the GPU scripts (a function opened at the start of
# a line, closed by a "}" at the start of a line, or on one line).
gpu_fn() {
    local f
    for f; do
        eval "$(awk -v n="$f" '
            !p && index($0, n "() {") == 1 { p = 1; if ($0 ~ /}$/) { print; exit } }
            p { print } p && /^}/ { exit }' "$GPU_DIR/run" "$GPU_DIR/reliability.sh")"
    done
}

suite_status() {
    local suite=$1 cut=$2; shift 2
    (
        gpu_fn report not_run last_line fork_lines fork_compare "suite_$suite" fault_case graph_fault_case
        WORK=$T/gpu-work LOGS=$T/gpu-work/logs CUR_SUITE=$suite PY=true LIB=libtcfuse.so
        FUSE_ENV=() FORK_MODES="observe fuse graph full"
        CONC_MODES=("observe TCFUSE_MODE=observe" "full TCFUSE_MODE=full")
        rm -rf "$WORK"; mkdir -p "$WORK"/{status,res,faults-cache.none} "$LOGS"
        say() { :; }; need_bin() { true; }; replay_env() { echo TCFUSE_MODE=graph; }
        replayed_of() { echo "5 windows"; }; fused_of() { :; }; upgraded_of() { :; }
        rebind_of() { :; }; differed_of() { :; }; fuse_disabled() { echo 0; }
        fuse_groups() { echo 3; }; stat_count() { echo 1; }
        declare -A RC; local kv; for kv; do RC[${kv%=*}]=${kv#*=}; done
        gone=""; [[ $cut == - ]] && gone=1
        run_cmd() {
            local name=$1 log=$LOGS/$1.log a; shift 2
            while [[ $1 != -- ]]; do shift; done
            if [[ -n $gone ]]; then printf 'not run: out of time\n# rc=125 seconds=0\n' >"$log"; return 125; fi
            for a; do [[ $a == "$WORK"/res/* ]] && echo output >"$a"; done
            printf 'output\n# rc=%s seconds=1\n' "${RC[$name]:-0}" >"$log"
            [[ $name == "$cut" ]] && gone=1
            return "${RC[$name]:-0}"
        }
        "suite_$suite"
        cat "$WORK/status/$suite"
    )
}
