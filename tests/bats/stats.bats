#!/usr/bin/env bats
# TCFUSE_STATS=1: the summary printed at exit counts launches, windows, keys, boundary
# reasons and allocator calls of scenarios whose shape is known (see the comments at the
# top of tests/stub/progs/*.c). TCFUSE_IDLE_US=0 (helpers.bash) keeps the shapes exact.

load helpers

setup() {
    common_setup
    export TCFUSE_STATS=1
}

# stats NAME CMD...: runs CMD under tcfuse; its stats are in $T/NAME.err.
stats() {
    tcf "$@"
    [ "$status" = 0 ] || { echo "exit status $status"; cat "$T/$1.out" "$T/$1.err"; return 1; }
    expect_line "$T/$1.err" '^tcfuse: stats: mode observe, pid [0-9]+$'
}

# expect_stat NAME WHAT ERE: the stats line "tcfuse:   WHAT ..." of run NAME matches
# "^tcfuse: +WHAT +ERE$".
expect_stat() {
    local line
    line="$(stats_line "$T/$1.err" "$2")"
    if ! grep -Eq -- "^tcfuse: +$2 +$3\$" <<<"$line"; then
        echo "stats line '$2' of $1 is '$line', expected /$3/; all of stderr:"
        cat "$T/$1.err"
        return 1
    fi
}

# expect_reason NAME REASON N: the boundaries line counts N windows for REASON; reasons
# that are driver calls match with or without _v2/_ptsz suffixes.
expect_reason() {
    local got
    got="$(stats_line "$T/$1.err" boundaries | sed -E 's/^tcfuse: +boundaries +//' | tr ',' '\n' |
        while read -r r n; do [ -n "$r" ] && echo "$(base_name "$r") $n"; done |
        awk -v r="$(base_name "$2")" '$1 == r { n += $2 } END { print n + 0 }')"
    [ "$got" = "$3" ] || {
        echo "$1: boundaries give $2 $got, expected $3:"
        stats_line "$T/$1.err" boundaries
        return 1
    }
}

@test "stats: every line carries the prefix and goes to stderr, only when asked" {
    stats windows "$PROGS/scen" windows
    run grep -v '^tcfuse: ' "$T/windows.err"
    [ -z "$output" ]
    TCFUSE_STATS=0 tcf quiet "$PROGS/scen" windows
    [ ! -s "$T/quiet.err" ]
    unset TCFUSE_STATS
    tcf unset "$PROGS/scen" windows
    [ ! -s "$T/unset.err" ]
}

@test "stats: a process torch.distributed's launcher started says its rank; one that did no GPU work says so in one line" {
    RANK=1 WORLD_SIZE=2 tcf ranked "$PROGS/scen" windows
    [ "$status" = 0 ]
    expect_line "$T/ranked.err" '^tcfuse: stats: mode observe, pid [0-9]+, rank 1 of 2$'
    expect_stat ranked launches '12 \(4 distinct kernels\)'
    # what is not a rank is left out
    RANK=x1 WORLD_SIZE=2 stats notrank "$PROGS/scen" windows
    # a launcher: the driver asked, nothing launched or allocated
    RANK=0 WORLD_SIZE=2 tcf asks "$PROGS/scen" asks
    [ "$status" = 0 ]
    expect_line "$T/asks.err" '^tcfuse: stats: mode observe, pid [0-9]+, rank 0 of 2$'
    expect_line "$T/asks.err" '^tcfuse:   no GPU work  no kernel launched, nothing allocated, copied or set$'
    ! grep -q 'launches  \|windows  \|boundaries  ' "$T/asks.err"
    expect_line "$T/asks.err" '^tcfuse:   hooks +[0-9]+ lookups'
    # in fuse mode the acting layer adds nothing either
    TCFUSE_MODE=fuse tcf asksfuse "$PROGS/scen" asks
    [ "$status" = 0 ]
    expect_line "$T/asksfuse.err" '^tcfuse: stats: mode fuse, pid [0-9]+$'
    ! grep -q 'decoded  \|held  \|fused  ' "$T/asksfuse.err"
}

@test "stats: windows closed by a sync, an event record, an unknown call and exit" {
    stats w "$PROGS/scen" windows
    expect_stat w launches '12 \(4 distinct kernels\)'
    expect_stat w windows '5 \(launches per window: median 2, max 5\)'
    expect_stat w keys '5 distinct; 0 of 5 windows repeated an earlier key'
    expect_reason w cuStreamSynchronize 2
    expect_reason w cuEventRecord 1
    expect_reason w cuFakeUnknownCall 1
    expect_reason w exit 1
}

@test "stats: fuse mode counts the launches it cannot decode and records none of them; a trace records them all" {
    # scen's kernels are not PyTorch's: nothing fuse mode could act on, so no window
    # records them (their recording was most of fuse mode's cost on such programs); the
    # launches, their kernels and the boundary calls are counted as in observe mode
    TCFUSE_MODE=fuse tcf lean "$PROGS/scen" windows
    [ "$status" = 0 ] || { cat "$T/lean.err"; return 1; }
    expect_line "$T/lean.err" '^tcfuse: stats: mode fuse, pid [0-9]+$'
    expect_stat lean launches '12 \(4 distinct kernels\)'
    expect_stat lean windows '0 \(launches per window: median 0, max 0\)'
    expect_stat lean calls '4 boundary calls from every thread .*'
    # the window keys are observe mode's alone
    ! stats_line "$T/lean.err" keys
    # a trace asks for every launch: the same windows as observe mode's
    TCFUSE_MODE=fuse TCFUSE_TRACE="$T/lean.jsonl" tcf leantr "$PROGS/scen" windows
    [ "$status" = 0 ]
    [ "$(grep -c '"ev":"launch"' "$T/lean.jsonl")" = 12 ]
    expect_stat leantr windows '5 \(launches per window: median 2, max 5\)'
    same_text "stdout" "$T/lean.out" "$T/leantr.out"
}

@test "stats: repeated windows share a key whatever their pointers and scalars" {
    stats r "$PROGS/scen" repeat
    expect_stat r launches '8 \(3 distinct kernels\)'
    expect_stat r windows '4 \(launches per window: median 2, max 2\)'
    expect_stat r keys '2 distinct; 2 of 4 windows repeated an earlier key'
    expect_reason r cuStreamSynchronize 4
}

@test "stats: TCFUSE_WINDOW_MAX closes windows at the size cap" {
    TCFUSE_WINDOW_MAX=4 stats cap "$PROGS/scen" sizecap 10
    expect_stat cap launches '10 \(1 distinct kernels?\)'
    expect_stat cap windows '3 \(launches per window: median 4, max 4\)'
    expect_reason cap size-cap 2
    expect_reason cap cuStreamSynchronize 1
    # The same program under the default cap: one window.
    stats nocap "$PROGS/scen" sizecap 10
    expect_stat nocap windows '1 \(launches per window: median 10, max 10\)'
}

@test "stats: one window per stream, all closed by one boundary" {
    stats s "$PROGS/scen" streams
    expect_stat s launches '6 \(2 distinct kernels\)'
    expect_stat s windows '3 \(launches per window: median 2, max 3\)'
    expect_reason s cuStreamSynchronize 3
}

@test "stats: harmless queries do not close windows" {
    local x failed=0
    for x in "${QUERIES[@]}"; do
        stats "q-$x" "$PROGS/scen" query "$x"
        expect_stat "q-$x" windows '1 \(launches per window: median 2, max 2\)' ||
            { echo "query $x closed a window"; failed=1; }
    done
    [ "$failed" = 0 ]
}

@test "stats: every boundary call closes the open window, under its own name" {
    local x failed=0
    for x in "${BOUNDARIES[@]}"; do
        stats "b-$x" "$PROGS/scen" boundary "$x"
        { expect_stat "b-$x" launches '3 \(3 distinct kernels\)' &&
            expect_stat "b-$x" windows '2 \(launches per window: median [0-9.]+, max 2\)' &&
            expect_reason "b-$x" "$x" 1 &&
            expect_reason "b-$x" exit 1; } || { echo "boundary $x"; failed=1; }
    done
    [ "$failed" = 0 ]
}

@test "stats: memsets and device copies join the window" {
    stats ops "$PROGS/scen" ops
    expect_stat ops launches '2 \(2 distinct kernels\)'
    expect_stat ops windows '1 \(launches per window: median 2, max 2\)'
    expect_reason ops cuStreamSynchronize 1
}

@test "stats: allocator counts with stream-ordered frees" {
    stats a "$PROGS/alloc" seq
    expect_stat a launches '2 \(2 distinct kernels\)'
    # world_init's 4 cuMemAlloc_v2, then cuMemAlloc_v2, 2 cuMemAllocAsync and
    # cuMemAllocFromPoolAsync; 3 cuMemFreeAsync and a cuMemFree_v2.
    expect_stat a allocator '8 allocs, 4 frees \(3 stream-ordered\); frees visible: yes'
    stats noalloc "$PROGS/scen" windows
    expect_stat noalloc allocator '4 allocs, 0 frees \(0 stream-ordered\); frees visible: no'
}

@test "stats: the same shape through every lookup method" {
    local m failed=0
    for m in "${LOOKUPS[@]}"; do
        stats "m-$m" "$PROGS/scen" -l "$m" windows
        { expect_stat "m-$m" launches '12 \(4 distinct kernels\)' &&
            expect_stat "m-$m" windows '5 \(launches per window: median 2, max 5\)' &&
            expect_reason "m-$m" cuStreamSynchronize 2 &&
            expect_reason "m-$m" cuEventRecord 1 &&
            expect_reason "m-$m" cuFakeUnknownCall 1; } || { echo "lookup $m"; failed=1; }
    done
    [ "$failed" = 0 ]
}

@test "stats: a program linked with -lcuda is seen through tcfuse's exported symbols" {
    # Its boundary calls bind to tcfuse's exported trampolines (cuStreamSynchronize,
    # cuMemcpyHtoDAsync_v2, ...), which must close the windows like looked-up ones.
    local p
    for p in linked linked_ptsz; do
        stats "$p" "$PROGS/$p"
        expect_stat "$p" launches '7 \(2 distinct kernels\)'
        expect_stat "$p" windows '5 \(launches per window: median 1, max 3\)'
        expect_reason "$p" cuStreamSynchronize 1
        expect_reason "$p" cuMemcpyHtoDAsync 1
        expect_reason "$p" cuMemcpyDtoHAsync 1
        expect_reason "$p" cuEventRecord 1
        expect_stat "$p" allocator '3 allocs, 3 frees \(1 stream-ordered\); frees visible: yes'
    done
}

@test "stats: multithreaded launches on several streams" {
    stats mts "$PROGS/mt" streams 4 25
    expect_stat mts launches '100 \(1 distinct kernels?\)'
    expect_stat mts windows '4 \(launches per window: median 25, max 25\)'
    expect_reason mts cuCtxSynchronize 4
    stats mtp "$PROGS/mt" -l gpa-ptds ptds 4 25
    expect_stat mtp launches '100 \(1 distinct kernels?\)'
    # Each thread's per-thread default stream is a stream of its own.
    expect_stat mtp windows '4 \(launches per window: median 25, max 25\)'
}

@test "stats: allocations, frees and memsets from several threads at once are all counted" {
    # Each thread counts in its own table (capture/count.c): the summary must still see
    # every thread's. 4 threads x 50 (allocate, memset, free), besides the 4 buffers the
    # program allocates first.
    stats mta "$PROGS/mt" allocs 4 50
    expect_stat mta allocator '204 allocs, 200 frees \(200 stream-ordered\); frees visible: yes'
    expect_stat mta 'other work' '200 device memsets and copies'
    TCFUSE_MODE=fuse TCFUSE_CACHE_DIR="$T/cache" tcf mtf "$PROGS/mt" allocs 4 50
    [ "$status" = 0 ] || { cat "$T/mtf.err"; return 1; }
    expect_stat mtf allocator '204 allocs, 200 frees \(200 stream-ordered\); frees visible: yes'
    expect_stat mtf 'other work' '200 device memsets and copies'
}

@test "stats: TCFUSE_LOG_FILE takes the summary, with %p as the pid" {
    TCFUSE_LOG_FILE="$T/tcfuse.%p.log" tcf lf "$PROGS/scen" windows
    [ "$status" = 0 ]
    [ ! -s "$T/lf.err" ] || { echo "stderr:"; cat "$T/lf.err"; return 1; }
    local f
    f="$(ls "$T"/tcfuse.*.log)"
    [ "$(echo "$f" | wc -l)" = 1 ]
    local pid="${f##*/tcfuse.}"
    pid="${pid%.log}"
    expect_line "$f" "^tcfuse: stats: mode observe, pid $pid\$"
    expect_line "$f" '^tcfuse: +launches +12 '
    # The program's own output is untouched.
    grep -qx done "$T/lf.out"
}

@test "stats: launches by kernel family; in fuse mode decoded, fused and why not, by family" {
    stats fam "$PROGS/scen" windows
    expect_stat fam families 'other 12'
    # The stand-in's kernels are no family tcfuse knows and decode to nothing: fuse mode's
    # table says so, row by row.
    TCFUSE_MODE=fuse tcf famfuse "$PROGS/scen" windows
    [ "$status" = 0 ] || { cat "$T/famfuse.err"; false; }
    expect_line "$T/famfuse.err" '^tcfuse:   by family +launches +decoded +fused +most left alone by$'
    expect_line "$T/famfuse.err" '^tcfuse:     other +12 +0 +0  not-elementwise$'
}
