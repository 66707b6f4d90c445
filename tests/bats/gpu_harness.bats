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
    [[ $v == SKIP*"not run (out of time): forks.py.loader.full (19 runs "* ]]
    verdict exits exits.signal.plain
    [[ $v == SKIP*"not run (out of time): exits.signal.fuse, exits.c-handler.plain, "*", exits.alarm400000.fuse ("* ]]
    verdict exits exits.alarm30000.fuse exits.alarm30000.plain=14 exits.alarm30000.fuse=14
    [[ $v == SKIP*"not run (out of time): exits.alarm120000.plain, exits.alarm120000.fuse, exits.alarm400000.plain, exits.alarm400000.fuse (6 of 6"* ]]
    verdict replay replay.pdl.full
    [[ $v == SKIP*"not run (out of time): replay.pdl.fsync, replay.mlp.plain, replay.gpt2.plain (bitwise equal to plain"* ]]
    verdict mismatch mismatch.honest.plain
    [[ $v == SKIP*"not run (out of time): mismatch.honest.cold, mismatch.honest.warm, mismatch.impostor.plain, "*", mismatch.shared.impostor ("* ]]
    verdict concurrency conc.c.plain
    [[ $v == SKIP*"not run (out of time): conc.c.plain2, conc.c.observe, conc.c.full, conc.py.plain, conc.py.observe, conc.py.full" ]]
    verdict faults faults.plain
    [[ $v == SKIP*"not run (out of time): faults.none, faults.nvrtc_open, "*", faults.thread, faults.graph.plain ("* ]]
    verdict faults -
    [[ $v == SKIP*"plain run failed (rc 125"* ]]
    verdict exits -
    [[ $v == SKIP*"warm-up run failed (rc 125"* ]]
}

@test "gpu harness: a failure beside runs left out stays FAIL" {
    verdict exits exits.return.fuse exits.return.fuse=124     # a hang that spent the budget
    [[ $v == FAIL*"return: rc 124, plain 0"*"; not run (out of time): exits.atexit.plain, "* ]]
    [[ $v != *"rc 125"* ]]
    verdict forks forks.py.after.fuse forks.py.after.observe=1
    [[ $v == FAIL*"forks.py.after observe: rc 1, plain 0"*"; not run (out of time): forks.py.after.graph, forks.py.after.full, forks.py.loader.plain, "* ]]
    verdict replay replay.vary.bg replay.vary.bg=1
    [[ $v == FAIL*"vary bg: rc 1"*"; not run (out of time): replay.vary.sync, "* ]]
    verdict mismatch mismatch.honest.cold mismatch.honest.cold=3
    [[ $v == FAIL*"honest cold: rc 3"*"; not run (out of time): mismatch.honest.warm, "* ]]
    verdict concurrency conc.py.plain conc.c.full=2
    [[ $v == FAIL*"C full: rc 2"*"; not run (out of time): conc.py.observe, conc.py.full" ]]
    verdict faults faults.none faults.none=1
    [[ $v == FAIL*"none: rc 1"*"; not run (out of time): faults.nvrtc_open, "* ]]
}
