#!/usr/bin/env bats
# Fault injection: TCFUSE_FAULT (base/fault.h) fails the N-th call at a named site of
# tcfuse's own work, and FAKECUDA_FAIL=sym:N fails the N-th call of a driver entry point
# (tests/stub). Whatever fails, the program's output must be what it is without tcfuse,
# every iteration's chain must run (as issued, or inside a generated kernel: never both,
# never neither), and the stats must name the failure.
#
# The program is fusechain (tests/stub/progs/fusechain.c): PyTorch's float mul and add, by
# their real names and layouts, 4 iterations. With NVRTC at hand, FAKECUDA_MEM=1 (so that
# verification can pass on the stand-in) and TCFUSE_COMPILE_WAIT=1, the first iteration is
# learned and the other 3 run fused: the sites below are all reached.

load helpers
bats_require_minimum_version 1.5.0

ITERS=4

setup() {
    fusechain_setup || return 1
    export FAKECUDA_MEM=1
}


# chain NAME [VAR=VALUE...]: fusechain in fuse mode (cache $T/cache unless set), compared
# with one run without tcfuse: same status and stdout, nothing else on stderr, every
# iteration's add accounted for. Stats in $T/NAME.err.
chain() {
    local name=$1
    shift
    [ -f "$T/plain.out" ] || base plain "$PROGS/fusechain" "$ITERS"
    (
        export TCFUSE_MODE=fuse TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_CACHE_DIR="$T/cache" \
            TCFUSE_NVRTC="$NVRTC"
        local kv
        for kv in "$@"; do export "${kv?}"; done
        _run "$LIB" "$name" "$PROGS/fusechain" "$ITERS"
    )
    status=$(cat "$T/$name.rc")
    [ "$status" = "$(cat "$T/plain.rc")" ] || { echo "$name: exit $status, plain $(cat "$T/plain.rc")"; cat "$T/$name.err"; return 1; }
    same_text "$name: stdout" "$T/plain.out" "$T/$name.out" || return 1
    if grep -v '^tcfuse: ' "$T/$name.err" | grep -q .; then
        echo "$name: the program's stderr differs:"; cat "$T/$name.err"; return 1
    fi
    local data issued fused
    data=$(sed -n 's/^add-data=//p' "$T/plain.out")
    issued=$(log_launches "$T/$name.log" | grep -c ",$data\$" || true)
    fused=$(groups "$name")
    if [ "$((issued + fused))" != "$ITERS" ]; then
        echo "$name: $issued adds issued as is and $fused fused, for $ITERS iterations"
        cat "$T/$name.err"; return 1
    fi
}

groups() { stats_line "$T/$1.err" fused | sed -E 's/^tcfuse: +fused +([0-9]+) groups.*/\1/'; }
# count NAME LINE REASON: the count after REASON on stats line LINE (0 when absent).
count() {
    stats_line "$T/$1.err" "$2" | sed -E "s/^tcfuse: +$2 +//" | tr ',' '\n' |
        sed -nE "s/^ *$3:? ([0-9]+).*/\\1/p" | head -1 | grep . || echo 0
}
# injected NAME SITE: "<injected> <calls>" from the faults line.
injected() { stats_line "$T/$1.err" faults | grep -oE "$2 [0-9]+ of [0-9]+" | awk '{ print $2, $4 }'; }

# expect NAME WHAT WANT: fails showing the stats when WHAT (a number) is not WANT.
expect() {
    [ "$2" = "$3" ] || { echo "$1: got $2, want $3"; grep '^tcfuse: ' "$T/$1.err"; return 1; }
}

@test "faults: without a fault the chain is fused, and a site that is never reached injects nothing" {
    need_nvrtc
    chain none
    expect none "$(groups none)" 3
    chain armed TCFUSE_FAULT=fused_launch:1000
    expect armed "$(groups armed)" 3
    expect armed "$(injected armed fused_launch)" "0 3"
}

@test "faults: NVRTC that cannot be opened, a failed compile, a failed load: nothing fused, each named" {
    need_nvrtc
    chain open TCFUSE_FAULT=nvrtc_open
    expect open "$(groups open)" 0
    expect open "$(injected open nvrtc_open)" "1 1"
    [ "$(count open 'not held' 'no NVRTC')" -gt 0 ] || { cat "$T/open.err"; false; }
    # NVRTC is opened (by the worker, made then) at the first kernel launch, not when fuse
    # mode starts: a process that forks before its first kernel leaves its child without
    # it (the driver refuses a child whose parent had it loaded), and one that never
    # launches a kernel never opens it
    TCFUSE_MODE=fuse TCFUSE_STATS=1 TCFUSE_NVRTC="$NVRTC" TCFUSE_FAULT=nvrtc_open \
        tcf nolaunch "$PROGS/scen" setup
    [ "$status" = 0 ]
    expect nolaunch "$(injected nolaunch nvrtc_open)" "0 0"
    # the group's compile first, then a kernel's own check
    chain compile TCFUSE_FAULT=nvrtc_compile
    expect compile "$(count compile fallbacks compile_failed)" 1
    chain compile2 TCFUSE_FAULT=nvrtc_compile:2 TCFUSE_CACHE_DIR="$T/cache2"
    expect compile2 "$(count compile2 fallbacks verify_unable)" 1
    chain load TCFUSE_FAULT=module_load TCFUSE_CACHE_DIR="$T/cache3"
    expect load "$(count load fallbacks load_failed)" 1
    chain load2 TCFUSE_FAULT=module_load:2 TCFUSE_CACHE_DIR="$T/cache4"
    expect load2 "$(count load2 fallbacks verify_unable)" 1
    expect_line "$T/load2.err" '^tcfuse: +unable +1 x its generated kernel would not compile or load \(first: [A-Za-z_]+/[a-z0-9]+ alone\)'
    for r in compile compile2 load load2; do
        expect $r "$(groups $r)" 0
    done
    # several sites at once
    chain both TCFUSE_FAULT="nvrtc_compile:2, module_load" TCFUSE_CACHE_DIR="$T/cache5"
    expect both "$(injected both nvrtc_compile) $(injected both module_load)" "0 1 1 1"
    expect both "$(count both fallbacks load_failed)" 1
}

@test "faults: a generated kernel whose launch fails: that iteration's launches run as issued" {
    need_nvrtc
    chain one TCFUSE_FAULT=fused_launch:2
    expect one "$(groups one)" 2
    expect one "$(count one fallbacks fused_failed)" 1
    chain all TCFUSE_FAULT=fused_launch:every
    expect all "$(groups all)" 0
    expect all "$(count all fallbacks fused_failed)" 3
    chain later TCFUSE_FAULT=fused_launch:2+
    expect later "$(groups later)" 1
}

@test "faults: disk-cache reads, writes and renames that fail: misses, counted, still fused" {
    need_nvrtc
    chain write TCFUSE_FAULT=cache_write
    expect write "$(count write fallbacks cache_write_failed)" 1
    chain rename TCFUSE_FAULT=cache_rename:every TCFUSE_CACHE_DIR="$T/cache2"
    [ "$(count rename fallbacks cache_write_failed)" -ge 3 ] || { cat "$T/rename.err"; false; }
    [ -z "$(ls -A "$T/cache2")" ] || { echo "a failed rename left files:"; ls -la "$T/cache2"; false; }
    chain warm
    chain read TCFUSE_FAULT=cache_read
    expect read "$(count read fallbacks cache_read_failed)" 1
    chain readall TCFUSE_FAULT=cache_read:every
    expect readall "$(stats_line "$T/readall.err" kernels | grep -oE '[0-9]+ from the disk')" "0 from the disk"
    for r in write rename warm read readall; do
        expect $r "$(groups $r)" 3
    done
}

@test "faults: no worker thread: nothing is held, the program runs as issued" {
    need_nvrtc
    chain thread TCFUSE_FAULT=thread
    expect thread "$(groups thread)" 0
    expect thread "$(count thread fallbacks no_worker)" 1
    # the worker is made for the first chain's job: from then on nothing is decoded
    [ "$(count thread 'not held' 'no worker')" -ge 9 ] || { cat "$T/thread.err"; false; }
}

@test "faults: every one of tcfuse's own allocations, failing in turn, and all of them" {
    need_nvrtc
    chain count TCFUSE_FAULT=alloc:1000000
    local calls n bad=()
    calls=$(injected count alloc | awk '{ print $2 }')
    [ "$calls" -gt 10 ] || { echo "only $calls allocations counted"; cat "$T/count.err"; false; }
    for ((n = 1; n <= calls; n++)); do
        chain "alloc$n" TCFUSE_FAULT=alloc:$n TCFUSE_CACHE_DIR="$T/cache$n" >"$T/alloc$n.why" ||
            { bad+=("$n: $(head -1 "$T/alloc$n.why")"); continue; }
        [ "$(injected "alloc$n" alloc | awk '{ print $1 }')" = 1 ] || bad+=("$n: not injected")
        [ "$(count "alloc$n" problems allocations-failed)" = 1 ] || bad+=("$n: not counted")
    done
    chain every TCFUSE_FAULT=alloc:every
    expect every "$(groups every)" 0
    if [ "${#bad[@]}" -gt 0 ]; then
        printf 'alloc:%s\n' "${bad[@]}"; false
    fi
}

@test "faults: observe mode changes no driver call when its allocations fail" {
    local n bad=()
    base mt "$PROGS/mt" streams 4 25
    work_log "$T/mt.log" | sort >"$T/mt.sorted"
    for n in 1 2 3 5 8 13 21 every; do
        TCFUSE_FAULT=alloc:$n compare_runs "observe$n" "$PROGS/scen" windows || bad+=("$n")
        # threads: the stub's lines interleave, compare them sorted (mt.c)
        TCFUSE_FAULT=alloc:$n tcf "mt$n" "$PROGS/mt" streams 4 25
        work_log "$T/mt$n.log" | sort >"$T/mt$n.sorted"
        same_text "mt $n: stdout" "$T/mt.out" "$T/mt$n.out" &&
            same_text "mt $n: driver calls" "$T/mt.sorted" "$T/mt$n.sorted" || bad+=("mt $n")
    done
    [ "${#bad[@]}" = 0 ] || { echo "alloc: ${bad[*]}"; false; }
}

@test "faults: the stand-in driver failing tcfuse's own calls: the program's results stand" {
    need_nvrtc
    # world_init makes one module, four streams and four buffers before fusechain's four:
    # the calls after those are tcfuse's (its generated kernels, the worker's stream, the
    # scratch memory of verification, stream-ordered: fusechain itself allocates none
    # that way, the worker's context).
    FAKECUDA_FAIL=cuModuleLoadData:2 chain load
    expect load "$(count load fallbacks load_failed)" 1
    FAKECUDA_FAIL=cuStreamCreate:5+ chain stream TCFUSE_CACHE_DIR="$T/cache2"
    FAKECUDA_FAIL=cuMemAllocAsync chain scratch TCFUSE_CACHE_DIR="$T/cache3"
    FAKECUDA_FAIL=cuCtxSetCurrent:2+ chain ctx TCFUSE_CACHE_DIR="$T/cache4"
    expect stream "$(count stream fallbacks verify_unable)" 1
    expect scratch "$(count scratch fallbacks verify_unable)" 1
    # the summary says why a check could not run, and what about
    expect_line "$T/stream.err" '^tcfuse: +unable +1 x no stream to check it on \(first: '
    expect_line "$T/scratch.err" '^tcfuse: +unable +1 x .*\(first: .*\)$'
    expect ctx "$(count ctx fallbacks no_context)" 1
    for r in load stream scratch ctx; do
        expect $r "$(groups $r)" 0
    done
    # every launch of the generated kernel refused by the driver: the originals run
    FAKECUDA_FAIL=cuModuleGetFunction:2+ chain getfn TCFUSE_CACHE_DIR="$T/cache5"
    expect getfn "$(count getfn fallbacks load_failed)" 1
}

@test "faults: a bad TCFUSE_FAULT is reported once and arms nothing" {
    local v
    for v in nope nvrtc_open:0 alloc:x alloc:1:2 "alloc,,thread" "alloc,alloc" "alloc:-1" \
        "thread:99999999999999"; do
        TCFUSE_FAULT=$v TCFUSE_STATS=1 tcf bad "$PROGS/scen" windows
        [ "$status" = 0 ]
        [ "$(grep -c 'TCFUSE_FAULT=.* is not valid' "$T/bad.err")" = 1 ] || { echo "$v:"; cat "$T/bad.err"; false; }
        ! grep -q 'faults ' "$T/bad.err" || { echo "$v armed something:"; cat "$T/bad.err"; false; }
    done
    TCFUSE_FAULT=' alloc:3+ , thread:every ' TCFUSE_PRINT_CONFIG=1 tcf ok "$PROGS/scen" windows
    ! grep -q 'is not valid' "$T/ok.err" || { cat "$T/ok.err"; false; }
}
