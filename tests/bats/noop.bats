#!/usr/bin/env bats
# A process that never touches CUDA runs as it would without tcfuse: same output, same
# exit status, nothing from tcfuse, and not one call reaches the driver.

load helpers

# no_cuda NAME CMD...: the run with tcfuse equals the run without, and is silent.
no_cuda() {
    local name="$1"
    shift
    base "$name.base" "$@"
    tcf "$name.tcf" "$@"
    [ "$(cat "$T/$name.base.rc")" = "$(cat "$T/$name.tcf.rc")" ] ||
        { echo "$name: exit status differs"; return 1; }
    same_text "$name: stdout" "$T/$name.base.out" "$T/$name.tcf.out"
    same_text "$name: stderr" "$T/$name.base.err" "$T/$name.tcf.err"
    [ ! -s "$T/$name.tcf.log" ] || { echo "$name: the driver was called:"; cat "$T/$name.tcf.log"; return 1; }
}

@test "noop: a program that never touches CUDA prints the same and calls nothing" {
    no_cuda noop "$PROGS/noop"
    [ "$(cat "$T/noop.tcf.out")" = "noop: ok" ]
    [ ! -s "$T/noop.tcf.err" ]
}

@test "noop: dlsym of libc symbols through tcfuse's dlsym gives glibc's answers" {
    no_cuda dlsym "$PROGS/noop" dlsym
    run cat "$T/dlsym.tcf.out"
    [[ "$output" == *"RTLD_DEFAULT strlen: same"* ]]
    [[ "$output" == *"RTLD_NEXT strlen: same"* ]]
    [[ "$output" == *"libc strlen: same"* ]]
    [[ "$output" == *"RTLD_DEFAULT no_such_symbol_xyz: null"* ]]
    [[ "$output" == *"dlerror after miss: set"* ]]
}

@test "noop: fork and exit status pass through" {
    no_cuda fork "$PROGS/noop" fork
    no_cuda false /bin/false
    [ "$(cat "$T/false.tcf.rc")" = 1 ]
    no_cuda shell /bin/sh -c 'echo out; echo err >&2; exit 3'
    [ "$(cat "$T/shell.tcf.rc")" = 3 ]
}

@test "noop: silent in both modes" {
    local mode
    for mode in off observe; do
        TCFUSE_MODE=$mode no_cuda "noop-$mode" "$PROGS/noop"
        [ ! -s "$T/noop-$mode.tcf.err" ]
    done
}

@test "noop: a bad TCFUSE_ value in a process without CUDA changes nothing but a warning" {
    TCFUSE_WINDOW_MAX=banana tcf bad "$PROGS/noop"
    [ "$status" = 0 ]
    [ "$(cat "$T/bad.out")" = "noop: ok" ]
    # A warning is allowed (and must carry the prefix); nothing else may be printed.
    run grep -v '^tcfuse: ' "$T/bad.err"
    [ -z "$output" ]
}
