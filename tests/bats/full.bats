#!/usr/bin/env bats
# Full mode (TCFUSE_MODE=full) against the stand-in driver: graph mode's windows whose
# graphs hold fuse mode's plans. fusechain (tests/stub/progs/fusechain.c) launches
# PyTorch's mul, add and tanh over the same buffers each iteration, a synchronize after
# each: one window, one key. Once the key is warm and mul+add's generated kernel is
# compiled and verified (FAKECUDA_MEM=1: the stub keeps memory, so verification passes),
# the window runs as one graph of two nodes, the generated kernel and tanh, with this
# iteration's pointers patched in; before that, and whenever anything fails, it runs as
# issued. What ran is eager's work in eager's order, mul+add as one kernel in the graphs.

load helpers
bats_require_minimum_version 1.5.0

setup() {
    fusechain_setup || return 1
    need_nvrtc
    export FAKECUDA_MEM=1 TCFUSE_CACHE_DIR="$T/cache" TCFUSE_NVRTC="$NVRTC"
    # windows of TCFUSE_REPLAY_MAX (replay.bats tests slow start and slow end)
    export TCFUSE_REPLAY_SLOW=0 TCFUSE_REPLAY_SLOW_END=0
    export TCFUSE_REPLAY_JUDGE=0  # every graph kept: replays counted exactly (replay.bats tests the judge)
}

# The kernels that ran on the program's stream (the legacy one; tcfuse's worker verifies
# on its own), in order, launched or as a graph's node: mul, add, tanh, fused.
kernels() {
    grep -E '^(cuLaunchKernel|cuGraphLaunch\.node) .* stream=0x0 .* rc=0$' "$1" |
        sed -E 's/^[^ ]+ name=([^ ]+) .*/\1/' |
        sed -E 's/.*MulFunctor.*/mul/; s/.*CUDAFunctor_add.*/add/; s/.*tanh_kernel.*/tanh/;
                s/^tcf_fused.*/fused/'
}

# Eager's kernels with mul and add of the iterations that ran as graphs (a tcf_fused node
# where eager ran them) read as one: the order of everything else is eager's.
same_work() {
    kernels "$1" | paste -sd' ' | sed 's/mul add/M/g' >"$T/eager.k"
    kernels "$2" | paste -sd' ' | sed 's/mul add/M/g; s/fused/M/g' >"$T/full.k"
    same_text "kernels run" "$T/eager.k" "$T/full.k"
}

# stat_num FILE LINE ERE: the number that starts the ERE's first match on the stats line.
stat_num() { stats_line "$1" "$2" | grep -oE "$3" | head -1 | grep -oE '^[0-9]+'; }
full_replayed() { stat_num "$1" full '[0-9]+ windows replayed with generated kernels'; }

@test "full: a window that fuses is made a graph of its plan and replayed, pointers patched" {
    local how
    for how in return swap; do
        base "$how.plain" "$PROGS/fusechain" 8 "$how"
        TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_REPLAY_SYNC=1 \
            TCFUSE_REPLAY_RING=1 tcf "$how.full" "$PROGS/fusechain" 8 "$how"
        [ "$status" = 0 ] || { cat "$T/$how.full.err"; return 1; }
        same_text "$how: stdout" "$T/$how.plain.out" "$T/$how.full.out"
        same_work "$T/$how.plain.log" "$T/$how.full.log"
        # warm-up 2: iterations 1-3 run as issued (the third is planned and made a graph),
        # the 5 left are graphs of the generated kernel and tanh
        expect_line "$T/$how.full.err" '^tcfuse: +full +5 windows replayed with generated kernels \(5 kernels run in graphs, 5 launches fused away\); 1 graphs made with fused steps'
        expect_line "$T/$how.full.err" '^tcfuse: +replay +5 windows run as graphs \(15 launches'
        [ "$(grep -c '^cuGraphLaunch\.node name=tcf_fused .* rc=0$' "$T/$how.full.log")" = 5 ]
        # graph mode's kernels are nothing but the program's: no generated kernel
        TCFUSE_MODE=graph TCFUSE_STATS=1 TCFUSE_REPLAY_SYNC=1 tcf "$how.graph" "$PROGS/fusechain" 8 "$how"
        ! grep -q 'tcf_fused' "$T/$how.graph.log"
        same_text "$how graph: kernels" <(kernels "$T/$how.plain.log") <(kernels "$T/$how.graph.log")
    done
    # fixed pointers: nothing to patch; swapped buffers: the generated kernel's argument
    # and tanh's pointers change every iteration, both nodes of the one instance patched
    # each replay
    expect_line "$T/return.full.err" 'patches +nodes patched per replay: 0:5; mean 0.00'
    expect_line "$T/swap.full.err" 'patches +nodes patched per replay: 2-3:5; mean 2.00'
    [ "$(grep -c '^cuGraphExecKernelNodeSetParams_v2 .* rc=0$' "$T/swap.full.log")" = 10 ]
}

@test "full: with two instances (TCFUSE_REPLAY_RING=2, full mode's default), swapped buffers are patched once" {
    # the generated kernel's argument (found in the memo) and tanh's pointers alternate
    # between the two sets of buffers: one instance patches both nodes every replay; two,
    # replayed in turn, patch them once, at the first replay (the graph was made with the
    # other set's bytes), and never after (no window runs as issued between replays here:
    # the judge is off)
    base ring.plain "$PROGS/fusechain" 12 swap
    local r
    for r in 1 2 0; do
        TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_REPLAY_SYNC=1 \
            TCFUSE_REPLAY_JUDGE=0 TCFUSE_REPLAY_RING=$r tcf "ring$r.full" "$PROGS/fusechain" 12 swap
        [ "$status" = 0 ] || { cat "$T/ring$r.full.err"; return 1; }
        same_text "ring $r: stdout" "$T/ring.plain.out" "$T/ring$r.full.out"
        same_work "$T/ring.plain.log" "$T/ring$r.full.log"
        expect_line "$T/ring$r.full.err" '^tcfuse: +full +9 windows replayed with generated kernels'
    done
    expect_line "$T/ring1.full.err" 'patches +nodes patched per replay: 2-3:9; mean 2.00, max 2;'
    expect_line "$T/ring2.full.err" 'patches +nodes patched per replay: 0:8 2-3:1; mean 0.22, max 2;'
    # 0, the default: two instances in full mode
    expect_line "$T/ring0.full.err" 'patches +nodes patched per replay: 0:8 2-3:1; mean 0.22, max 2;'
    expect_line "$T/ring0.full.err" 'graphs +1 made .*, 1 of them with a second instance \(TCFUSE_REPLAY_RING; 0 refused\)'
    ! grep -q 'second instance' "$T/ring1.full.err"
}

@test "full: while a key's kernel compiles its windows replay a plain graph, then a fused one replaces it" {
    # No compile wait: the key is warm long before the worker has compiled and verified
    # mul+add; meanwhile its windows replay graph mode's graph of the launches, and the
    # first window after the compile (the kernel table moved) is planned again, runs as
    # issued, and makes the fused graph that the windows after it replay. The stub's
    # launches take 2 ms and its graph launches 4 (a graph is clearly faster than the window's
    # three launches, so no key is given up as not faster), so that the compile ends within the run.
    base wait.plain "$PROGS/fusechain" 400 swap
    FAKECUDA_LAUNCH_DELAY_US=2000 FAKECUDA_GRAPH_DELAY_US=4000 TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_REPLAY_SYNC=1 \
        tcf wait.full "$PROGS/fusechain" 400 swap
    [ "$status" = 0 ] || { cat "$T/wait.full.err"; return 1; }
    same_text "stdout" "$T/wait.plain.out" "$T/wait.full.out"
    same_work "$T/wait.plain.log" "$T/wait.full.log"
    expect_line "$T/wait.full.err" '1 plain while their kernels compiled, 0 fused while some did; 1 replaced by plans fusing more \(0 as a kernel came'
    # what replay took on the application's thread: at least the stub's 4 ms a graph launch
    # per window replayed; full mode's planning is counted in its own line
    expect_line "$T/wait.full.err" "ms replaying on the application's threads \\(([4-9][0-9]{3}|[1-9][0-9]{4,})\\.[0-9] us a window\\)"
    expect_line "$T/wait.full.err" "; on the application's threads, [0-9]+\\.[0-9] ms planning replayed windows again \\([0-9]+\\.[0-9] us a window\\), [0-9]+\\.[0-9] ms planning at learning and upgrades$"
    [ "$(full_replayed "$T/wait.full.err")" -gt 0 ] || { cat "$T/wait.full.err"; return 1; }
    # one graph of each: the plain one first, then the fused one, each instantiated twice
    # (full mode's two instances)
    expect_line "$T/wait.full.err" '1 graphs made with fused steps, 0 with nothing to fuse'
    [ "$(grep -c '^cuGraphInstantiate' "$T/wait.full.log")" = 4 ]
    # the plain graph replayed eager's mul and add before the generated kernel took over
    local plain fused
    plain=$(grep -n '^cuGraphLaunch\.node name=.*CUDAFunctor_add' "$T/wait.full.log" | tail -n 1 | cut -d: -f1)
    fused=$(grep -n '^cuGraphLaunch\.node name=tcf_fused' "$T/wait.full.log" | head -n 1 | cut -d: -f1)
    [ -n "$plain" ] && [ -n "$fused" ] && [ "$plain" -lt "$fused" ] || { grep -c cuGraphLaunch "$T/wait.full.log"; return 1; }
    ! grep -q '^cuGraphLaunch\.node name=.*CUDAFunctor_add' <(tail -n +"$fused" "$T/wait.full.log")
}

@test "full: a key whose groups' kernels come one by one fuses each group as its kernel comes" {
    # fusechain's `two` window holds two groups, mul+add and add+mul, each a kernel of its
    # own. mul+add's is in the disk cache (a fuse-mode run made it); add+mul's is compiled
    # after it. The key's graph is plain while neither is ready, then fuses mul+add while
    # add+mul's compiles (its launches nodes as issued), then both: each kernel's coming
    # moves the kernel table once, and every move is seen (an epoch stored as epoch | 1
    # took two moves for one and missed the kernel between them).
    TCFUSE_MODE=fuse TCFUSE_COMPILE_WAIT=1 tcf fill "$PROGS/fusechain" 4
    [ "$status" = 0 ] || { cat "$T/fill.err"; return 1; }
    base two.plain "$PROGS/fusechain" 300 two
    FAKECUDA_LAUNCH_DELAY_US=2000 FAKECUDA_GRAPH_DELAY_US=4000 TCFUSE_MODE=full TCFUSE_STATS=1 \
        TCFUSE_REPLAY_SYNC=1 tcf two.full "$PROGS/fusechain" 300 two
    [ "$status" = 0 ] || { cat "$T/two.full.err"; return 1; }
    same_text "stdout" "$T/two.plain.out" "$T/two.full.out"
    # eager's work in eager's order, each group's two launches or its generated kernel
    kernels "$T/two.plain.log" | paste -sd' ' | sed 's/mul add/G/g; s/add mul/G/g' >"$T/eager.k"
    kernels "$T/two.full.log" | paste -sd' ' | sed 's/mul add/G/g; s/add mul/G/g; s/fused/G/g' >"$T/full.k"
    same_text "kernels run" "$T/eager.k" "$T/full.k"
    expect_line "$T/two.full.err" '1 plain while their kernels compiled, [1-9][0-9]* fused while some did; [2-9][0-9]* replaced by plans fusing more'
    # the graphs' nodes, one line a launch: plain, then mul+add fused beside add and mul as
    # issued, then both fused, and never an earlier form after a later one
    awk '/^cuGraphLaunch /{ if (s != "") print s; s = "graph" }
         /^cuGraphLaunch\.node/{ n = $2; sub("name=", "", n);
             n = n ~ /^tcf_fused/ ? "fused" : n ~ /MulFunctor/ ? "mul" : n ~ /CUDAFunctor_add/ ? "add" : "tanh";
             s = s " " n }
         END { if (s != "") print s }' "$T/two.full.log" | uniq >"$T/forms"
    same_text "graph forms" <(printf '%s\n' 'graph mul add tanh add mul tanh' \
        'graph fused tanh add mul tanh' 'graph fused tanh fused tanh') "$T/forms"
}

@test "full: a replayed window is bound from its key's memo, not planned again, byte for byte the planner's" {
    # TCFUSE_REPLAY_REBIND=2 binds each replayed window from its key's memo and also plans
    # it, comparing the two step by step and byte by byte (the generated kernel, its launch
    # shape, its argument): any difference is counted and the plan runs. Fixed pointers:
    # every group takes the argument the window before had; swapped buffers: the second set
    # is re-bound once (tcf_fuser_bind), then each set takes its own argument; the `two`
    # window: two groups kept; frees in the window (async): no plan kept to bind from,
    # every window planned; 32 sets of buffers in turn (as many as the memo keeps a group's
    # arguments for): each re-bound once; 33: the least recently used is always the one
    # needed, every window re-bound; 2 sets whose launches' bytes never repeat (a
    # functor's padding): each set re-bound once, then its argument found by its bytes,
    # the padding zeroed (by its decoded operands with TCFUSE_REPLAY_UNREAD=0); no memory
    # for memos: every window re-bound.
    local how
    for how in return swap two async sets:32 sets:33 noise:2; do
        local prog=(fusechain 40 "$how")
        [[ $how == *:* ]] && prog=(fusechain 80 "${how%:*}" "${how#*:}")
        base "$how.plain" "$PROGS/${prog[0]}" "${prog[@]:1}"
        TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_REPLAY_SYNC=1 \
            TCFUSE_REPLAY_REBIND=2 tcf "$how.full" "$PROGS/${prog[0]}" "${prog[@]:1}"
        [ "$status" = 0 ] || { cat "$T/$how.full.err"; return 1; }
        same_text "$how: stdout" "$T/$how.plain.out" "$T/$how.full.out"
        expect_line "$T/$how.full.err" '^tcfuse: +rebind check +[0-9]+ bound windows planned beside, 0 differed'
        # the same work as with every window planned (TCFUSE_REPLAY_REBIND=0)
        TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_REPLAY_SYNC=1 \
            TCFUSE_REPLAY_REBIND=0 tcf "$how.planned" "$PROGS/${prog[0]}" "${prog[@]:1}"
        same_text "$how: kernels run" <(kernels "$T/$how.planned.log") <(kernels "$T/$how.full.log")
    done
    expect_line "$T/return.full.err" '^tcfuse: +rebind +36 replayed windows bound without planning \(0 groups re-bound, 36 kept from earlier windows \(0 by their decoded operands\), 0 dropped'
    expect_line "$T/swap.full.err" '^tcfuse: +rebind +36 replayed windows bound without planning \(1 groups re-bound, 35 kept from earlier windows \(0 by their decoded operands\), 0 dropped'
    expect_line "$T/two.full.err" '^tcfuse: +rebind +36 replayed windows bound without planning \(0 groups re-bound, 72 kept from earlier windows \(0 by their decoded operands\), 0 dropped'
    expect_line "$T/async.full.err" '^tcfuse: +rebind +0 replayed windows bound without planning .*, 0 refused and planned'
    expect_line "$T/sets:32.full.err" '^tcfuse: +rebind +76 replayed windows bound without planning \(31 groups re-bound, 45 kept from earlier windows \(0 by their decoded operands\), 0 dropped'
    expect_line "$T/sets:33.full.err" '^tcfuse: +rebind +76 replayed windows bound without planning \(76 groups re-bound, 0 kept from earlier windows \(0 by their decoded operands\), 45 dropped from a full memo'
    expect_line "$T/noise:2.full.err" '^tcfuse: +rebind +76 replayed windows bound without planning \(1 groups re-bound, 75 kept from earlier windows \(0 by their decoded operands\), 0 dropped'
    expect_line "$T/swap.planned.err" '^tcfuse: +rebind +0 replayed windows .*\(TCFUSE_REPLAY_REBIND=0\)$'
    # the same noise with TCFUSE_REPLAY_UNREAD=0: the bytes compared as they are, so each
    # argument is found by its decoded operands
    TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_REPLAY_SYNC=1 \
        TCFUSE_REPLAY_REBIND=2 TCFUSE_REPLAY_UNREAD=0 tcf noise.raw "$PROGS/fusechain" 80 noise 2
    same_text "noise, unread 0: stdout" "$T/noise:2.plain.out" "$T/noise.raw.out"
    expect_line "$T/noise.raw.err" '^tcfuse: +rebind +76 replayed windows bound without planning \(1 groups re-bound, 75 kept from earlier windows \(75 by their decoded operands\), 0 dropped'
    expect_line "$T/noise.raw.err" '^tcfuse: +rebind check +[0-9]+ bound windows planned beside, 0 differed'
    # no memory for the memos (TCFUSE_REPLAY_MEMO=0): nothing kept, every group re-bound
    TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_REPLAY_SYNC=1 \
        TCFUSE_REPLAY_REBIND=2 TCFUSE_REPLAY_MEMO=0 tcf swap.nomemo "$PROGS/fusechain" 40 swap
    same_text "swap, no memo: stdout" "$T/swap.plain.out" "$T/swap.nomemo.out"
    expect_line "$T/swap.nomemo.err" '^tcfuse: +rebind +36 replayed windows bound without planning \(36 groups re-bound, 0 kept from earlier windows \(0 by their decoded operands\), 0 dropped from a full memo, [1-9][0-9]* not kept for the memos. memory \(TCFUSE_REPLAY_MEMO\), which holds 0\.00 MiB'
    expect_line "$T/swap.nomemo.err" '^tcfuse: +rebind check +36 bound windows planned beside, 0 differed'
}

@test "full: a kernel that fails verification leaves graph mode's graph of the launches" {
    # FAKECUDA_MEM unset: the stub keeps no memory, so no generated kernel can be verified
    # (the group's kernel is settled as bad): the plan is final with nothing fused
    unset FAKECUDA_MEM
    base bad.plain "$PROGS/fusechain" 8 swap
    TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_REPLAY_SYNC=1 \
        tcf bad.full "$PROGS/fusechain" 8 swap
    [ "$status" = 0 ] || { cat "$T/bad.full.err"; return 1; }
    same_text "stdout" "$T/bad.plain.out" "$T/bad.full.out"
    same_text "kernels" <(kernels "$T/bad.plain.log") <(kernels "$T/bad.full.log")
    expect_line "$T/bad.full.err" '^tcfuse: +replay +5 windows run as graphs'
    expect_line "$T/bad.full.err" '^tcfuse: +full +0 windows replayed with generated kernels .* 0 graphs made with fused steps, 1 with nothing to fuse'
    # TCFUSE_FUSION=0: graph mode's graphs, nothing compiled
    export FAKECUDA_MEM=1
    base off.plain "$PROGS/fusechain" 8 swap
    TCFUSE_FUSION=0 TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_REPLAY_SYNC=1 \
        tcf off.full "$PROGS/fusechain" 8 swap
    same_text "fusion off: stdout" "$T/off.plain.out" "$T/off.full.out"
    ! grep -q 'tcf_fused' "$T/off.full.log"
    expect_line "$T/off.full.err" '^tcfuse: +replay +5 windows run as graphs'
}

@test "full: the graph API failing runs the windows as issued, under a named reason" {
    base api.plain "$PROGS/fusechain" 8 swap
    local fail
    for fail in cuGraphInstantiateWithFlags cuGraphLaunch cuGraphAddKernelNode_v2; do
        FAKECUDA_FAIL=$fail TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 \
            TCFUSE_REPLAY_SYNC=1 tcf "api.$fail" "$PROGS/fusechain" 8 swap
        [ "$status" = 0 ] || { cat "$T/api.$fail.err"; return 1; }
        same_text "$fail: stdout" "$T/api.plain.out" "$T/api.$fail.out"
        same_text "$fail: kernels" <(kernels "$T/api.plain.log") <(kernels "$T/api.$fail.log")
        expect_line "$T/api.$fail.err" '^tcfuse: +given up +(instantiate-failed|launch-failed|node-refused) 1'
    done
    # the same key, other steps: the second set of buffers is misaligned, so the kernel
    # planned on the first does not serve it; that window runs as issued, the key is
    # given up, and every window after it runs as issued
    base mis.plain "$PROGS/fusechain" 8 misalign
    TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_REPLAY_SYNC=1 \
        tcf mis.full "$PROGS/fusechain" 8 misalign
    [ "$status" = 0 ] || { cat "$T/mis.full.err"; return 1; }
    same_text "misalign: stdout" "$T/mis.plain.out" "$T/mis.full.out"
    same_text "misalign: kernels" <(kernels "$T/mis.plain.log") <(kernels "$T/mis.full.log")
    expect_line "$T/mis.full.err" '^tcfuse: +given up +plan-changed 1$'
    # the stats say how it changed: the generated kernel's step (the misaligned set's
    # kernel is another)
    expect_line "$T/mis.full.err" '^tcfuse: +plan changed +0 windows planned into another number of steps than their graph.s, 1 with a step of another kernel, shape or parameter size \(1 of them a generated kernel.s\)$'
    expect_line "$T/mis.full.err" '^tcfuse: +replay +0 windows run as graphs'
    # a patch refused: the whole graph is updated instead, and the window still replays
    FAKECUDA_FAIL=cuGraphExecKernelNodeSetParams_v2 TCFUSE_MODE=full TCFUSE_STATS=1 \
        TCFUSE_COMPILE_WAIT=1 TCFUSE_REPLAY_SYNC=1 tcf api.patch "$PROGS/fusechain" 8 swap
    same_text "patch: stdout" "$T/api.plain.out" "$T/api.patch.out"
    same_work "$T/api.plain.log" "$T/api.patch.log"
    [ "$(full_replayed "$T/api.patch.err")" = 5 ]
}

@test "full: exits and forks with a window held end as without tcfuse" {
    # the kernel compiled and on disk first
    TCFUSE_MODE=full TCFUSE_COMPILE_WAIT=1 tcf warm "$PROGS/fusechain" 2
    local how want
    declare -A wants=([return]=0 [exit]=3 [_exit]=4 [handler]=5 [fork]=0)
    for how in return exit _exit handler fork; do
        want=${wants[$how]}
        base "$how.plain" "$PROGS/fusechain" 5 "$how"
        [ "$status" = "$want" ]
        TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_REPLAY_SYNC=1 TCFUSE_COMPILE_WAIT=1 \
            tcf "$how.full" timeout -k 1 20 "$PROGS/fusechain" 5 "$how"
        [ "$status" = "$want" ] || { echo "$how: status $status"; cat "$T/$how.full.err"; return 1; }
        same_text "$how: stdout" "$T/$how.plain.out" "$T/$how.full.out"
        # the same with the launcher thread, its launches slow: the work and the ends are
        # plain's too
        TCFUSE_MODE=full TCFUSE_STATS=1 TCFUSE_REPLAY_SYNC=1 TCFUSE_COMPILE_WAIT=1 \
            TCFUSE_REPLAY_LAUNCHER=1 FAKECUDA_GRAPH_DELAY_US=2000 \
            tcf "$how.launcher" timeout -k 1 20 "$PROGS/fusechain" 5 "$how"
        [ "$status" = "$want" ] || { echo "$how launcher: status $status"; cat "$T/$how.launcher.err"; return 1; }
        same_text "$how launcher: stdout" "$T/$how.plain.out" "$T/$how.launcher.out"
        [ "$how" != return ] ||
            expect_line "$T/$how.launcher.err" "launcher +[1-9][0-9]* graph launches made on tcfuse's launcher thread"
        [ "$how" = _exit ] && continue
        same_work "$T/$how.plain.log" "$T/$how.launcher.log"
        # the last mul and add, launched without a synchronize, follow the graph's key:
        # held, and issued at exit, never lost
        [ "$how" = return ] || [ "$how" = fork ] ||
            expect_line "$T/$how.full.err" 'as issued .* 1 at exit'
        [ "$(full_replayed "$T/$how.full.err")" -gt 0 ] || { cat "$T/$how.full.err"; return 1; }
        same_work "$T/$how.plain.log" "$T/$how.full.log"
    done
}
