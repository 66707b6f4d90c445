# Reliability suites of tests/gpu/run (sourced by it; its helpers, run_cmd, report, want,
# build_bin, need_bin, FUSE_ENV, WORK, LOGS, PY, are in scope):
#
#   faults       fuse_chains.py (float32: FUSE_CHAINS_QUICK=1) under TCFUSE_FAULT at every
#                site (base/faults.def): each run's results bitwise equal to the plain
#                run's, the fault injected (the stats' faults line) and counted under its
#                named reason; one run without a fault first, whose cache the warm cases use;
#                graph mode's sites on replay.cu (vary) in graph mode, the same checks
#   concurrency  concurrency.cu (16 threads, 8 streams, cross-stream events, stream-ordered
#                allocations) and concurrency.py (the same shape with PyTorch's fusable
#                chains), plain and in each of CONC_MODES: outputs bitwise equal to plain
#   forks        forks.cu and forks.py: children forked before CUDA starts that use it,
#                children forked after it started (which cannot), a DataLoader's forked
#                workers while fuse mode compiles: same status and (sorted) output as plain,
#                in observe, fuse, graph and full mode
#   exits        exits.py with a window holding launches (fuse mode, warm cache,
#                TCFUSE_HOLD_ALL=1) ending by return, an atexit handler that reads the
#                result, a Python signal handler, exit() as a C signal handler, os._exit,
#                SIGKILL, and exit() from a timer's signal wherever it lands: same status
#                and output as plain, and no hang (60 s)

# The modes the concurrency suite runs besides plain, each "NAME VAR=VALUE...". Graph
# replay and the full mode join this list when TCFUSE_MODE accepts them.
CONC_MODES=("observe TCFUSE_MODE=observe" "fuse TCFUSE_MODE=fuse"
            "fuse-hold TCFUSE_MODE=fuse TCFUSE_HOLD_ALL=1" "graph TCFUSE_MODE=graph"
            "full TCFUSE_MODE=full")

if want concurrency; then build_bin concurrency tests/gpu/concurrency.cu & fi
if want forks; then build_bin forks tests/gpu/forks.cu & fi

# The count on a stats line of a log after a reason (an ERE; the sum when several match):
# stat_count LOG LINE REASON.
stat_count() {
    grep -E "tcfuse: +$2 " "$1" | tail -n 1 | sed -E "s/^.*tcfuse: +$2 +//" | tr ',' '\n' |
        awk -v r="^ *$3 [0-9]+\$" '$0 ~ r { n += $NF } END { print n + 0 }'
}

# ---- faults -------------------------------------------------------------------------

# fault_case NAME SPEC CACHE LINE REASON: fuse_chains.py with TCFUSE_FAULT=SPEC and a cold
# (empty) or warm (a copy of the no-fault run's) cache; its results must equal plain's, the
# site's failures must have been injected and counted under REASON on stats line LINE.
fault_case() {
    local name=$1 spec=$2 cache=$3 line=$4 reason=$5 dir=$WORK/faults-cache.$1 rc
    rm -rf "$dir"
    [[ $cache == warm ]] && cp -r "$WORK/faults-cache.none" "$dir"
    run_cmd "faults.$name" 90 "${FUSE_ENV[@]}" TCFUSE_CACHE_DIR="$dir" TCFUSE_COMPILE_WAIT=1 \
        TCFUSE_IDLE_US=0 FUSE_CHAINS_QUICK=1 ${spec:+TCFUSE_FAULT=$spec} -- \
        "$PY" tests/gpu/fuse_chains.py "$WORK/res/faults.$name.pt"; rc=$?
    local log=$LOGS/faults.$name.log cmp inj n groups site=${spec%%:*}
    [[ $rc == 125 ]] && return   # not run: report names it
    if [[ $rc != 0 ]]; then FAULT_BAD+="$name: rc $rc; "; return; fi
    "$PY" tests/gpu/fuse_chains.py --compare "$WORK/res/faults.plain.pt" "$WORK/res/faults.$name.pt" \
        >"$LOGS/faults.$name.compare.log" 2>&1
    cmp=$(tail -n 1 "$LOGS/faults.$name.compare.log")
    groups=$(fuse_groups "$log")
    n=$(stat_count "$log" "$line" "$reason")
    inj=$(grep -oE "faults .*" "$log" | grep -oE "$site [0-9]+ of [0-9]+" | head -n 1)
    FAULT_DETAIL+="$name: ${inj:-not armed}, $reason $n, ${groups:-?} groups; "
    if [[ $cmp != *" 0 failed" ]]; then FAULT_BAD+="$name: outputs differ ($cmp); "
    elif [[ -n $spec && ( -z $inj || $inj == "$site 0 of"* ) ]]; then FAULT_BAD+="$name: nothing injected ($inj); "
    elif [[ -n $reason && $n == 0 ]]; then FAULT_BAD+="$name: no $reason counted; "
    fi
    FAULT_RUNS=$((FAULT_RUNS + 1))
}

# graph_fault_case NAME SPEC LINE WHAT: replay.cu vary in graph mode under TCFUSE_FAULT=SPEC:
# its output equal to the plain run's, the last site of SPEC injected, and a nonzero count
# before (given up) or after (graphs) WHAT on stats line LINE.
graph_fault_case() {
    local name=$1 spec=$2 line=$3 what=$4 rc out=$WORK/res/faults.graph.$1
    run_cmd "faults.graph.$name" 60 LD_PRELOAD="$LIB" TCFUSE_MODE=graph TCFUSE_STATS=1 \
        TCFUSE_REPLAY_SYNC=1 TCFUSE_FAULT="$spec" -- "$WORK/bin/replay" vary 40 "$out"; rc=$?
    local log=$LOGS/faults.graph.$name.log site=${spec##*,} inj n
    site=${site%%:*}
    [[ $rc == 125 ]] && return
    if [[ $rc != 0 ]]; then FAULT_BAD+="graph $name: rc $rc; "; return; fi
    inj=$(grep -oE "faults .*" "$log" | grep -oE "$site [0-9]+ of [0-9]+" | head -n 1)
    if [[ $line == "given up" ]]; then
        n=$(grep -E "^tcfuse: +given up" "$log" | grep -oE "$what [0-9]+" | grep -oE '[0-9]+$' | head -n 1)
    else
        n=$(grep -E "^tcfuse: +$line " "$log" | grep -oE "[0-9]+ $what" | grep -oE '^[0-9]+' | head -n 1)
    fi
    FAULT_DETAIL+="graph $name: ${inj:-not armed}, $what ${n:-0}, $(replayed_of "$log" | cut -d' ' -f1) replayed; "
    if ! cmp -s "$WORK/res/faults.graph.plain" "$out"; then FAULT_BAD+="graph $name: output differs; "
    elif [[ -z $inj || $inj == "$site 0 of"* ]]; then FAULT_BAD+="graph $name: nothing injected ($inj); "
    elif [[ ${n:-0} == 0 ]]; then FAULT_BAD+="graph $name: no $what counted; "
    fi
    FAULT_RUNS=$((FAULT_RUNS + 1))
}

suite_faults() {
    FAULT_BAD="" FAULT_DETAIL="" FAULT_RUNS=0
    local rc
    run_cmd faults.plain 90 FUSE_CHAINS_QUICK=1 -- "$PY" tests/gpu/fuse_chains.py "$WORK/res/faults.plain.pt"; rc=$?
    if [[ $rc != 0 ]]; then report ERROR "plain run failed (rc $rc): $(last_line "$LOGS/faults.plain.log")"; return; fi
    fault_case none "" cold fused ""
    not_run "$LOGS/faults.none.log" || [[ $(fuse_groups "$LOGS/faults.none.log") =~ ^[1-9] ]] ||
        FAULT_BAD+="none: nothing fused; "
    fault_case nvrtc_open nvrtc_open cold "not held" "no NVRTC"
    fault_case nvrtc_compile nvrtc_compile:3 cold fallbacks "(compile_failed|verify_unable)"
    fault_case module_load module_load:3 cold fallbacks "(load_failed|verify_unable)"
    fault_case fused_launch fused_launch:5 warm fallbacks fused_failed
    fault_case fused_every fused_launch:every warm fallbacks fused_failed
    not_run "$LOGS/faults.fused_every.log" || [[ $(fuse_groups "$LOGS/faults.fused_every.log") == 0 ]] ||
        FAULT_BAD+="fused_every: groups ran fused; "
    fault_case cache_read cache_read:2 warm fallbacks cache_read_failed
    fault_case cache_write cache_write:2 cold fallbacks cache_write_failed
    fault_case cache_rename cache_rename:2 cold fallbacks cache_write_failed
    fault_case alloc alloc:100 warm problems allocations-failed
    fault_case alloc_every alloc:every warm problems allocations-failed
    fault_case thread thread warm fallbacks no_worker
    # graph mode's sites: replay.cu's vary program (pointers and scalars change every
    # iteration), graphs made on the application's thread so that each site is reached
    if need_bin replay; then
        local bin=$WORK/bin/replay
        run_cmd faults.graph.plain 60 -- "$bin" vary 40 "$WORK/res/faults.graph.plain"; rc=$?
        if [[ $rc == 0 ]]; then
            graph_fault_case instantiate graph_instantiate:every "given up" instantiate-failed
            graph_fault_case patch graph_patch:every graphs "whole-graph updates"
            graph_fault_case update graph_patch:every,graph_update:every graphs re-instantiated
            graph_fault_case launch graph_launch:3 "given up" launch-failed
        elif [[ $rc != 125 ]]; then
            FAULT_BAD+="graph: plain run failed; "
        fi
    else
        FAULT_BAD+="graph: replay.cu did not build; "
    fi
    if [[ -z $FAULT_BAD ]]; then report PASS "$FAULT_RUNS runs bitwise equal to plain, each fault counted: ${FAULT_DETAIL%; }"
    else report FAIL "${FAULT_BAD%; } (${FAULT_DETAIL%; })"; fi
}

# ---- concurrency --------------------------------------------------------------------

suite_concurrency() {
    local bad="" detail="" m name envs rc
    if need_bin concurrency; then
        local bin=$WORK/bin/concurrency
        run_cmd conc.c.plain 60 -- "$bin" "$WORK/res/conc.c.plain.bin" 40; rc=$?
        [[ $rc == 0 || $rc == 125 ]] || bad+="C plain failed (rc $rc); "
        run_cmd conc.c.plain2 60 -- "$bin" "$WORK/res/conc.c.plain2.bin" 40; rc=$?
        if [[ $rc != 125 ]] && ! cmp -s "$WORK/res/conc.c.plain.bin" "$WORK/res/conc.c.plain2.bin"; then bad+="C plain runs differ (NONDET); "; fi
        for m in "${CONC_MODES[@]}"; do
            read -r name envs <<<"$m"
            run_cmd "conc.c.$name" 60 LD_PRELOAD="$LIB" TCFUSE_STATS=1 $envs -- "$bin" "$WORK/res/conc.c.$name.bin" 40; rc=$?
            if [[ $rc == 125 ]]; then :   # not run: report names it
            elif [[ $rc != 0 ]]; then bad+="C $name: rc $rc; "
            elif ! cmp -s "$WORK/res/conc.c.plain.bin" "$WORK/res/conc.c.$name.bin"; then bad+="C $name: output differs; "
            else detail+="C $name equal; "; fi
        done
    else
        bad+="concurrency.cu did not build: $(last_line "$LOGS/build-concurrency.log"); "
    fi
    run_cmd conc.py.plain 90 -- "$PY" tests/gpu/concurrency.py "$WORK/res/conc.py.plain.pt"; rc=$?
    [[ $rc == 0 || $rc == 125 ]] || bad+="Python plain failed (rc $rc); "
    rm -rf "$WORK/conc-cache"
    for m in "${CONC_MODES[@]}"; do
        read -r name envs <<<"$m"
        run_cmd "conc.py.$name" 90 LD_PRELOAD="$LIB" TCFUSE_STATS=1 TCFUSE_CACHE_DIR="$WORK/conc-cache" $envs -- \
            "$PY" tests/gpu/concurrency.py "$WORK/res/conc.py.$name.pt"; rc=$?
        [[ $rc == 125 ]] && continue
        if [[ $rc != 0 ]]; then bad+="Python $name: rc $rc ($(last_line "$LOGS/conc.py.$name.log")); "; continue; fi
        "$PY" tests/gpu/fuse_chains.py --compare "$WORK/res/conc.py.plain.pt" "$WORK/res/conc.py.$name.pt" \
            >"$LOGS/conc.py.$name.compare.log" 2>&1
        local c; c=$(tail -n 1 "$LOGS/conc.py.$name.compare.log")
        if [[ $c != *" 0 failed" ]]; then bad+="Python $name: $c; "
        else detail+="Python $name: ${c#fuse_chains: }, $(fuse_groups "$LOGS/conc.py.$name.log" || true) groups fused; "; fi
    done
    if [[ -n $bad ]]; then report FAIL "${bad%; } (${detail%; })"
    else report PASS "${detail%; }"; fi
}

# ---- forks --------------------------------------------------------------------------

# fork_compare NAME: logs/NAME.plain.log and logs/NAME.{observe,fuse}.log end alike: the
# same status and sorted output (tcfuse's lines and run_cmd's dropped, and pids: Python's
# warning about fork in a threaded process names the process).
fork_lines() { grep -v -e '^#' -e '^tcfuse:' "$1" | sed 's/(pid=[0-9]*)/(pid=N)/' | sort; }
fork_compare() {
    local name=$1 m rc0 rc
    fork_lines "$LOGS/$name.plain.log" >"$WORK/res/$name.plain.txt"
    rc0=$(sed -n 's/^# rc=\([0-9]*\).*/\1/p' "$LOGS/$name.plain.log")
    [[ $rc0 == 125 ]] && return   # not run: report names it
    if [[ $rc0 != 0 || ! -s $WORK/res/$name.plain.txt ]]; then
        FORK_BAD+="$name: the plain run failed (rc $rc0: $(last_line "$LOGS/$name.plain.log")); "
        return
    fi
    for m in $FORK_MODES; do
        fork_lines "$LOGS/$name.$m.log" >"$WORK/res/$name.$m.txt"
        rc=$(sed -n 's/^# rc=\([0-9]*\).*/\1/p' "$LOGS/$name.$m.log")
        if [[ $rc == 125 ]]; then :
        elif [[ $rc != "$rc0" ]]; then FORK_BAD+="$name $m: rc $rc, plain $rc0; "
        elif ! cmp -s "$WORK/res/$name.plain.txt" "$WORK/res/$name.$m.txt"; then FORK_BAD+="$name $m: output differs; "
        else FORK_OK=$((FORK_OK + 1)); fi
    done
}

FORK_MODES="observe fuse graph full"
suite_forks() {
    FORK_BAD="" FORK_OK=0
    local mode m
    if need_bin forks; then
        for mode in before after; do
            run_cmd "forks.c.$mode.plain" 60 -- "$WORK/bin/forks" "$mode"
            for m in $FORK_MODES; do
                run_cmd "forks.c.$mode.$m" 60 LD_PRELOAD="$LIB" TCFUSE_MODE=$m TCFUSE_STATS=1 \
                    TCFUSE_CACHE_DIR="$WORK/forks-cache.$mode" -- "$WORK/bin/forks" "$mode"
            done
            fork_compare "forks.c.$mode"
        done
    else
        FORK_BAD+="forks.cu did not build: $(last_line "$LOGS/build-forks.log"); "
    fi
    for mode in before after loader; do
        run_cmd "forks.py.$mode.plain" 90 -- "$PY" tests/gpu/forks.py "$mode"
        for m in $FORK_MODES; do
            rm -rf "$WORK/forks-cache.py.$mode"  # empty: the worker compiles when `after` forks
            run_cmd "forks.py.$mode.$m" 90 LD_PRELOAD="$LIB" TCFUSE_MODE=$m TCFUSE_STATS=1 \
                TCFUSE_CACHE_DIR="$WORK/forks-cache.py.$mode" -- "$PY" tests/gpu/forks.py "$mode"
        done
        fork_compare "forks.py.$mode"
    done
    if [[ -z $FORK_BAD ]]; then report PASS "$FORK_OK runs (C before/after, Python before/after/DataLoader; $FORK_MODES) end as plain does"
    else report FAIL "${FORK_BAD%; } ($FORK_OK as plain)"; fi
}

# ---- exits --------------------------------------------------------------------------

suite_exits() {
    local cache=$WORK/exits-cache mode bad="" ok=0 rc0 rc held EXIT_DETAIL=
    rm -rf "$cache"
    run_cmd exits.warm 90 "${FUSE_ENV[@]}" TCFUSE_CACHE_DIR="$cache" TCFUSE_COMPILE_WAIT=1 -- \
        "$PY" tests/gpu/exits.py return; rc=$?
    if [[ $rc != 0 ]]; then report ERROR "warm-up run failed (rc $rc): $(last_line "$LOGS/exits.warm.log")"; return; fi
    for mode in return atexit signal c-handler _exit kill; do
        run_cmd "exits.$mode.plain" 60 -- "$PY" tests/gpu/exits.py "$mode"; rc0=$?
        run_cmd "exits.$mode.fuse" 60 "${FUSE_ENV[@]}" TCFUSE_CACHE_DIR="$cache" TCFUSE_HOLD_ALL=1 -- \
            "$PY" tests/gpu/exits.py "$mode"; rc=$?
        if [[ $rc0 == 125 || $rc == 125 ]]; then EXIT_DETAIL+="$mode not run; "; continue; fi
        grep -v -e '^#' -e '^tcfuse:' "$LOGS/exits.$mode.plain.log" >"$WORK/res/exits.$mode.plain.txt"
        grep -v -e '^#' -e '^tcfuse:' "$LOGS/exits.$mode.fuse.log" >"$WORK/res/exits.$mode.fuse.txt"
        held=$(sed -n 's/.*held *\([0-9]*\) windows.*/\1/p' "$LOGS/exits.$mode.fuse.log" | tail -n 1)
        if [[ $rc != "$rc0" ]]; then bad+="$mode: rc $rc, plain $rc0; "
        elif ! cmp -s "$WORK/res/exits.$mode.plain.txt" "$WORK/res/exits.$mode.fuse.txt"; then bad+="$mode: output differs; "
        else ok=$((ok + 1)); fi
        EXIT_DETAIL+="$mode rc $rc${held:+ held $held}; "
    done
    local us plain_rcs="" fuse_rcs=""
    # plain with the allocator fuse mode selects: its own teardown at exit is what it is.
    # These runs end in 4-10 s; plain itself can hang when the alarm comes while CUDA is
    # being set up (a 30 ms alarm, 2026-11-28), so each gets 30 s, and a plain hang leaves
    # the suite's budget time for the runs after it.
    for us in 30000 120000 400000; do
        run_cmd "exits.alarm$us.plain" 30 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync -- \
            "$PY" tests/gpu/exits.py alarm "$us"; rc0=$?
        run_cmd "exits.alarm$us.fuse" 30 "${FUSE_ENV[@]}" TCFUSE_CACHE_DIR="$cache" TCFUSE_HOLD_ALL=1 -- \
            "$PY" tests/gpu/exits.py alarm "$us"; rc=$?
        if [[ $rc0 == 125 || $rc == 125 ]]; then
            plain_rcs+="- " fuse_rcs+="- "; continue   # not run: report names it
        fi
        plain_rcs+="$rc0 " fuse_rcs+="$rc "
        # the handler's exit(14) is the only good end: a hang, or a crash such as the abort
        # of a process whose exit ran on another thread (rc 134), fails unless plain did
        # the same in its run beside it
        if [[ $rc != 14 && $rc != "$rc0" ]]; then
            if [[ $rc == 124 || $rc == 137 ]]; then bad+="alarm $us us: hung, plain did not; "
            else bad+="alarm $us us: rc $rc, plain $rc0; "; fi
        fi
    done
    if [[ -z $bad ]]; then report PASS "$ok of 6 ends as plain (${EXIT_DETAIL%; }); exit from SIGALRM: plain rc $plain_rcs, fuse rc $fuse_rcs"
    else report FAIL "${bad%; } (${EXIT_DETAIL%; }; alarm plain $plain_rcs fuse $fuse_rcs)"; fi
}
