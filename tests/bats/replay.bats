#!/usr/bin/env bats
# Graph mode (TCFUSE_MODE=graph) against the stand-in driver: whatever is held and replayed
# as a graph, the kernels that run (the stub logs each launch, and each node of a graph it
# launches, with its parameter bytes) are eager's, byte for byte, in eager's order per
# stream; frees follow the kernels that read their block; nothing is held inside the
# application's own stream capture; every failure of the graph API falls back to the
# launches as issued, under a named reason. tests/stub/progs/replay.c lists the scenarios.

load helpers

# The scenarios below count windows of TCFUSE_REPLAY_MAX from their synchronize on (slow
# start's short windows after a synchronize and slow end's before the next have their own
# tests, at the end), and keep every graph they make (no window run as issued to time it),
# so that what is replayed is counted exactly; the judge has its own test.
setup() {
    common_setup || return 1
    export TCFUSE_REPLAY_SLOW=0 TCFUSE_REPLAY_SLOW_END=0 TCFUSE_REPLAY_JUDGE=0
}

# What ran on the device, one line each, launched or as a graph's node: kernels (name,
# grid, block, smem, stream, parameter bytes), memsets ("M elem dst value count stream"),
# copies ("C dst src bytes stream"), and the frees between them ("X ...").
RAN_CALLS='cuLaunchKernel(Ex)?(_ptsz)?|cuGraphLaunch\.(node|memset|memcpy)|cuMemFreeAsync(_ptsz)?|cuMemsetD(8|16|32)Async(_ptsz)?|cuMemcpyDtoDAsync_v2(_ptsz)?'
ran() {
    grep -E "^($RAN_CALLS) .* rc=0\$" "$1" | ran_lines
}
ran_lines() {
    sed -E 's/^(cuMemFreeAsync|cuMemsetD(8|16|32)Async|cuMemcpyDtoDAsync_v2)_ptsz /\1 /' |
        sed -E 's/^([^ ]+) name=([^ ]+) .*grid=([^ ]+) block=([^ ]+) smem=([^ ]+) stream=([^ ]+).* params=([^ ]*) form=.*/K \2 \3 \4 \5 \6 \7/
                s/^cuMemsetD(8|16|32)Async dst=([^ ]+) value=([^ ]+) count=([^ ]+) stream=([^ ]+) .*/M \1 \2 \3 \4 \5/
                s/^cuGraphLaunch\.memset dst=([^ ]+) value=([^ ]+) elem=([^ ]+) count=([^ ]+) stream=([^ ]+) .*/M \3 \1 \2 \4 \5/
                s/^(cuMemcpyDtoDAsync_v2|cuGraphLaunch\.memcpy) dst=([^ ]+) src=([^ ]+) size=([^ ]+) stream=([^ ]+) .*/C \2 \3 \4 \5/
                s/^(cuMemFreeAsync) /X \1 /' |
        sed -E 's/^M 4 /M 32 /; s/^M 2 /M 16 /; s/^M 1 /M 8 /'
}
# ran's lines with the calls that wait for or order against the device among them ("B
# call args"): where each falls among the kernels.
BOUNDARY_CALLS='cuStreamSynchronize|cuCtxSynchronize|cuEventRecord|cuEventSynchronize|cuEventQuery|cuStreamQuery|cuStreamWaitEvent|cuMemcpy(HtoD|DtoH)(Async)?(_v2)?|cuLaunchHostFunc'
ran_with_boundaries() {
    grep -E "^($RAN_CALLS|($BOUNDARY_CALLS)(_ptsz|_ptds)?) .* rc=0\$" "$1" |
        sed -E "s/^($BOUNDARY_CALLS)(_ptsz|_ptds)? (.*) rc=0\$/B \\1 \\6/" |
        ran_lines
}
# The same, stream by stream (order kept within each stream).
ran_by_stream() { ran "$1" | awk '{ print ($1 == "K" ? $6 : "x"), $0 }' | sort -s -k1,1; }

# replay_vs_eager NAME [VAR=VALUE...] -- ARGS...: runs progs/replay ARGS without tcfuse and
# in graph mode (with the variables), and requires the same output and exit status, and
# the same kernels run in the same order (per stream with BY_STREAM=1).
replay_vs_eager() {
    local name=$1
    shift
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    base "$name.eager" "$PROGS/replay" "$@"
    _run "$LIB" "$name.graph" env TCFUSE_MODE=graph TCFUSE_STATS=1 "${envs[@]}" "$PROGS/replay" "$@"
    [ "$(cat "$T/$name.eager.rc")" = 0 ] || { echo "$name: eager run failed"; cat "$T/$name.eager.out"; return 1; }
    [ "$(cat "$T/$name.graph.rc")" = 0 ] || { echo "$name: graph run failed"; cat "$T/$name.graph.err"; return 1; }
    same_text "$name: stdout" "$T/$name.eager.out" "$T/$name.graph.out" || return 1
    if [ "${BY_STREAM:-0}" = 1 ]; then
        ran_by_stream "$T/$name.eager.log" >"$T/$name.eager.ran"
        ran_by_stream "$T/$name.graph.log" >"$T/$name.graph.ran"
    else
        ran "$T/$name.eager.log" >"$T/$name.eager.ran"
        ran "$T/$name.graph.log" >"$T/$name.graph.ran"
    fi
    [ -s "$T/$name.eager.ran" ] || { echo "$name: no kernel ran"; return 1; }
    same_text "$name: kernels run" "$T/$name.eager.ran" "$T/$name.graph.ran"
}

# order_vs_eager NAME [VAR=VALUE...] -- ARGS...: replay_vs_eager, then the same kernels,
# frees, memsets, and the synchronizes and copies among them, in eager's order (one stream)
order_vs_eager() {
    local name=$1
    replay_vs_eager "$@" || return 1
    same_text "$name: work and boundaries" \
        <(ran_with_boundaries "$T/$name.eager.log") <(ran_with_boundaries "$T/$name.graph.log")
}

# stat_num FILE LINE ERE: the number that starts the ERE's first match on the stats line.
stat_num() { stats_line "$1" "$2" | grep -oE "$3" | head -1 | grep -oE '^[0-9]+'; }
replayed() { stat_num "$1" replay '[0-9]+ windows run as graphs'; }

@test "graph: loops whose pointers and scalars change every iteration run eager's kernels" {
    local s
    for s in loop fixed short memset switch; do
        replay_vs_eager "$s" TCFUSE_REPLAY_SYNC=1 -- "$s" 8
        [ "$(replayed "$T/$s.graph.err")" -gt 0 ] || { echo "$s: nothing replayed"; cat "$T/$s.graph.err"; return 1; }
    done
    # 40 launches cut at 32: windows of 32 and 8, 3 warm-up iterations, then every window
    # of the 5 iterations left runs as its graph.
    [ "$(replayed "$T/loop.graph.err")" = 10 ]
    # memsets and copies are nodes of the graph, patched like kernels (their pointers move)
    grep -q '^cuGraphLaunch.memset ' "$T/memset.graph.log"
    grep -q '^cuGraphLaunch.memcpy ' "$T/memset.graph.log"
    grep -q '^cuGraphExecMemsetNodeSetParams .* rc=0$' "$T/memset.graph.log"
    grep -q '^cuGraphExecMemcpyNodeSetParams .* rc=0$' "$T/memset.graph.log"
    expect_line "$T/loop.graph.err" 'replay +10 windows run as graphs \(200 launches'
    # where the time went: the driver's calls split, and the keys whose graph launches took
    # longest, each with its nodes by kind (the stand-in's kernels are of no family) and
    # its kernel nodes' parameter bytes (three each of ka, kb, kc and kd: 16, 20, 28, 0), and
    # the nodes its replays patched (the loop's: every node but kd's 8, which have no
    # parameters)
    expect_line "$T/memset.graph.err" 'replay time +us a window: [0-9.]+ the driver.s kernel-node patches \([0-9.]+ us each\), [0-9.]+ its memset and copy patches \([0-9.]+ us each\), [0-9.]+ its graph launches; -?[0-9.]+ the rest$'
    expect_line "$T/memset.graph.err" 'launch cost +the [1-5] keys held whose graph launches took longest:$'
    expect_line "$T/memset.graph.err" '^tcfuse: +key [0-9a-f]{16}: [1-9][0-9]* replays of 14 nodes \(other 12, memset 1, copy 1; 192 B of kernel parameters\): [0-9.]+ us launching, [0-9.]+ us patching [0-9.]+ nodes a replay$'
    expect_line "$T/loop.graph.err" '^tcfuse: +key [0-9a-f]{16}: 5 replays of 32 nodes \(other 32; 512 B of kernel parameters\): [0-9.]+ us launching, [0-9.]+ us patching 24.0 nodes a replay$'
    # none of the loop's patches moved only bytes a kernel never reads: its scalars and
    # pointers move, and its kernels, not PyTorch's, have no padding between parameters
    expect_line "$T/loop.graph.err" 'unread +0 kernel nodes left unpatched: only bytes their kernel never reads had changed \(TCFUSE_REPLAY_UNREAD\), [1-9][0-9]* patched$'
    # the same in the background (the iteration that replays first depends on the worker)
    replay_vs_eager loop-bg -- loop 40
    replay_vs_eager switch-bg -- switch 40
}

@test "graph: only the nodes whose bytes changed are patched" {
    replay_vs_eager fixed TCFUSE_REPLAY_SYNC=1 -- fixed 8
    expect_line "$T/fixed.graph.err" 'patches +nodes patched per replay: 0:10; mean 0.00, max 0'
    [ "$(grep -c '^cuGraphExecKernelNodeSetParams_v2 ' "$T/fixed.graph.log")" = 0 ]
    replay_vs_eager loop TCFUSE_REPLAY_SYNC=1 -- loop 8
    # each replay patches the nodes of launches with parameters (kd has none): the stub
    # saw exactly the patches the stats count
    local n
    n=$(grep -c '^cuGraphExecKernelNodeSetParams_v2 .* rc=0$' "$T/loop.graph.log")
    [ "$n" -gt 0 ]
    awk -v n="$n" '/patches +nodes patched per replay/ { if (index($0, "mean " sprintf("%.2f", n / 10)) == 0) exit 1 }' "$T/loop.graph.err" ||
        { echo "stub saw $n patches; stats say:"; stats_line "$T/loop.graph.err" patches; return 1; }
}

@test "graph: with two instances (TCFUSE_REPLAY_RING=2), bytes that alternate between two sets are patched once" {
    # one instance (graph mode's default): every replay patches what changed since the
    # iteration before
    replay_vs_eager alt1 TCFUSE_REPLAY_SYNC=1 -- alternate 8
    expect_line "$T/alt1.graph.err" 'patches +nodes patched per replay: 4-7:5 16-31:5; mean 15.00, max 24;'
    # two, replayed in turn: each key's graph is made from iteration 2's window and first
    # replayed at iteration 3, whose bytes are the other set's: that replay patches; the
    # second instance then runs iteration 4 (the set it was made with) and every later
    # replay finds its instance holding its set
    replay_vs_eager alt2 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_RING=2 -- alternate 8
    expect_line "$T/alt2.graph.err" 'patches +nodes patched per replay: 0:8 4-7:1 16-31:1; mean 3.00, max 24;'
    expect_line "$T/alt2.graph.err" 'graphs +2 made \(0 in the background, 2 on the application.s thread\), 2 of them with a second instance \(TCFUSE_REPLAY_RING; 0 refused\), .*; 2 held, ~0\.4 MiB of device memory'
    expect_line "$T/alt1.graph.err" 'graphs +2 made .*; 2 held, ~0\.2 MiB of device memory'
    ! grep -q 'second instance' "$T/alt1.graph.err"
    # each instance launched in turn: the stub saw two execs of each graph
    [ "$(grep -oE '^cuGraphLaunch exec=0x[0-9a-f]+' "$T/alt2.graph.log" | sort -u | wc -l)" = 4 ]
    [ "$(grep -c '^cuGraphExecKernelNodeSetParams_v2 .* rc=0$' "$T/alt2.graph.log")" = 30 ]
    # bytes that never repeat: patched as with one instance, the same kernels run
    replay_vs_eager loop2 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_RING=2 -- loop 8
    expect_line "$T/loop2.graph.err" 'patches +nodes patched per replay: 4-7:5 16-31:5; mean 15.00, max 24;'
    # in the background too (the iteration that replays first depends on the worker)
    replay_vs_eager alt2-bg TCFUSE_REPLAY_RING=2 -- alternate 40
    replay_vs_eager memset2 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_RING=2 -- memset 8
    # a refused patch with two instances: the instance whose turn it is is updated whole;
    # an update refused too re-instantiates, and the new graph's instance is the only one
    replay_vs_eager patch2 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_RING=2 \
        FAKECUDA_FAIL=cuGraphExecKernelNodeSetParams_v2 -- alternate 8
    expect_line "$T/patch2.graph.err" 'graphs .* 2 whole-graph updates, 0 re-instantiated'
    [ "$(replayed "$T/patch2.graph.err")" = 10 ]
    replay_vs_eager update2 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_RING=2 \
        FAKECUDA_FAIL=cuGraphExecKernelNodeSetParams_v2,cuGraphExecUpdate_v2 -- loop 8
    expect_line "$T/update2.graph.err" 'graphs .* 0 whole-graph updates, 10 re-instantiated'
    [ "$(replayed "$T/update2.graph.err")" = 10 ]
    # a second instance refused: the key replays its one (the other key's first
    # instantiation refused gives it up)
    replay_vs_eager ring-refused TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_RING=2 \
        FAKECUDA_FAIL_AFTER=cuGraphInstantiateWithFlags:1 -- alternate 8
    expect_line "$T/ring-refused.graph.err" 'graphs +1 made .*, 0 of them with a second instance \(TCFUSE_REPLAY_RING; 1 refused\)'
    [ "$(replayed "$T/ring-refused.graph.err")" = 5 ]
}

@test "graph: a node is left unpatched where only bytes its kernel never reads moved" {
    # fusechain launches PyTorch's mul, add and tanh by their real names and layouts. With
    # `noise` over one set of buffers, mul's functor padding (bytes PyTorch leaves as its
    # stack had them) differs every iteration: by default its node keeps the padding of the
    # window it was made from, runs what eager ran in every byte the kernel reads, and the
    # driver is asked for no patch; with TCFUSE_REPLAY_UNREAD=0 it is patched in each of
    # the 17 replays. Two sets: every pointer moves, every node is patched, the work is
    # eager's byte for byte.
    local how
    for how in noise:1 sets:2 noise:1:0; do
        IFS=: read -r what sets unread <<<"$how"
        local prog=(fusechain 20 "$what" "$sets")
        base "$how.plain" "$PROGS/${prog[0]}" "${prog[@]:1}"
        TCFUSE_MODE=graph TCFUSE_STATS=1 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_UNREAD=${unread:-1} \
            tcf "$how.graph" "$PROGS/${prog[0]}" "${prog[@]:1}"
        [ "$status" = 0 ] || { cat "$T/$how.graph.err"; return 1; }
        same_text "$how: stdout" "$T/$how.plain.out" "$T/$how.graph.out"
        expect_line "$T/$how.graph.err" 'replay +17 windows run as graphs \(51 launches'
    done
    expect_line "$T/noise:1.graph.err" 'patches +nodes patched per replay: 0:17; mean 0.00'
    expect_line "$T/noise:1.graph.err" 'unread +17 kernel nodes left unpatched: only bytes their kernel never reads had changed \(TCFUSE_REPLAY_UNREAD\), 0 patched$'
    ! grep -q 'NodeSetParams' "$T/noise:1.graph.log"
    # the kernels eager ran, in its order, with mul's functor padding (the 4 bytes before
    # its scalar) masked: the only bytes that differ
    local mask='s/^(K [^ ]*MulFunctor[^ ]* ([^ ]+ ){4}[^,]*,)[0-9a-f]{8}/\1xxxxxxxx/'
    ran "$T/noise:1.plain.log" | sed -E "$mask" >"$T/noise.eager.ran"
    ran "$T/noise:1.graph.log" | sed -E "$mask" >"$T/noise.graph.ran"
    grep -q 'MulFunctor.* [^ ]*,xxxxxxxx0000003f,' "$T/noise.graph.ran"
    same_text "noise: kernels run, padding masked" "$T/noise.eager.ran" "$T/noise.graph.ran"
    ! ran "$T/noise:1.graph.log" | diff -q - <(ran "$T/noise:1.plain.log") >/dev/null   # it did differ
    expect_line "$T/noise:1:0.graph.err" 'patches +nodes patched per replay: 1:17; mean 1.00'
    ! grep -q 'unread  ' "$T/noise:1:0.graph.err"
    ran "$T/noise:1:0.plain.log" >"$T/noise0.eager.ran"
    ran "$T/noise:1:0.graph.log" >"$T/noise0.graph.ran"
    same_text "noise, every change patched: kernels run" "$T/noise0.eager.ran" "$T/noise0.graph.ran"
    expect_line "$T/sets:2.graph.err" 'patches +nodes patched per replay: 2-3:17; mean 3.00'
    expect_line "$T/sets:2.graph.err" 'unread +0 kernel nodes left unpatched: .*, 51 patched$'
    ran "$T/sets:2.plain.log" >"$T/sets.eager.ran"
    ran "$T/sets:2.graph.log" >"$T/sets.graph.ran"
    same_text "sets: kernels run" "$T/sets.eager.ran" "$T/sets.graph.ran"
}

@test "graph: windows are cut structurally, never by the idle timer" {
    replay_vs_eager idle TCFUSE_REPLAY_SYNC=1 TCFUSE_IDLE_US=1 TCFUSE_TRACE="$T/idle.jsonl" -- loop 8
    ! grep -q '"reason":"idle"' "$T/idle.jsonl"
    expect_line "$T/idle.graph.err" 'boundaries +cuStreamSynchronize 8, size-cap 8$'
    # every iteration cuts at the same places: 32 then 8 launches
    [ "$(grep -c '"ev":"window".*"launches":32,' "$T/idle.jsonl")" = 8 ]
    [ "$(grep -c '"ev":"window".*"launches":8,' "$T/idle.jsonl")" = 8 ]
    # the cap is an option
    replay_vs_eager cap8 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_MAX=8 -- loop 8
    expect_line "$T/cap8.graph.err" 'window sizes +8-15:40$'
    # a window shorter than TCFUSE_REPLAY_MIN is never a graph
    replay_vs_eager min TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_MIN=3 -- short 8
    [ "$(replayed "$T/min.graph.err")" = 0 ]
    expect_line "$T/min.graph.err" '1 too short or not carriable'
}

@test "graph: the trace marks replayed windows, and report --chrome shows them" {
    replay_vs_eager tr TCFUSE_REPLAY_SYNC=1 TCFUSE_TRACE="$T/tr.jsonl" -- fixed 8
    trace_valid "$T/tr.jsonl"
    [ "$(grep -c '"replayed":32,"patched":0' "$T/tr.jsonl")" = 5 ]
    [ "$(grep -c '"replayed":8,"patched":0' "$T/tr.jsonl")" = 5 ]
    run "$TCFUSE" report --chrome "$T/tr.json" "$T/tr.jsonl"
    [ "$status" = 0 ]
    grep -q 'replayed as a graph' "$T/tr.json"
}

@test "graph: two streams keep their own order; the legacy stream orders against both" {
    BY_STREAM=1 replay_vs_eager streams TCFUSE_REPLAY_SYNC=1 -- streams 8
    [ "$(replayed "$T/streams.graph.err")" -gt 0 ]
    # the legacy stream against s1: the whole order is eager's
    replay_vs_eager legacy TCFUSE_REPLAY_SYNC=1 -- legacy 8
    [ "$(stat_num "$T/legacy.graph.err" 'as issued' "[0-9]+ for another stream's order")" -gt 0 ]
    # two threads: s0 records an event, s1 waits for it
    BY_STREAM=1 replay_vs_eager events TCFUSE_REPLAY_SYNC=1 -- events 8
    [ "$(replayed "$T/events.graph.err")" -gt 0 ]
}

@test "graph: a free behind held launches goes after the kernels that read its block" {
    replay_vs_eager free TCFUSE_REPLAY_SYNC=1 -- free 8 || true  # order differs: checked below
    ran "$T/free.eager.log" | grep '^K' >"$T/free.eager.k"
    ran "$T/free.graph.log" | grep '^K' >"$T/free.graph.k"
    same_text "free: kernels run" "$T/free.eager.k" "$T/free.graph.k"
    expect_line "$T/free.graph.err" 'windows held \([0-9]+ launches, [0-9]+ memsets and copies, [1-9][0-9]* frees\)'
    # no kernel reading a block runs after its free
    ran "$T/free.graph.log" | awk '
        $1 == "X" { sub(/ptr=0x/, "", $3); freed[$3] = 1; next }
        { for (p in freed) { le = ""; for (i = length(p) - 1; i >= 1; i -= 2) le = le substr(p, i, 2);
                             if (index($7, le)) { print "kernel after the free of " p ": " $0; bad = 1 } } }
        END { exit bad }'
}

@test "graph and full: an NCCL kernel is never held nor put in a graph; the windows around it are" {
    local m
    for m in graph full; do
        base "coll.eager" "$PROGS/replay" collective 8
        _run "$LIB" "coll.$m" env TCFUSE_MODE=$m TCFUSE_STATS=1 TCFUSE_REPLAY_SYNC=1 \
            TCFUSE_COMPILE_WAIT=1 "$PROGS/replay" collective 8
        [ "$(cat "$T/coll.$m.rc")" = 0 ] || { cat "$T/coll.$m.err"; return 1; }
        same_text "$m stdout" "$T/coll.eager.out" "$T/coll.$m.out"
        ran "$T/coll.eager.log" >"$T/coll.eager.ran"
        ran "$T/coll.$m.log" >"$T/coll.$m.ran"
        same_text "$m: kernels run" "$T/coll.eager.ran" "$T/coll.$m.ran"
        expect_line "$T/coll.$m.err" 'not held +collective 8'
        [ "$(replayed "$T/coll.$m.err")" -gt 0 ] || { echo "$m: nothing replayed"; return 1; }
        # all 8 of its runs were launches of its own, none a graph's node
        [ "$(grep -c '^cuLaunchKernel name=_Z39ncclDevKernel_AllReduce.* rc=0$' "$T/coll.$m.log")" = 8 ]
        ! grep -q '^cuGraphLaunch.node name=_Z39ncclDevKernel' "$T/coll.$m.log"
        ! grep -q '^cuGraphAddKernelNode.*ncclDevKernel' "$T/coll.$m.log"
    done
}

@test "graph: nothing is held while the application captures a stream" {
    replay_vs_eager capture TCFUSE_REPLAY_SYNC=1 -- capture 8
    expect_line "$T/capture.graph.err" "during the application's stream captures 32 \\(8 captures\\)"
    [ "$(replayed "$T/capture.graph.err")" -gt 0 ]
    # between each begin and end, only the application's own launches reach the driver
    awk '/^cuStreamBeginCapture/ { in_c = 1 } /^cuStreamEndCapture/ { in_c = 0 }
         in_c && /^(cuGraphLaunch|cuGraphInstantiate|cuGraphAddKernelNode|cuGraphExec)/ { print; bad = 1 }
         END { exit bad }' \
        "$T/capture.graph.log"
}

@test "graph: launches a node cannot carry pass through, alone in their window" {
    replay_vs_eager attrs TCFUSE_REPLAY_SYNC=1 -- attrs 8
    expect_line "$T/attrs.graph.err" 'not held +attribute 8 \(ids 2:8\)'
    expect_line "$T/attrs.graph.err" 'cuts +8 before launches a node cannot carry'
    # a cluster dimension and a priority are carried by the node
    grep -q '^cuGraphLaunch.node name=ka_i4_p8 .* attrs=4:10101,8:1 ' "$T/attrs.graph.log"
    # programmatic serialization is carried too, by a node without it (key.c says why):
    # the launch with the scalar 0x5d5d00XX ran as a node in some iterations
    grep -E '^cuGraphLaunch.node name=ka_i4_p8 ' "$T/attrs.graph.log" | grep -v ' attrs=' |
        grep -cE 'params=..005d5d,' >"$T/attrs.pdl"
    [ "$(cat "$T/attrs.pdl")" -gt 0 ]
    grep -qE '^cuLaunchKernelEx .* attrs=6( |$)' "$T/attrs.eager.log"
    # the per-thread default stream is never held (two threads, 40 launches each)
    base ptds.eager "$PROGS/mt" -l gpa-ptds ptds 2 40
    TCFUSE_MODE=graph TCFUSE_STATS=1 TCFUSE_REPLAY_SYNC=1 tcf ptds.graph "$PROGS/mt" -l gpa-ptds ptds 2 40
    [ "$(cat "$T/ptds.graph.rc")" = 0 ]
    same_text "ptds: stdout" "$T/ptds.eager.out" "$T/ptds.graph.out"
    ran "$T/ptds.eager.log" | sort >"$T/ptds.eager.ran"
    ran "$T/ptds.graph.log" | sort >"$T/ptds.graph.ran"
    same_text "ptds: kernels run" "$T/ptds.eager.ran" "$T/ptds.graph.ran"
    expect_line "$T/ptds.graph.err" 'not held +per-thread-stream 80$'
}

@test "graph: exit with a window held loses no work" {
    replay_vs_eager exit TCFUSE_REPLAY_SYNC=1 -- exit 8
    expect_line "$T/exit.graph.err" ' 1 at exit,'
}

@test "graph: a refused patch updates the whole graph, then re-instantiates, then gives up" {
    replay_vs_eager patch TCFUSE_REPLAY_SYNC=1 FAKECUDA_FAIL=cuGraphExecKernelNodeSetParams_v2 -- loop 8
    expect_line "$T/patch.graph.err" 'graphs .* 10 whole-graph updates, 0 re-instantiated'
    [ "$(replayed "$T/patch.graph.err")" = 10 ]
    replay_vs_eager update TCFUSE_REPLAY_SYNC=1 \
        FAKECUDA_FAIL=cuGraphExecKernelNodeSetParams_v2,cuGraphExecUpdate_v2 -- loop 8
    expect_line "$T/update.graph.err" 'graphs .* 0 whole-graph updates, 10 re-instantiated'
    [ "$(replayed "$T/update.graph.err")" = 10 ]
    replay_vs_eager giveup TCFUSE_REPLAY_SYNC=1 \
        FAKECUDA_FAIL=cuGraphExecKernelNodeSetParams_v2,cuGraphExecUpdate_v2 \
        FAKECUDA_FAIL_AFTER=cuGraphInstantiateWithFlags:2 -- loop 8
    expect_line "$T/giveup.graph.err" 'given up +update-failed 2$'
    [ "$(replayed "$T/giveup.graph.err")" = 0 ]
    # a key given up is not held again
    expect_line "$T/giveup.graph.err" 'windows held \(40 launches'
}

@test "graph: every failure of the graph API runs the launches as issued, named" {
    local f reason
    for f in cuGraphCreate:create-failed cuGraphAddKernelNode_v2:node-refused \
             cuGraphInstantiateWithFlags:instantiate-failed cuGraphLaunch:launch-failed; do
        reason=${f#*:}
        replay_vs_eager "fail-${f%%:*}" TCFUSE_REPLAY_SYNC=1 FAKECUDA_FAIL="${f%%:*}" -- loop 8
        expect_line "$T/fail-${f%%:*}.graph.err" "given up +$reason 2\$"
        [ "$(replayed "$T/fail-${f%%:*}.graph.err")" = 0 ]
    done
    replay_vs_eager fail-attr TCFUSE_REPLAY_SYNC=1 FAKECUDA_FAIL=cuGraphKernelNodeSetAttribute -- attrs 8
    expect_line "$T/fail-attr.graph.err" 'given up +node-refused 1$'
}

@test "graph: TCFUSE_FAULT at the graph sites: the same paths as the driver's own failures" {
    local inj
    # a failed instantiation gives both keys up
    replay_vs_eager f-inst TCFUSE_REPLAY_SYNC=1 TCFUSE_FAULT=graph_instantiate:every -- loop 8
    expect_line "$T/f-inst.graph.err" 'given up +instantiate-failed 2$'
    [ "$(replayed "$T/f-inst.graph.err")" = 0 ]
    # a failed launch: that window runs as issued, its key is given up, the other replays on
    replay_vs_eager f-launch TCFUSE_REPLAY_SYNC=1 TCFUSE_FAULT=graph_launch -- loop 8
    expect_line "$T/f-launch.graph.err" 'given up +launch-failed 1$'
    expect_line "$T/f-launch.graph.err" 'faults +graph_launch 1 of [0-9]+ calls'
    [ "$(replayed "$T/f-launch.graph.err")" -gt 0 ]
    # every patch refused: whole-graph updates, as when the driver refuses them
    replay_vs_eager f-patch TCFUSE_REPLAY_SYNC=1 TCFUSE_FAULT=graph_patch:every -- loop 8
    expect_line "$T/f-patch.graph.err" 'graphs .* 10 whole-graph updates, 0 re-instantiated'
    [ "$(replayed "$T/f-patch.graph.err")" = 10 ]
    # and every update refused too: re-instantiations
    replay_vs_eager f-update TCFUSE_REPLAY_SYNC=1 TCFUSE_FAULT=graph_patch:every,graph_update:every -- loop 8
    expect_line "$T/f-update.graph.err" 'graphs .* 0 whole-graph updates, 10 re-instantiated'
    [ "$(replayed "$T/f-update.graph.err")" = 10 ]
    inj=$(stats_line "$T/f-update.graph.err" faults)
    [[ $inj =~ graph_update\ 10\ of\ 10 ]] || { echo "$inj"; false; }
    # no worker thread (it is made for the first graph): graphs made on the application's
    replay_vs_eager f-thread TCFUSE_FAULT=thread -- loop 8
    expect_line "$T/f-thread.graph.err" 'graphs +2 made \(0 in the background, 2 on the application.s thread \(2: no worker thread\)\)'
    [ "$(replayed "$T/f-thread.graph.err")" -gt 0 ]
}

@test "graph: a key whose graph runs are not faster than its runs as issued is dropped, and tried again later" {
    # every graph launch costs the host 3 ms. Each new graph is judged: its key's windows
    # that could be held run as a graph or as issued at even odds until 8 runs each way
    # are timed; slower (by the medians, and in at least 48 of the 64 pairs), its graph is
    # dropped and its key counts again with a warm-up twice as long (5, then 11 windows):
    # in 60 iterations each of the two keys (the loop's windows of 32 and 8) is dropped
    # twice
    replay_vs_eager slow TCFUSE_REPLAY_JUDGE=1 TCFUSE_REPLAY_SYNC=1 FAKECUDA_GRAPH_DELAY_US=3000 TCFUSE_VERBOSE=2 -- loop 60
    local e="$T/slow.graph.err"
    expect_line "$e" 'given up +not-faster 4$'
    # (each pair a 3 ms graph against launches of microseconds: all 64 slower, unless a busy
    # host stalls a run as issued; the judge asks 48)
    [ "$(grep -cE 'as a graph, .* as issued \(medians; (4[89]|5[0-9]|6[0-4]) of 64 pairs slower\): not replayed' "$e")" = 4 ]
    # a dropped key is not given up for good: it is counting again, or has a graph again
    expect_line "$e" 'keys .* 2 distinct keys: .*, 0 given up;'
    # runs as issued to time them come only while a key is judged, at even odds
    local x r
    x=$(sed -nE 's/.* ([0-9]+) windows run as issued to time them.*/\1/p' "$e")
    r=$(replayed "$e")
    [ "$x" -ge 32 ] && [ "$r" -ge 32 ] && [ "$r" -le 48 ] || { cat "$e"; return 1; }
    # where launches are dear (0.2 ms each) the graphs are judged faster and kept; once
    # both are judged, every window runs as its graph
    replay_vs_eager fast TCFUSE_REPLAY_JUDGE=1 TCFUSE_REPLAY_SYNC=1 FAKECUDA_LAUNCH_DELAY_US=200 TCFUSE_TRACE="$T/fast.jsonl" -- loop 60
    ! grep -q 'not-faster' "$T/fast.graph.err"
    x=$(sed -nE 's/.* ([0-9]+) windows run as issued to time them.*/\1/p' "$T/fast.graph.err")
    [ "$x" -ge 16 ] && [ "$x" -le 40 ] && [ "$(replayed "$T/fast.graph.err")" -ge 70 ] ||
        { cat "$T/fast.graph.err"; return 1; }
    # the last 20 iterations' 40 windows all ran as graphs
    [ "$(grep '"ev":"window"' "$T/fast.jsonl" | tail -n 40 | grep -c '"replayed":')" = 40 ] ||
        { grep '"ev":"window"' "$T/fast.jsonl" | tail -n 3; return 1; }
    # a key that stops coming while it is judged (fade: the first 8 iterations' key, then
    # another) has its judgment end, its graph kept, within four of its periods and 64
    # windows: the other key's windows stop running as issued once it is judged
    replay_vs_eager fade TCFUSE_REPLAY_JUDGE=1 TCFUSE_REPLAY_SYNC=1 FAKECUDA_LAUNCH_DELAY_US=20 TCFUSE_TRACE="$T/fade.jsonl" -- fade 300
    expect_line "$T/fade.graph.err" 'run as issued to time them \(1 graphs judged, 1 not seen often enough to be; 0 kept'
    # only windows that begin as a key being judged run as issued to time it: the second
    # key's own 8 runs as issued, about 16 of its windows, not half of every window while
    # the first key's judgment lasts (39 when any window that could be held was chosen)
    x=$(sed -nE 's/.* ([0-9]+) windows run as issued to time them.*/\1/p' "$T/fade.graph.err")
    [ "$x" -ge 8 ] && [ "$x" -le 28 ] || { cat "$T/fade.graph.err"; return 1; }
    local last
    last=$(grep '"ev":"window"' "$T/fade.jsonl" | awk '!/"replayed":/ {last = NR} END {print last}')
    [ "$last" -le 100 ] || { echo "last window not replayed: $last"; return 1; }
    # with the judge off nothing runs as issued to time it, and every graph is kept
    replay_vs_eager nojudge TCFUSE_REPLAY_SYNC=1 FAKECUDA_GRAPH_DELAY_US=3000 -- loop 20
    expect_line "$T/nojudge.graph.err" ' 0 windows run as issued to time them'
    [ "$(replayed "$T/nojudge.graph.err")" = 34 ]
}

@test "graph: a stream whose held windows keep leaving every graph's path pauses holding" {
    # chance: a graph is made of the first iterations' window; later windows follow its
    # first 4 launches (held) and then leave it: after 4 such in a row, 16 windows are
    # not held, then 32, ...
    replay_vs_eager chance TCFUSE_REPLAY_SYNC=1 -- chance 80
    local p n
    p=$(sed -nE 's/.*pauses +([0-9]+) times.*/\1/p' "$T/chance.graph.err")
    n=$(sed -nE 's/.*: ([0-9]+) windows then not held.*/\1/p' "$T/chance.graph.err")
    [ "${p:-0}" -ge 2 ] && [ "${n:-0}" -ge 48 ] || { cat "$T/chance.graph.err"; return 1; }
    # the windows not held ran as issued: fewer held than windows after the graph
    [ "$(sed -nE 's/.*; ([0-9]+) windows held.*/\1/p' "$T/chance.graph.err")" -lt 60 ]
    # nor were they learned: their launches were counted, not recorded, and every launch
    # the program made is in the stats
    local q all
    q=$(sed -nE 's/.*their ([0-9]+) launches counted, not recorded.*/\1/p' "$T/chance.graph.err")
    all=$(stat_num "$T/chance.graph.err" launches '[0-9]+')
    [ "${q:-0}" -ge 48 ] && [ "$all" = "$(grep -c '^K' "$T/chance.eager.ran")" ] ||
        { cat "$T/chance.graph.err"; return 1; }
    [ "$(stat_num "$T/chance.graph.err" windows '[0-9]+')" -lt 80 ]
    # a loop whose windows all replay never pauses
    replay_vs_eager loop-p TCFUSE_REPLAY_SYNC=1 -- loop 8
    expect_line "$T/loop-p.graph.err" 'pauses +0 times'
    expect_line "$T/loop-p.graph.err" 'their 0 launches counted'
}

@test "graph: a stream whose windows' keys never repeat stops recording them, now and then" {
    # novel: 400 windows of 12 kernels drawn at random. After 256 new keys in a row the
    # stream pauses 16 windows; after each pause 16 new keys start the next one, twice as
    # long: 256 learned, 16 paused, 16, 32, 16, 64: 3 pauses by the 400th window
    replay_vs_eager novel -- novel 400
    local e="$T/novel.graph.err" lp n q
    lp=$(sed -nE 's/.*, ([0-9]+) times its windows.* keys were new 256 in a row.*/\1/p' "$e")
    n=$(sed -nE 's/.*: ([0-9]+) windows then not held.*/\1/p' "$e")
    q=$(sed -nE 's/.*their ([0-9]+) launches counted, not recorded.*/\1/p' "$e")
    [ "${lp:-0}" = 3 ] && [ "${n:-0}" = 112 ] && [ "${q:-0}" = $((112 * 12)) ] || { cat "$e"; return 1; }
    # the windows paused were neither learned nor held, and every launch is in the stats
    expect_line "$e" 'keys +288 windows learned'
    [ "$(stat_num "$e" launches '[0-9]+')" = "$(grep -c '^K' "$T/novel.eager.ran")" ]
    # a loop whose keys repeat never pauses
    replay_vs_eager loop-n -- loop 300
    expect_line "$T/loop-n.graph.err" ', 0 times its windows.* keys were new'
}

@test "graph: windows that repeat by chance (smallk's launches) pause holding, and run as eager ran them" {
    # smallk: 1000 launches an iteration whose grids step with an element count, so a
    # window's key recurs now and then (60 iterations: 2,040 windows, ~1,000 keys). Chance
    # graphs are made and replayed, most windows held on their paths leave them, and the
    # stream pauses holding: on the H100 this program ran 0.89x eager before the pauses
    # counted every window run as issued (2026-11-27, ninth).
    replay_vs_eager chance-k TCFUSE_REPLAY_SYNC=1 -- smallk 60
    local e="$T/chance-k.graph.err" np nh
    np=$(sed -nE 's/.*pauses +([0-9]+) times a stream.s held windows ran as issued.*/\1/p' "$e")
    nh=$(sed -nE 's/.*: ([0-9]+) windows then not held.*/\1/p' "$e")
    [ "${np:-0}" -ge 10 ] && [ "${nh:-0}" -ge 500 ] || { cat "$e"; return 1; }
    [ "$(replayed "$e")" -gt 0 ]
    [ "$(stat_num "$e" launches '[0-9]+')" = 60000 ]
}

@test "graph: graphs past TCFUSE_REPLAY_GRAPHS are evicted, least recently replayed first" {
    replay_vs_eager lru TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_GRAPHS=1 -- switch 8
    [ "$(stat_num "$T/lru.graph.err" graphs '[0-9]+ evicted')" -gt 0 ]
    expect_line "$T/lru.graph.err" 'graphs .*; 1 held,'
    [ "$(replayed "$T/lru.graph.err")" -gt 0 ]
    # every graph dropped is destroyed
    [ "$(grep -c '^cuGraphExecDestroy .* rc=0$' "$T/lru.graph.log")" -ge \
      "$(stat_num "$T/lru.graph.err" graphs '[0-9]+ evicted')" ]
}

@test "graph: keys that repeat past the graphs' cap do not make and evict graphs forever" {
    # cycle: three keys in turn under a cap of two graphs. The least recently replayed
    # graph is always the next one needed: evicted keys must wait twice as long each time
    # before they are made again (3, 5, 11, 23 windows seen) instead of being remade after
    # every warm-up (27 graphs made in 180 windows, 25 evicted, without the doubling).
    # Launches are dear, so that the graphs pay (a key given up would make no more).
    replay_vs_eager cyc TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_GRAPHS=2 FAKECUDA_LAUNCH_DELAY_US=200 -- cycle 60
    local e="$T/cyc.graph.err" made ev
    made=$(stat_num "$e" graphs '[0-9]+ made')
    ev=$(stat_num "$e" graphs '[0-9]+ evicted')
    [ "$made" -ge 3 ] && [ "$made" -le 12 ] && [ "$ev" -le 10 ] || { cat "$e"; return 1; }
    expect_line "$e" 'keys .*, 0 given up;'
    # the graphs kept run: over half the windows replayed
    [ "$(replayed "$e")" -ge 90 ] || { cat "$e"; return 1; }
}

@test "graph: after a synchronize the windows start short and grow (slow start)" {
    # 40 launches an iteration, a synchronize after each: windows of 4, 8, 16, then the
    # cap (32) for what is left, 12; every window repeats and runs as its graph
    replay_vs_eager slow TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_SLOW=4 TCFUSE_TRACE="$T/slow.jsonl" -- loop 8
    local n
    for n in 4 8 16 12; do
        [ "$(grep -c "\"ev\":\"window\".*\"launches\":$n," "$T/slow.jsonl")" = 8 ] ||
            { echo "windows of $n:"; grep -c "\"launches\":$n," "$T/slow.jsonl"; return 1; }
    done
    expect_line "$T/slow.graph.err" 'boundaries +size-cap 24, cuStreamSynchronize 8$'
    expect_line "$T/slow.graph.err" 'replay +20 windows run as graphs \(200 launches'
    # the first window's length is the option; the cap bounds the growth: 2, 4, then four
    # of 8, and the 2 left
    replay_vs_eager slow2 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_SLOW=2 TCFUSE_REPLAY_MAX=8 -- loop 8
    expect_line "$T/slow2.graph.err" 'window sizes +2-3:16 4-7:8 8-15:32$'
    # a short window's key is its own: the window after an event record (a boundary that
    # waits for nothing: no restart, cut at 16) begins with the 4 launches of the short
    # window after the synchronize, and is never held on that graph's path
    replay_vs_eager restart TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_SLOW=4 -- restart 8
    expect_line "$T/restart.graph.err" 'window sizes +4-7:16 8-15:24$'
    expect_line "$T/restart.graph.err" 'as issued +held windows run as issued: 0 left a graph.s path, 0 closed without a ready graph,'
    [ "$(replayed "$T/restart.graph.err")" -gt 24 ]
}

@test "graph: before a wait the stream's last stretches predict, the windows end short (slow end)" {
    # 40 launches an iteration, a synchronize after each: slow start cuts 4, 8, 16; the 12
    # left go as one window until two stretches of 40 are seen, then as 6 (the cut) and 6
    # (closed by the synchronize, as before any prediction); every window runs as eager
    # ran, the short ones as their graphs
    replay_vs_eager end TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_SLOW=4 TCFUSE_REPLAY_SLOW_END=1 TCFUSE_TRACE="$T/end.jsonl" -- loop 8
    [ "$(grep -c '"ev":"window".*"launches":12,' "$T/end.jsonl")" = 2 ]
    [ "$(grep -c '"ev":"window".*"launches":6,' "$T/end.jsonl")" = 12 ]
    expect_line "$T/end.graph.err" 'window sizes +4-7:20 8-15:10 16-31:8$'
    expect_line "$T/end.graph.err" 'slow end +6 windows cut short before a wait'
    expect_line "$T/end.graph.err" 'boundaries +size-cap 30, cuStreamSynchronize 8$'
    [ "$(replayed "$T/end.graph.err")" -gt 20 ]
    # halving down to a last window of 8 or fewer: 4, 8, 16, then the cap's 32, and 30 left
    # go as 15, 8 and 7
    replay_vs_eager end2 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_SLOW=4 TCFUSE_REPLAY_SLOW_END=1 TCFUSE_TRACE="$T/end2.jsonl" -- stretch 8
    local n
    for n in 15 8 7; do
        [ "$(grep -c "\"ev\":\"window\".*\"launches\":$n," "$T/end2.jsonl")" -ge 6 ] ||
            { echo "windows of $n:"; grep -c "\"launches\":$n," "$T/end2.jsonl"; return 1; }
    done
    # stretches that differ (12 launches, then 24 around an event record) predict nothing:
    # the windows are those without the option
    replay_vs_eager end3 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_SLOW=4 TCFUSE_REPLAY_SLOW_END=1 -- restart 8
    expect_line "$T/end3.graph.err" 'window sizes +4-7:16 8-15:24$'
    expect_line "$T/end3.graph.err" 'slow end +0 windows cut short'
    # off: no line, windows as before
    replay_vs_eager end4 TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_SLOW=4 TCFUSE_REPLAY_SLOW_END=0 -- loop 8
    ! grep -q 'slow end' "$T/end4.graph.err"
    expect_line "$T/end4.graph.err" 'window sizes +4-7:8 8-15:16 16-31:8$'
    # on by default: 90 launches cut by the cap as 32, 32 and 26, then the 26 as 13, 7, 6
    unset TCFUSE_REPLAY_SLOW_END
    replay_vs_eager end6 TCFUSE_REPLAY_SYNC=1 TCFUSE_TRACE="$T/end6.jsonl" -- stretch 8
    expect_line "$T/end6.graph.err" 'slow end +12 windows cut short before a wait'
    [ "$(grep -c '"ev":"window".*"launches":13,' "$T/end6.jsonl")" = 6 ]
    # full mode cuts alike
    replay_vs_eager end5 TCFUSE_MODE=full TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_SLOW=4 TCFUSE_REPLAY_SLOW_END=1 -- loop 8
    expect_line "$T/end5.graph.err" 'window sizes +4-7:20 8-15:10 16-31:8$'
}

@test "graph and full: with the defaults (slow start and slow end on) every scenario runs eager's work" {
    # the scenarios above count windows with both off; here each runs as a user runs it,
    # its last windows cut short once two stretches agree (new keys, learned in turn), and
    # again with slow start off, so that shorter stretches are cut by slow end too (two
    # streams' 10 launches each between synchronizes; two threads' 8 and the legacy
    # stream's are left whole, and run as eager ran)
    unset TCFUSE_REPLAY_SLOW TCFUSE_REPLAY_SLOW_END
    local s m v name n by
    for m in graph full; do
        for v in default 0; do
            for s in loop stretch streams legacy events memset attrs capture exit switch restart; do
                name="d-$m-$v-$s" by=0
                [ "$s" = streams ] || [ "$s" = events ] && by=1
                if [ "$v" = default ]; then
                    BY_STREAM=$by replay_vs_eager "$name" TCFUSE_MODE=$m TCFUSE_REPLAY_SYNC=1 -- "$s" 12
                else
                    BY_STREAM=$by replay_vs_eager "$name" TCFUSE_MODE=$m TCFUSE_REPLAY_SYNC=1 \
                        TCFUSE_REPLAY_SLOW=0 -- "$s" 12
                fi || { echo "$name"; return 1; }
            done
        done
    done
    # where the cuts fell: the long stretch with the defaults, and the two streams' and the
    # memsets' shorter ones with slow start off
    for name in d-graph-default-stretch d-full-default-stretch d-graph-0-streams d-full-0-streams \
                d-graph-0-memset d-full-0-memset; do
        n=$(stat_num "$T/$name.graph.err" 'slow end' '[0-9]+ windows cut short')
        [ "${n:-0}" -gt 0 ] || { echo "$name: no cut"; cat "$T/$name.graph.err"; return 1; }
        [ "$(replayed "$T/$name.graph.err")" -ge 10 ] || { echo "$name: few replays"; return 1; }
    done
}

@test "graph and full: with the launcher thread (TCFUSE_REPLAY_LAUNCHER=1) every scenario runs eager's work in eager's order" {
    # Each graph launch is made by tcfuse's thread while the application's goes on, and the
    # stub's takes 300 us of it: whatever must follow a queued launch (a synchronize, a copy
    # back, an event, work on the legacy stream, a launch passed on, held work run as
    # issued, a patch of the same instance, exit) waits for it, or the kernels would run in
    # another order than eager's and the copies back would read the stub's memory early
    local s m name by n
    for m in graph full; do
        for s in loop alternate stretch streams legacy events memset attrs capture exit switch restart; do
            name="l-$m-$s" by=0
            [ "$s" = streams ] || [ "$s" = events ] && by=1
            BY_STREAM=$by replay_vs_eager "$name" TCFUSE_MODE=$m TCFUSE_REPLAY_SYNC=1 \
                TCFUSE_REPLAY_LAUNCHER=1 FAKECUDA_GRAPH_DELAY_US=300 -- "$s" 8 ||
                { echo "$name"; return 1; }
            # one stream's order: the synchronizes and copies among the kernels, where eager
            # had them (a launch still queued at one would come after it)
            [ "$by" = 1 ] || same_text "$name: work and boundaries" \
                <(ran_with_boundaries "$T/$name.eager.log") <(ran_with_boundaries "$T/$name.graph.log")
        done
    done
    # queued: right after a window's launch is queued, a free of a block it reads, a memset
    # on stream 0 (held in the legacy stream's window, or passed on as the thread's own
    # stream's), a launch no node carries, held launches that leave the graph's path, and
    # main's return with a launch queued: each after the queued launch
    for m in graph full; do
        for how in "" "-l gpa-ptds"; do
            name="l-$m-queued${how:+-ptds}"
            order_vs_eager "$name" TCFUSE_MODE=$m TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_LAUNCHER=1 \
                FAKECUDA_GRAPH_DELAY_US=2000 -- $how queued 12 || { echo "$name"; return 1; }
            n=$(stat_num "$T/$name.graph.err" launcher "[0-9]+ graph launches made on tcfuse's launcher thread")
            [ "${n:-0}" -ge 8 ] || { echo "$name: few launches queued"; cat "$T/$name.graph.err"; return 1; }
        done
    done
    # graphs made in the background and evicted (two held) while their launches may be
    # queued: each waits for its own
    order_vs_eager l-evict TCFUSE_REPLAY_LAUNCHER=1 TCFUSE_REPLAY_GRAPHS=2 \
        FAKECUDA_GRAPH_DELAY_US=2000 -- queued 12
    expect_line "$T/l-evict.graph.err" 'graphs .* [1-9][0-9]* evicted'
    expect_line "$T/l-evict.graph.err" ', 0 refused there and their nodes issued one by one'
    # three keys in turn, each window's launch queued behind the last (1 ms each), two graphs
    # kept: a graph made evicts one whose launch is still queued, and waits for it (else the
    # worker destroys an instance the launcher then launches: refused)
    order_vs_eager l-evict3 TCFUSE_REPLAY_LAUNCHER=1 TCFUSE_REPLAY_GRAPHS=2 \
        FAKECUDA_GRAPH_DELAY_US=1000 -- evict 160
    expect_line "$T/l-evict3.graph.err" 'graphs .* [1-9][0-9]* evicted'
    expect_line "$T/l-evict3.graph.err" ', 0 refused there and their nodes issued one by one'
    # a graph with nothing to patch launched on the application's thread (a free after it)
    # while the window before it is queued: after it
    order_vs_eager l-inline TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_LAUNCHER=1 \
        FAKECUDA_GRAPH_DELAY_US=1000 -- inline 8
    expect_line "$T/l-inline.graph.err" "launcher +[1-9][0-9]* graph launches made on tcfuse's launcher thread .*, [1-9][0-9]* on the application's"
    for name in l-graph-loop l-full-loop l-graph-alternate l-graph-streams l-graph-memset; do
        n=$(stat_num "$T/$name.graph.err" launcher "[0-9]+ graph launches made on tcfuse's launcher thread")
        [ "${n:-0}" -gt 0 ] || { echo "$name: nothing launched by the launcher"; cat "$T/$name.graph.err"; return 1; }
        [ "$n" = "$(replayed "$T/$name.graph.err")" ] || { echo "$name: some launched inline"; cat "$T/$name.graph.err"; return 1; }
    done
    # the stats line, and a process without the option has no launcher line
    expect_line "$T/l-graph-loop.graph.err" "launcher +[0-9]+ graph launches made on tcfuse's launcher thread \\([0-9.]+ us each; TCFUSE_REPLAY_LAUNCHER\\), 0 on the application's .*, 0 refused there and their nodes issued one by one; the application's threads waited for it [0-9]+ times"
    replay_vs_eager l-off TCFUSE_REPLAY_SYNC=1 -- loop 8
    ! grep -q 'launcher ' "$T/l-off.graph.err"
}

@test "graph: with the launcher thread, a window with a free after its graph is launched on the application's thread, the free after it" {
    # the frees go after the graph, as without the launcher (compared as in the free test above)
    replay_vs_eager l-free TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_LAUNCHER=1 FAKECUDA_GRAPH_DELAY_US=300 -- free 8 || true
    same_text "l-free: kernels run" <(ran "$T/l-free.eager.log" | grep '^K') <(ran "$T/l-free.graph.log" | grep '^K')
    ran "$T/l-free.graph.log" | awk '
        $1 == "X" { sub(/ptr=0x/, "", $3); freed[$3] = 1; next }
        { for (p in freed) { le = ""; for (i = length(p) - 1; i >= 1; i -= 2) le = le substr(p, i, 2);
                             if (index($7, le)) { print "kernel after the free of " p ": " $0; bad = 1 } } }
        END { exit bad }'
    n=$(stat_num "$T/l-free.graph.err" launcher "[0-9]+ on the application's")
    [ "${n:-0}" -gt 0 ] || { cat "$T/l-free.graph.err"; return 1; }
}

@test "graph and full: a graph launch refused on the launcher thread runs its nodes one by one and gives its key up; without a thread every launch is inline" {
    local m
    for m in graph full; do
        replay_vs_eager "lf-$m" TCFUSE_MODE=$m TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_LAUNCHER=1 \
            FAKECUDA_FAIL=cuGraphLaunch -- loop 8
        expect_line "$T/lf-$m.graph.err" "launcher +[0-9]+ graph launches made on tcfuse's launcher thread .*, 2 refused there and their nodes issued one by one"
        expect_line "$T/lf-$m.graph.err" 'given up +launch-failed 2$'
        # the launcher behind: the key's next replay patches the instance the refused launch
        # issues its nodes from, and waits for it first
        replay_vs_eager "ld-$m" TCFUSE_MODE=$m TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_LAUNCHER=1 \
            FAKECUDA_FAIL=cuGraphLaunch FAKECUDA_GRAPH_DELAY_US=3000 -- queued 8
        expect_line "$T/ld-$m.graph.err" ', [1-9][0-9]* refused there and their nodes issued one by one'
        # no thread could be made (TCFUSE_FAULT's thread site): every launch on the
        # application's thread
        replay_vs_eager "ln-$m" TCFUSE_MODE=$m TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_LAUNCHER=1 \
            TCFUSE_FAULT=thread:every -- loop 8
        expect_line "$T/ln-$m.graph.err" "launcher +0 graph launches made on tcfuse's launcher thread .*, [1-9][0-9]* on the application's"
        # TCFUSE_FAULT's site, on the launcher thread too (its first launch refused)
        replay_vs_eager "lt-$m" TCFUSE_MODE=$m TCFUSE_REPLAY_SYNC=1 TCFUSE_REPLAY_LAUNCHER=1 \
            TCFUSE_FAULT=graph_launch -- loop 8
        expect_line "$T/lt-$m.graph.err" ', 1 refused there and their nodes issued one by one'
        expect_line "$T/lt-$m.graph.err" 'given up +launch-failed 1$'
    done
}

@test "graph: other modes are unchanged by it (observe passes every call as before)" {
    compare_runs obs "$PROGS/replay" capture 4
    compare_runs obs2 "$PROGS/replay" attrs 4
}

@test "full: graph mode's scenarios run as in graph mode (none of their kernels is PyTorch's)" {
    # Full mode is graph mode whose graphs hold fuse mode's plans: with nothing to fuse its
    # windows, holds, captures, order and exits are graph mode's (tests/bats/full.bats: fusion)
    local s
    for s in loop memset switch legacy capture attrs exit free; do
        if [ "$s" = free ]; then   # frees go after the graph: kernels compared alone
            replay_vs_eager "full-$s" TCFUSE_MODE=full TCFUSE_REPLAY_SYNC=1 -- "$s" 8 || true
            same_text "full free: kernels run" <(ran "$T/full-$s.eager.log" | grep '^K') \
                <(ran "$T/full-$s.graph.log" | grep '^K')
            expect_line "$T/full-$s.graph.err" 'windows held \([0-9]+ launches, [0-9]+ memsets and copies, [1-9][0-9]* frees\)'
        else
            replay_vs_eager "full-$s" TCFUSE_MODE=full TCFUSE_REPLAY_SYNC=1 -- "$s" 8
        fi
        expect_line "$T/full-$s.graph.err" '^tcfuse: stats: mode full'
    done
    expect_line "$T/full-loop.graph.err" 'replay +10 windows run as graphs \(200 launches'
    expect_line "$T/full-loop.graph.err" 'full +0 windows replayed with generated kernels .* 0 graphs made with fused steps, 2 with nothing to fuse'
    expect_line "$T/full-capture.graph.err" "during the application's stream captures 32 \\(8 captures\\)"
    expect_line "$T/full-exit.graph.err" ' 1 at exit,'
    # the same stub log as graph mode's, call for call
    replay_vs_eager g-loop TCFUSE_REPLAY_SYNC=1 -- loop 8
    same_text "full vs graph: kernels run" "$T/g-loop.graph.ran" "$T/full-loop.graph.ran"
}
