#!/usr/bin/env bats
# Observe mode (the default) changes nothing: for every scenario, the program prints the
# same and exits the same, and the stub sees the same calls, in the same order, with the
# same arguments and parameter bytes, once each (tcfuse's own queries aside).

load helpers

# compare_all LABEL CMDLINE...: compare_runs for each command line (word-split), and
# fail at the end naming every one that differed.
compare_all() {
    local label="$1" line failed=() i=0
    shift
    for line in "$@"; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        compare_runs "$label-$i" $line || failed+=("$line")
    done
    if [ "${#failed[@]}" -gt 0 ]; then
        printf 'differs with tcfuse: %s\n' "${failed[@]}"
        return 1
    fi
}

@test "observe: every launch form (kernelParams, extra, Ex, attrs, streams, rejected)" {
    compare_all launch "$PROGS/scen launch"
}

@test "observe: window shapes (windows, repeat, sizecap, streams, ops)" {
    compare_all shapes "$PROGS/scen windows" "$PROGS/scen repeat" "$PROGS/scen sizecap 10" \
        "$PROGS/scen streams" "$PROGS/scen ops"
}

@test "observe: the same shapes with a small window cap and with idle closes" {
    TCFUSE_WINDOW_MAX=2 compare_all cap "$PROGS/scen windows" "$PROGS/scen ops" \
        "$PROGS/scen sizecap 9"
    TCFUSE_IDLE_US=1 compare_all idle "$PROGS/scen windows" "$PROGS/scen idle 20"
}

@test "observe: every boundary call passes through once" {
    local x lines=()
    for x in "${BOUNDARIES[@]}"; do lines+=("$PROGS/scen boundary $x"); done
    compare_all boundary "${lines[@]}"
}

@test "observe: every harmless query passes through once" {
    local x lines=()
    for x in "${QUERIES[@]}"; do lines+=("$PROGS/scen query $x"); done
    compare_all query "${lines[@]}"
}

@test "observe: allocation and free sequences, async and from a pool" {
    compare_all alloc "$PROGS/alloc seq" "$PROGS/alloc errors" "$PROGS/alloc reuse"
}

@test "observe: every lookup method (cuGetProcAddress v1/v2, flags, dlsym, _ptsz)" {
    local m lines=()
    for m in "${LOOKUPS[@]}"; do
        lines+=("$PROGS/scen -l $m launch" "$PROGS/scen -l $m windows" "$PROGS/alloc -l $m seq"
                "$PROGS/scen -l $m boundary cuStreamSynchronize")
    done
    compare_all methods "${lines[@]}"
}

@test "observe: a program linked with -lcuda, legacy and per-thread ABI names" {
    compare_all linked "$PROGS/linked" "$PROGS/linked_ptsz"
}

@test "observe: tcfuse's own driver queries are only the documented ones" {
    # tcfuse may ask names, parameter layouts, the current context and entry points;
    # anything else it calls on its own would be a side effect on the application.
    tcf own "$PROGS/scen" launch
    run bash -c "grep '^\[tcfuse\] ' '$T/own.log' | cut -d' ' -f2 | sort -u"
    echo "$output"
    for call in $output; do
        case "$call" in
        cuGetProcAddress|cuGetProcAddress_v2|cuKernelGetName|cuFuncGetName|\
        cuKernelGetParamInfo|cuFuncGetParamInfo|cuCtxGetCurrent|cuDriverGetVersion|\
        cuGetErrorString|cuGetErrorName) ;;
        *) echo "unexpected call by tcfuse: $call"; return 1 ;;
        esac
    done
}

@test "observe: a multithreaded program gives the same calls (sorted) and output" {
    local run lookup mode
    for run in "gpa streams" "gpa-ptds streams" "gpa-ptds ptds"; do
        read -r lookup mode <<<"$run"
        base "mt-$lookup-$mode.base" "$PROGS/mt" -l "$lookup" "$mode" 4 25
        tcf "mt-$lookup-$mode.tcf" "$PROGS/mt" -l "$lookup" "$mode" 4 25
        same_text "mt $run: stdout" "$T/mt-$lookup-$mode.base.out" "$T/mt-$lookup-$mode.tcf.out"
        work_log "$T/mt-$lookup-$mode.base.log" | sort >"$T/mt-$lookup-$mode.base.sorted"
        work_log "$T/mt-$lookup-$mode.tcf.log" | sort >"$T/mt-$lookup-$mode.tcf.sorted"
        same_text "mt $run: driver calls" "$T/mt-$lookup-$mode.base.sorted" \
            "$T/mt-$lookup-$mode.tcf.sorted"
        [ "$(grep -Ec '^cuLaunchKernel(_ptsz)? .* rc=0$' "$T/mt-$lookup-$mode.tcf.log")" = 100 ]
    done
}
