#!/usr/bin/env bats
# The tcfuse command: `tcfuse run [--mode M] [--stats] [--trace F] -- CMD...` preloads
# libtcfuse.so into CMD, and `tcfuse report FILE` reads a trace back.

load helpers
bats_require_minimum_version 1.5.0

setup() {
    common_setup
    [ -x "$TCFUSE" ] || { echo "missing $TCFUSE: run make" >&2; return 1; }
}

# cli NAME ARGS...: runs build/tcfuse ARGS with the stub log in $T/NAME.log.
cli() { base "$@"; }

@test "cli: run --stats -- prog prints the summary and leaves the program alone" {
    base plain "$PROGS/scen" windows
    cli st "$TCFUSE" run --stats -- "$PROGS/scen" windows
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/st.out"
    expect_line "$T/st.err" '^tcfuse: stats: mode observe, pid [0-9]+$'
    expect_line "$T/st.err" '^tcfuse: +launches +12 \(4 distinct kernels\)$'
    expect_line "$T/st.err" '^tcfuse: +windows +5 \(launches per window: median 2, max 5\)$'
    work_log "$T/plain.log" >"$T/plain.work"
    work_log "$T/st.log" >"$T/st.work"
    same_text "driver calls" "$T/plain.work" "$T/st.work"
    cli short "$TCFUSE" run -s -- "$PROGS/scen" windows
    expect_line "$T/short.err" '^tcfuse: +launches +12 '
}

@test "cli: run without options is observe mode, silent" {
    cli q "$TCFUSE" run -- "$PROGS/scen" windows
    [ "$status" = 0 ]
    [ ! -s "$T/q.err" ] || { cat "$T/q.err"; return 1; }
    grep -qx done "$T/q.out"
}

@test "cli: run --mode off makes exactly the program's calls" {
    base plain "$PROGS/scen" launch
    cli off "$TCFUSE" run --mode off --stats -- "$PROGS/scen" launch
    [ "$status" = 0 ]
    same_text stdout "$T/plain.out" "$T/off.out"
    untagged_log "$T/plain.log" >"$T/plain.all"
    untagged_log "$T/off.log" >"$T/off.all"
    same_text "driver calls" "$T/plain.all" "$T/off.all"
    ! grep -Eq '^tcfuse: +launches +[1-9]' "$T/off.err"
}

@test "cli: run --trace writes a valid trace that report reads" {
    cli tr "$TCFUSE" run --trace "$T/run.trace" -- "$PROGS/scen" windows
    [ "$status" = 0 ]
    trace_valid "$T/run.trace"
    [ "$(python3 "$CHECK" windows "$T/run.trace" | wc -l)" = 5 ]
    run "$TCFUSE" report "$T/run.trace"
    [ "$status" = 0 ]
    [ -n "$output" ]
    [[ "$output" == *ka_i4_p8* ]] || { echo "report does not name the kernels:"; echo "$output"; return 1; }
}

@test "cli: report on a missing or broken trace fails cleanly" {
    run "$TCFUSE" report "$T/none.trace"
    [ "$status" -ne 0 ]
    [ "$status" -lt 128 ]
    printf 'not json\n{"ev":\n' >"$T/bad.trace"
    run "$TCFUSE" report "$T/bad.trace"
    [ "$status" -lt 128 ]
}

@test "cli: run passes the exit status and finds commands on PATH" {
    run "$TCFUSE" run -- sh -c 'exit 7'
    [ "$status" = 7 ]
    run -127 "$TCFUSE" run -- "$T/no-such-command"
    run "$TCFUSE" run --stats -- "$PROGS/noop"
    [ "$status" = 0 ]
    [[ "$output" == *"noop: ok"* ]]
}

@test "cli: run puts libtcfuse.so first in LD_PRELOAD and keeps what was there" {
    run "$TCFUSE" run -- sh -c 'echo "$LD_PRELOAD"'
    [ "$status" = 0 ]
    [[ "$output" == */libtcfuse.so ]] || { echo "LD_PRELOAD=$output"; return 1; }
    LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 run "$TCFUSE" run -- sh -c 'echo "$LD_PRELOAD"'
    [[ "$output" == */libtcfuse.so[\ :]/lib/x86_64-linux-gnu/libm.so.6 ]] ||
        { echo "LD_PRELOAD=$output"; return 1; }
}

@test "cli: run --stats on a multithreaded program" {
    cli mt "$TCFUSE" run --stats -- "$PROGS/mt" streams 4 25
    [ "$status" = 0 ]
    expect_line "$T/mt.err" '^tcfuse: +launches +100 '
    expect_line "$T/mt.err" '^tcfuse: +windows +4 \(launches per window: median 25, max 25\)$'
}

# Each row: the exit status wanted, then the arguments (shell words; $T expands).
BAD_ARGS='
2 bogus
2 -x
2 --bogus
2 help bogus
2 help run extra
2 -V extra
2 --version extra
2 --help run extra
2 run
2 run --
2 run -m
2 run --mode
2 run --mode turbo -- true
2 run --bogus -- true
2 run --trace
2 run --trace "" -- true
2 report
2 report --top
2 report --top x f
2 report --top 0 f
2 report --top -5 f
2 report --top 99999999999999999999 f
2 report --chrome
2 report --bogus f
2 report a b
1 report $T/none
1 report $T/bad.trace
1 report $T/empty
1 report $T/dir
1 report --chrome $T/out.json $T/bad.trace
1 report --chrome /nonexistent/x.json tests/fixtures/sample-observe.jsonl
2 plan
2 plan --window
2 plan --window x f
2 plan --window -1 f
2 plan --bogus f
2 plan a b
1 plan $T/none
1 plan $T/bad.trace
1 plan $T/empty
1 plan $T/dir
1 plan --window 999999 tests/fixtures/gelu-window.jsonl
2 cache nuke
2 cache ls extra
2 cache dir x y
2 cache verify --all
2 config extra
2 config --bogus
'

@test "cli: bad arguments to every subcommand: one line saying what is wrong, a non-zero exit, no crash" {
    mkdir "$T/dir"
    printf 'not json\n{"ev":\n' >"$T/bad.trace"
    : >"$T/empty"
    local want args bad=() n=0
    while read -r want args; do
        [ -n "$want" ] || continue
        eval "set -- $args"
        split "$TCFUSE" "$@"
        n=$((n + 1))
        local lines; lines=$(wc -l <"$T/err")
        if [ "$status" != "$want" ]; then bad+=("$args: exit $status, want $want")
        elif [ "$lines" != 1 ] || ! grep -q '^tcfuse' "$T/err"; then bad+=("$args: $lines lines on stderr: $(head -c 300 "$T/err")")
        elif [ "$want" = 2 ] && [ -s "$T/out" ]; then bad+=("$args: a usage error printed on stdout")
        fi
    done <<<"$BAD_ARGS"
    if [ "${#bad[@]}" -gt 0 ]; then printf '%s\n' "${bad[@]}"; false; fi
    echo "$n bad invocations" >&3
    # asking for nothing prints the usage instead
    split "$TCFUSE"
    [ "$status" = 2 ] && grep -q '^usage: tcfuse' "$T/err"
    split "$TCFUSE" cache
    [ "$status" = 2 ] && grep -q '^usage: tcfuse cache' "$T/err"
}
