#!/usr/bin/env bats
# bench/sample.c and bench/sample-report, the wall-time sampler used to find where a
# host-bound program's time goes on the GPU machine (no perf there): each thread's samples
# must be its own, named from the program's own symbols as well as its libraries'.

load helpers
bats_require_minimum_version 1.5.0

setup() {
    clean_setup || return 1
    command -v cc >/dev/null || skip "no C compiler"
    command -v nm >/dev/null || skip "no nm"
    cc -O2 -shared -fPIC bench/sample.c -o "$T/libsample.so" -ldl -lrt
    # The first thread spins in its own arithmetic, the second in a system call: where
    # each was interrupted tells their samples apart.
    cat >"$T/spin.c" <<'EOF'
#include <pthread.h>
#include <time.h>
#include <unistd.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
__attribute__((noinline)) static void *spin_worker(void *p)
{
    double end = now() + 0.4;
    while (now() < end)
        getppid();
    return p;
}
__attribute__((noinline)) static double spin_main(void)
{
    double end = now() + 0.4, x = 1;
    while (now() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    return x;
}
int main(void)
{
    pthread_t t;
    pthread_create(&t, 0, spin_worker, 0);
    volatile double x = spin_main();
    pthread_join(t, 0);
    return x < 0;
}
EOF
    cc -O1 -o "$T/spin" "$T/spin.c" -lpthread
}

@test "sampler: SAMPLE_THREADS=1 tags each thread's samples; the report reads the program's own symbols" {
    SAMPLE_THREADS=1 SAMPLE_US=1000 SAMPLE_DELAY_S=0.001 SAMPLE_OUT="$T/s.out" \
        LD_PRELOAD="$T/libsample.so" "$T/spin"
    run bench/sample-report --threads "$T/s.out"
    [ "$status" = 0 ]
    # 0.4 s at 1 ms: about 400 each on an idle machine; a busy one runs them less.
    local n0 n1
    n0=$(awk '$1 == "thread" && $2 == 0 {print $3}' <<<"$output")
    n1=$(awk '$1 == "thread" && $2 == 1 {print $3}' <<<"$output")
    [ "${n0:-0}" -ge 50 ] && [ "${n1:-0}" -ge 50 ] || { echo "$output"; return 1; }
    # each thread's line names where most of its samples landed: its own spinning function
    grep -E '^  thread  0 .* most in .* spin_main' <<<"$output" || { echo "$output"; return 1; }
    grep -E '^  thread  1 .* libtcfuse +0\.0% .* most in ' <<<"$output" || { echo "$output"; return 1; }
    run bench/sample-report --thread 0 --top 3 "$T/s.out"
    [ "$status" = 0 ]
    grep -A3 -- '-- functions, self' <<<"$output" | grep -q 'spin  spin_main' || { echo "$output"; return 1; }
    ! grep -q 'spin_worker' <<<"$output"
    run bench/sample-report --thread 1 --top 40 "$T/s.out"
    [ "$status" = 0 ]
    grep -q 'spin_worker' <<<"$output" || { echo "$output"; return 1; }
    ! grep -q 'spin_main' <<<"$output"
    # Without SAMPLE_THREADS only the first thread is sampled.
    SAMPLE_US=1000 SAMPLE_DELAY_S=0.001 SAMPLE_OUT="$T/one.out" LD_PRELOAD="$T/libsample.so" "$T/spin"
    run bench/sample-report --threads "$T/one.out"
    [ "$status" = 0 ]
    ! grep -q 'thread  1' <<<"$output"
}

@test "sampler: a %p in SAMPLE_OUT is each process's id (torchrun's ranks write a file each)" {
    # a launcher and two ranks, as torchrun starts them, each preloaded and sampled
    SAMPLE_US=1000 SAMPLE_DELAY_S=0.001 SAMPLE_OUT="$T/rank.%p.out" LD_PRELOAD="$T/libsample.so" \
        sh -c '"$0" & a=$!; "$0" & b=$!; wait; echo "$a $b" >"$1"' "$T/spin" "$T/pids"
    local p
    for p in $(cat "$T/pids"); do
        [ -s "$T/rank.$p.out" ] || { ls "$T"; return 1; }
        run bench/sample-report --top 3 "$T/rank.$p.out"
        [ "$status" = 0 ]
        grep -q 'spin_main' <<<"$output" || { echo "$output"; return 1; }
    done
    [ ! -e "$T/rank.%p.out" ]
}

@test "sampler: --views reports every file's three views in one call, reading each library's symbols once" {
    local i
    for i in 1 2; do
        SAMPLE_THREADS=1 SAMPLE_US=1000 SAMPLE_DELAY_S=0.001 SAMPLE_OUT="$T/v$i.out" \
            LD_PRELOAD="$T/libsample.so" "$T/spin"
    done
    # an nm that logs what it was asked to read, then does it
    mkdir -p "$T/bin"
    printf '#!/bin/sh\necho "$@" >>"%s/nm.log"\nexec %s "$@"\n' "$T" "$(command -v nm)" >"$T/bin/nm"
    chmod +x "$T/bin/nm"
    PATH="$T/bin:$PATH" run bench/sample-report --views --top 3 "$T/v1.out" "$T/v2.out"
    [ "$status" = 0 ]
    [ "$(grep -c '^=== v[12]\.out$' <<<"$output")" = 2 ] || { echo "$output"; return 1; }
    # per file: the threads' lines, the first thread's report, all threads' report
    [ "$(grep -c 'samples by thread' <<<"$output")" = 2 ] || { echo "$output"; return 1; }
    [ "$(grep -c 'samples (thread 0)' <<<"$output")" = 2 ] || { echo "$output"; return 1; }
    [ "$(grep -c 'samples (thread all)' <<<"$output")" = 2 ] || { echo "$output"; return 1; }
    # the program's table (dynamic and static: two nm runs), once for both files
    [ "$(grep -c " $T/spin\$" "$T/nm.log")" = 2 ] || { cat "$T/nm.log"; return 1; }
}
