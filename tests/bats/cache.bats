#!/usr/bin/env bats
# `tcfuse cache ls|clear|verify|dir` on a temporary cache directory. Entries are written
# by the unit-test binary (`build/tests/test_cache put DIR KEY KIND TEXT`), which stores
# them through the library's own tcf_cache_put, exactly as the library would.

load helpers
bats_require_minimum_version 1.5.0

PUT="$ROOT/build/tests/test_cache"

setup() {
    common_setup
    [ -x "$TCFUSE" ] || { echo "missing $TCFUSE: run make" >&2; return 1; }
    # `make bats` builds the library and the stub, not the unit tests: build the one we need.
    [ -x "$PUT" ] || make -s -C "$ROOT" build/tests/test_cache >&2 || return 1
    unset XDG_CACHE_HOME
    export TCFUSE_CACHE_DIR="$T/cache"
}

# put KEY KIND TEXT: one entry in $TCFUSE_CACHE_DIR.
put() { "$PUT" put "$TCFUSE_CACHE_DIR" "$@"; }

# three entries: two cubins and a verdict.
three() {
    put 00000000000000c2 cubin "a cubin"
    put 00000000000000a1 verdict "ok"
    put 0123456789abcdef cubin "another cubin"
}

@test "cache: dir follows TCFUSE_CACHE_DIR, XDG_CACHE_HOME, then HOME, creating it 0700" {
    run --separate-stderr "$TCFUSE" cache dir
    [ "$status" = 0 ]
    [ "$output" = "$T/cache" ]
    [ -z "$stderr" ]
    [ "$(stat -c %a "$T/cache")" = 700 ]
    unset TCFUSE_CACHE_DIR
    XDG_CACHE_HOME="$T/xdg" run "$TCFUSE" cache dir
    [ "$status" = 0 ]
    [ "$output" = "$T/xdg/tcfuse" ]
    [ "$(stat -c %a "$T/xdg")" = 700 ]
    HOME="$T/home" run "$TCFUSE" cache dir
    [ "$status" = 0 ]
    [ "$output" = "$T/home/.cache/tcfuse" ]
    HOME="$T/home" XDG_CACHE_HOME=relative run "$TCFUSE" cache dir
    [ "$output" = "$T/home/.cache/tcfuse" ]
}

@test "cache: ls lists every entry in key order, then a total" {
    run "$TCFUSE" cache ls
    [ "$status" = 0 ]
    [ "$output" = "total: 0 entries, 0 bytes, 0 corrupt" ]
    three
    run --separate-stderr "$TCFUSE" cache ls
    [ "$status" = 0 ]
    [ -z "$stderr" ]
    [ "${#lines[@]}" = 4 ]
    [[ "${lines[0]}" =~ ^00000000000000a1\ +verdict\ +2\ +ok$ ]]
    [[ "${lines[1]}" =~ ^00000000000000c2\ +cubin\ +7\ +ok$ ]]
    [[ "${lines[2]}" =~ ^0123456789abcdef\ +cubin\ +13\ +ok$ ]]
    [ "${lines[3]}" = "total: 3 entries, 22 bytes, 0 corrupt" ]
}

@test "cache: verify passes, then fails naming an entry whose payload was changed" {
    three
    run "$TCFUSE" cache verify
    [ "$status" = 0 ]
    [ "$output" = "verify: 3 entries, 0 corrupt" ]
    # one byte of the payload (which starts at offset 32)
    printf 'X' | dd of="$T/cache/00000000000000c2.tcf" bs=1 seek=33 conv=notrunc status=none
    run --separate-stderr "$TCFUSE" cache verify
    [ "$status" = 1 ]
    [ "${lines[0]}" = "CORRUPT $T/cache/00000000000000c2.tcf" ]
    [ "${lines[1]}" = "verify: 3 entries, 1 corrupt" ]
    run "$TCFUSE" cache ls
    [ "$status" = 0 ]
    [[ "${lines[1]}" =~ ^00000000000000c2\ +\?\ +47\ +CORRUPT$ ]]
    [ "${lines[3]}" = "total: 3 entries, 62 bytes, 1 corrupt" ]
    # a truncated entry and a link named like one are corrupt too
    truncate -s 20 "$T/cache/00000000000000a1.tcf"
    ln -s 0123456789abcdef.tcf "$T/cache/1111111111111111.tcf"
    run "$TCFUSE" cache verify
    [ "$status" = 1 ]
    [ "${#lines[@]}" = 4 ]
    [ "${lines[3]}" = "verify: 4 entries, 3 corrupt" ]
}

@test "cache: many processes writing the same keys at once leave whole entries and no temporaries" {
    # What ranks sharing one cache do (several processes on one GPU, DDP's ranks): 16
    # writers, each putting the same 4 keys 25 times with payloads of its own, while
    # verify reads them over and over; every read must find a whole entry.
    local i k r bad=0 pids=()
    for i in $(seq 1 16); do
        (
            for r in $(seq 1 25); do
                for k in 00000000000000a1 00000000000000b2 00000000000000c3 00000000000000d4; do
                    put "$k" cubin "writer $i round $r $(printf '%*s' $((i * 37 % 400)) '' | tr ' ' x)" || exit 1
                done
            done
        ) &
        pids+=($!)
    done
    for r in $(seq 1 20); do
        "$TCFUSE" cache verify >"$T/verify.$r" 2>&1 || bad=$((bad + 1))
    done
    for i in "${pids[@]}"; do wait "$i" || { echo "a writer failed"; return 1; }; done
    [ "$bad" = 0 ] || { cat "$T"/verify.*; return 1; }
    run "$TCFUSE" cache verify
    [ "$status" = 0 ]
    [ "$output" = "verify: 4 entries, 0 corrupt" ]
    # four whole cubins, and nothing else in the directory (no temporary left behind)
    run "$TCFUSE" cache ls
    [ "$status" = 0 ]
    [ "$(printf '%s\n' "${lines[@]:0:4}" | grep -cE '^00000000000000[a-d][1-4] +cubin +[0-9]+ +ok$')" = 4 ]
    [[ "${lines[4]}" =~ ^total:\ 4\ entries,\ [0-9]+\ bytes,\ 0\ corrupt$ ]]
    [ "$(ls -A "$T/cache" | wc -l)" = 4 ]
}

@test "cache: clear removes the entries and nothing else" {
    three
    touch "$T/cache/README" "$T/cache/00000000000000C2.tcf" "$T/cache/0123.tcf"
    run "$TCFUSE" cache clear
    [ "$status" = 0 ]
    [ "$output" = "removed 3 entries from $T/cache" ]
    [ "$(ls "$T/cache" | sort | tr '\n' ' ')" = "00000000000000C2.tcf 0123.tcf README " ]
    run "$TCFUSE" cache clear
    [ "$output" = "removed 0 entries from $T/cache" ]
}

@test "cache: an unsafe directory is refused, saying why" {
    mkdir -m 0777 "$T/open"
    chmod 0777 "$T/open" # whatever the umask
    for sub in dir ls verify clear; do
        TCFUSE_CACHE_DIR="$T/open" run --separate-stderr "$TCFUSE" cache $sub
        [ "$status" = 1 ]
        [ -z "$output" ]
        [ "$stderr" = "tcfuse cache: cache directory $T/open is writable by group or others (mode 0777)" ]
    done
    mkdir -m 0700 "$T/real"
    ln -s real "$T/link"
    TCFUSE_CACHE_DIR="$T/link" run --separate-stderr "$TCFUSE" cache dir
    [ "$status" = 1 ]
    [ "$stderr" = "tcfuse cache: cache directory $T/link is a symbolic link" ]
    # under TCFUSE_VERBOSE=0 too: the reason is what the user asked for
    TCFUSE_VERBOSE=0 TCFUSE_CACHE_DIR="$T/link" run --separate-stderr "$TCFUSE" cache dir
    [ "$status" = 1 ]
    [ -n "$stderr" ]
    touch "$T/file"
    TCFUSE_CACHE_DIR="$T/file" run --separate-stderr "$TCFUSE" cache ls
    [ "$status" = 1 ]
    [[ "$stderr" == *"$T/file is not a directory"* ]]
}

@test "cache: bad usage exits 2 with the help; help cache prints it" {
    run --separate-stderr "$TCFUSE" cache
    [ "$status" = 2 ]
    [[ "$stderr" == *"usage: tcfuse cache ls|clear|verify|dir"* ]]
    run --separate-stderr "$TCFUSE" cache nuke
    [ "$status" = 2 ]
    [[ "$stderr" == *"no subcommand 'nuke'"* ]]
    run --separate-stderr "$TCFUSE" cache ls extra
    [ "$status" = 2 ]
    [[ "$stderr" == *"takes no arguments"* ]]
    run "$TCFUSE" help cache
    [ "$status" = 0 ]
    [[ "$output" == *"verify"* ]]
    run "$TCFUSE" --help
    [[ "$output" == *"cache ls|clear|verify|dir"* ]]
}
