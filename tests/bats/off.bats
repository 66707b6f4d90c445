#!/usr/bin/env bats
# TCFUSE_MODE=off is a true no-op: with the library preloaded, every scenario makes
# exactly the driver calls it makes without it (the stub's log is identical once the
# "[tcfuse] " tag is removed from the lookups tcfuse forwards), prints the same, and
# tcfuse adds no call of its own and prints nothing.

load helpers

setup() {
    common_setup
    export TCFUSE_MODE=off
}

# off_same NAME CMD...
off_same() {
    local name="$1" ok=0
    shift
    base "$name.base" "$@"
    tcf "$name.tcf" "$@"
    [ "$(cat "$T/$name.base.rc")" = "$(cat "$T/$name.tcf.rc")" ] || { echo "$name: exit status"; ok=1; }
    same_text "$name: stdout" "$T/$name.base.out" "$T/$name.tcf.out" || ok=1
    if [ -n "${ALLOW_TCFUSE_LINES:-}" ]; then
        grep -v '^tcfuse: ' "$T/$name.tcf.err" >"$T/$name.tcf.err.app" || true
        same_text "$name: stderr" "$T/$name.base.err" "$T/$name.tcf.err.app" || ok=1
    else
        same_text "$name: stderr" "$T/$name.base.err" "$T/$name.tcf.err" || ok=1
    fi
    untagged_log "$T/$name.base.log" >"$T/$name.base.all"
    untagged_log "$T/$name.tcf.log" >"$T/$name.tcf.all"
    same_text "$name: every driver call" "$T/$name.base.all" "$T/$name.tcf.all" || ok=1
    if grep '^\[tcfuse\] ' "$T/$name.tcf.log" | grep -Ev '^\[tcfuse\] cuGetProcAddress(_v2)? ' |
        head -5 | grep .; then
        echo "$name: tcfuse made driver calls of its own in off mode (above)"
        ok=1
    fi
    return $ok
}

@test "off: scenarios make the same calls and print the same" {
    local failed=0 line i=0
    for line in "scen launch" "scen windows" "scen repeat" "scen streams" "scen ops" \
        "scen boundary cuFakeUnknownCall" "scen query cuKernelGetName" \
        "alloc seq" "alloc errors" "lookup v2" "lookup v1" "lookup dlsym"; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        off_same "off-$i" $PROGS/$line || { echo "differs: $line"; failed=1; }
    done
    [ "$failed" = 0 ]
}

@test "off: every lookup method and the linked programs" {
    local failed=0 m
    for m in "${LOOKUPS[@]}"; do
        off_same "off-$m" "$PROGS/scen" -l "$m" windows || { echo "differs: -l $m"; failed=1; }
    done
    off_same off-linked "$PROGS/linked" || failed=1
    off_same off-linked-ptsz "$PROGS/linked_ptsz" || failed=1
    [ "$failed" = 0 ]
}

@test "off: with TCFUSE_STATS and TCFUSE_TRACE set, the calls are the same and nothing is seen" {
    # Whether off mode prints a (zero) summary is not specified; it may not see launches.
    ALLOW_TCFUSE_LINES=1 TCFUSE_STATS=1 TCFUSE_TRACE="$T/off.trace" \
        off_same off-stats "$PROGS/scen" windows
    ! grep -Eq '^tcfuse: +launches +[1-9]' "$T/off-stats.tcf.err"
    if [ -s "$T/off.trace" ]; then
        # A trace in off mode may hold the header and end, but no event.
        ! grep -q '"ev":"\(launch\|window\|kernel\)"' "$T/off.trace"
    fi
}
