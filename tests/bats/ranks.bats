#!/usr/bin/env bats
# Several processes under one launcher, sharing one disk cache, as DDP's ranks under
# `tcfuse run -- torchrun ...` or several servers on one GPU do (issue 15's CPU part):
# `tcfuse run --mode fuse` starts a shell that starts 6 fusechain processes at once
# (tests/stub/progs/fusechain.c, `async`: PyTorch's mul and add fused, stream-ordered
# frees handed over), all on one cache directory that is empty at the start, every compile
# waited for so that the ranks race to compile, check and store the same kernels. Each
# rank must be preloaded (its own summary), end as plain does, fuse its chain, and leave
# the cache whole: every entry verifies, no temporary is left behind, and the next process
# finds every kernel there (nothing compiled).

load helpers
bats_require_minimum_version 1.5.0

setup() {
    fusechain_setup || return 1
    [ -x "$TCFUSE" ] || { echo "missing $TCFUSE: run make" >&2; return 1; }
    export FAKECUDA_MEM=1 TCFUSE_CACHE_DIR="$T/cache" TCFUSE_NVRTC="$NVRTC"
}

@test "ranks: 6 processes under one launcher share one empty cache, each fused and equal to plain" {
    need_nvrtc
    base plain "$PROGS/fusechain" 4 async
    [ "$status" = 0 ]
    local r
    # the launcher: a shell that starts the ranks and waits for them, as torchrun does
    TCFUSE_COMPILE_WAIT=1 "$TCFUSE" run --mode fuse --stats -- sh -c '
        for r in 1 2 3 4 5 6; do
            FAKECUDA_LOG="$0/rank$r.log" "$1" 4 async >"$0/rank$r.out" 2>"$0/rank$r.err" &
        done
        wait' "$T" "$PROGS/fusechain"
    for r in 1 2 3 4 5 6; do
        same_text "rank $r stdout" "$T/plain.out" "$T/rank$r.out"
        expect_line "$T/rank$r.err" '^tcfuse: stats: mode fuse, pid [0-9]+$'
        expect_line "$T/rank$r.err" '^tcfuse: +fused +3 groups'
        run python3 "$BATS_TEST_DIRNAME/stub_liveness.py" "$T/rank$r.log"
        [ "$status" = 0 ] || { echo "rank $r: $output"; return 1; }
    done
    # six distinct processes, each preloaded by the launcher
    [ "$(cat "$T"/rank*.err | sed -n 's/^tcfuse: stats: mode fuse, pid //p' | sort -u | wc -l)" = 6 ]
    run "$TCFUSE" cache verify
    [ "$status" = 0 ]
    [[ "$output" =~ ^verify:\ [1-9][0-9]*\ entries,\ 0\ corrupt$ ]] || { echo "$output"; return 1; }
    # nothing but entries in the directory: no temporary of a writer that lost a race
    [ -z "$(ls -A "$T/cache" | grep -v '\.tcf$')" ] || { ls -A "$T/cache"; return 1; }
    # the next process finds every kernel and every verdict on disk
    TCFUSE_MODE=fuse TCFUSE_COMPILE_WAIT=1 TCFUSE_STATS=1 tcf next "$PROGS/fusechain" 4 async
    same_text "next stdout" "$T/plain.out" "$T/next.out"
    expect_line "$T/next.err" '^tcfuse: +fused +3 groups'
    expect_line "$T/next.err" '^tcfuse: +kernels +[0-9]+ generated: 0 compiled'
}
