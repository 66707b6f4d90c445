#!/usr/bin/env bats
# The GPU suites' verdicts when their budget runs out (tests/gpu/run's run_cmd leaves the
# rest of a suite's runs out): runs left out make a suite SKIP, never FAIL, and never hide
# a failure among the runs that did run (a hang that spent the budget among them).

load helpers
load gpu_harness
bats_require_minimum_version 1.5.0

setup() { common_setup; }

# verdict SUITE CUT [NAME=RC...]: $v is the suite's status line.
verdict() { v=$(suite_status "$@"); echo "$v"; }

@test "gpu harness: every run ran and ended as plain: PASS" {
    verdict exits none exits.alarm30000.plain=14 exits.alarm30000.fuse=14 \
        exits.alarm120000.plain=14 exits.alarm120000.fuse=14 \
        exits.alarm400000.plain=14 exits.alarm400000.fuse=14
    [[ $v == PASS*"6 of 6 ends as plain"* ]]
    verdict forks none
    [[ $v == PASS*"20 runs"* ]]
    verdict replay none
    [[ $v == PASS*"bitwise equal to plain"* ]]
}

@test "gpu harness: runs the budget left out make the suite SKIP, naming them" {
    verdict forks forks.py.loader.graph
    [[ $v == SKIP*"not run (out of time): forks.py.loader full (19 as plain)" ]]
    verdict exits exits.signal.plain
    [[ $v == SKIP*"not run (out of time): signal; c-handler; _exit; kill; alarm 30000 us"* ]]
    verdict exits exits.alarm30000.fuse exits.alarm30000.plain=14 exits.alarm30000.fuse=14
    [[ $v == SKIP*"not run (out of time): alarm 120000 us; alarm 400000 us ("* ]]
    verdict replay replay.pdl.full
    [[ $v == SKIP*"not run (out of time): pdl fsync; mlp; gpt2 ("* ]]
    verdict mismatch mismatch.honest.plain
    [[ $v == SKIP*"not run (out of time): honest cold; honest warm; impostor; shared honest; shared impostor"* ]]
    verdict concurrency conc.c.plain
    [[ $v == SKIP*"not run (out of time): C plain2; C observe; C full; Python plain; Python observe; Python full" ]]
    verdict faults faults.plain
    [[ $v == SKIP*"not run (out of time): none; nvrtc_open; "*"; thread; graph" ]]
    verdict faults -
    [[ $v == SKIP*"not run: out of time" ]]
    verdict exits -
    [[ $v == SKIP*"not run: out of time" ]]
}

@test "gpu harness: a failure beside runs left out stays FAIL" {
    verdict exits exits.return.fuse exits.return.fuse=124     # a hang that spent the budget
    [[ $v == FAIL*"return: rc 124, plain 0"*"atexit not run"* ]]
    [[ $v != *"rc 125"* ]]
    verdict forks forks.py.after.fuse forks.py.after.observe=1
    [[ $v == FAIL*"forks.py.after observe: rc 1, plain 0"*"not run: forks.py.after graph; forks.py.after full; forks.py.loader plain"* ]]
    verdict replay replay.vary.bg replay.vary.bg=1
    [[ $v == FAIL*"vary bg: rc 1"*"not run: vary sync"* ]]
    verdict mismatch mismatch.honest.cold mismatch.honest.cold=3
    [[ $v == FAIL*"honest cold: rc 3"* ]]
    verdict concurrency conc.py.plain conc.c.full=2
    [[ $v == FAIL*"C full: rc 2"* ]]
    verdict faults faults.none faults.none=1
    [[ $v == FAIL*"none: rc 1"*"not run: nvrtc_open"* ]]
}
