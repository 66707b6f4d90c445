#!/usr/bin/env bats
# TCFUSE_TRACE=FILE writes JSON lines as docs/TRACE.md says: a header, kernel, launch,
# alloc, free, memset, memcpy and window events, and an end line. The trace must agree
# with what the stub saw: the same launches with the same parameter bytes, the layouts
# the stub reports, and window reasons named after the call (or cause) that closed them.

load helpers

# traced NAME CMD...: runs CMD under tcfuse with TCFUSE_TRACE=$T/NAME.trace; checks it.
traced() {
    local name="$1"
    shift
    TCFUSE_TRACE="$T/$name.trace" tcf "$name" "$@"
    [ "$status" = 0 ] || { echo "exit status $status"; cat "$T/$name.err"; return 1; }
    trace_valid "$T/$name.trace"
}

windows_of() { python3 "$CHECK" windows "$T/$1.trace" | sed 's/ stream=.*//'; }

# reason_is NAME N REASON: the N-th window (1-based, by close time) was closed by REASON,
# which matches with or without _v2/_ptsz suffixes when it is a driver call.
reason_is() {
    local got
    got="$(python3 "$CHECK" windows "$T/$1.trace" | sed -n "${2}p" | sed -E 's/.* reason=([^ ]+) .*/\1/')"
    [ "$(base_name "$got")" = "$(base_name "$3")" ] || {
        echo "$1: window $2 closed by '$got', expected $3; windows:"
        python3 "$CHECK" windows "$T/$1.trace"
        return 1
    }
}

@test "trace: every line is JSON, as python's json module reads it" {
    local sc
    for sc in windows launch repeat streams ops; do
        traced "j-$sc" "$PROGS/scen" "$sc"
        python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$T/j-$sc.trace"
    done
    traced j-alloc "$PROGS/alloc" seq
    traced j-errors "$PROGS/alloc" errors
    traced j-lookup "$PROGS/lookup" v2
    traced j-linked "$PROGS/linked"
    traced j-mt "$PROGS/mt" streams 4 25
}

@test "trace: the header names the writer; %p in the path is the pid" {
    TCFUSE_TRACE="$T/t.%p.jsonl" tcf h "$PROGS/scen" windows
    local f pid
    f="$(ls "$T"/t.*.jsonl)"
    pid="${f##*/t.}"
    pid="${pid%.jsonl}"
    trace_valid "$f"
    run python3 -c '
import json, sys
h = json.loads(open(sys.argv[1]).readline())
print(h["tcfuse_trace"], h["pid"], h["mode"], h["argv0"].rsplit("/", 1)[-1])' "$f"
    [ "$output" = "1 $pid observe scen" ]
}

@test "trace: %r in the path is the rank torchrun gave the process, else pid and the pid" {
    # two ranks and a launcher, as torchrun starts them
    RANK=0 WORLD_SIZE=2 TCFUSE_TRACE="$T/r.%r.jsonl" tcf r0 "$PROGS/scen" windows
    RANK=1 WORLD_SIZE=2 TCFUSE_TRACE="$T/r.%r.jsonl" tcf r1 "$PROGS/scen" windows
    TCFUSE_TRACE="$T/r.%r.jsonl" tcf agent "$PROGS/scen" windows
    trace_valid "$T/r.0.jsonl"
    trace_valid "$T/r.1.jsonl"
    local f pid
    f="$(ls "$T"/r.pid*.jsonl)"
    pid="${f##*/r.pid}"
    pid="${pid%.jsonl}"
    run python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["pid"])' "$f"
    [ "$output" = "$pid" ]
}

@test "trace: kernels carry the driver's names, kinds and parameter layouts" {
    traced k "$PROGS/scen" launch
    run python3 "$CHECK" kernels "$T/k.trace"
    printf '%s\n' "${lines[@]}"
    [[ " ${lines[*]} " == *" ka_i4_p8 kernel [[0,4],[8,8]] "* ]]
    [[ " ${lines[*]} " == *" kc_b24_i4 kernel [[0,24],[24,4]] "* ]]
    [[ " ${lines[*]} " == *" kd kernel [] "* ]]
    [[ " ${lines[*]} " == *" ke_h2_b3_i4_p8 kernel [[0,2],[2,3],[8,4],[16,8]] "* ]]
    [[ " ${lines[*]} " == *" kf_p8_i4 function [[0,8],[8,4]] "* ]]
    # The handle the program passed that the driver does not know: no name, no layout.
    [[ " ${lines[*]} " == *"  unknown [] "* ]]
    # Each handle is described once.
    [ "$(printf '%s\n' "${lines[@]}" | sort | uniq -d)" = "" ]
}

@test "trace: launches carry the parameter bytes the driver received" {
    local sc
    for sc in launch windows repeat ops; do
        traced "p-$sc" "$PROGS/scen" "$sc"
        python3 "$CHECK" launches "$T/p-$sc.trace" >"$T/p-$sc.trace.launches"
        log_launches "$T/p-$sc.log" >"$T/p-$sc.log.launches"
        same_text "$sc: launches" "$T/p-$sc.log.launches" "$T/p-$sc.trace.launches"
    done
    traced p-linked "$PROGS/linked_ptsz"
    python3 "$CHECK" launches "$T/p-linked.trace" >"$T/p-linked.trace.launches"
    log_launches "$T/p-linked.log" >"$T/p-linked.log.launches"
    same_text "linked_ptsz: launches" "$T/p-linked.log.launches" "$T/p-linked.trace.launches"
}

@test "trace: launch events name the entry point and the launch's shape" {
    traced v "$PROGS/scen" launch
    run python3 "$CHECK" events "$T/v.trace" launch
    [[ "${lines[1]}" == *'"block":[64,2,1]'* ]]
    [[ "${lines[1]}" == *'"grid":[2,1,1]'* ]]
    [[ "${lines[1]}" == *'"smem":128'* ]]
    [[ "${lines[1]}" == *'"via":"cuLaunchKernel"'* ]]
    [[ "${lines[7]}" == *'"via":"cuLaunchKernelEx"'* ]]
    [[ "${lines[7]}" == *'"smem":1024'* ]]
    # The rejected launches are there with the driver's result.
    [ "$(printf '%s\n' "${lines[@]}" | grep -c '"rc":400')" = 2 ]
    [ "$(printf '%s\n' "${lines[@]}" | grep -c '"rc":1[,}]')" = 3 ]
}

@test "trace: windows of the known shape, with their reasons" {
    traced w "$PROGS/scen" windows
    run windows_of w
    [ "${lines[0]}" = "launches=3 ops=0 reason=cuStreamSynchronize" ]
    [ "${lines[1]}" = "launches=2 ops=0 reason=cuEventRecord" ]
    [ "${lines[2]}" = "launches=1 ops=0 reason=cuFakeUnknownCall" ]
    [ "${lines[3]}" = "launches=5 ops=0 reason=cuStreamSynchronize" ]
    [ "${lines[4]}" = "launches=1 ops=0 reason=exit" ]
    [ "${#lines[@]}" = 5 ]
    run python3 "$CHECK" events "$T/w.trace" end
    [[ "$output" == *'"launches":12'* && "$output" == *'"windows":5'* ]]
}

@test "trace: each boundary call closes the window under its name" {
    local x failed=0
    for x in "${BOUNDARIES[@]}"; do
        traced "b-$x" "$PROGS/scen" boundary "$x" || { failed=1; continue; }
        { reason_is "b-$x" 1 "$x" && reason_is "b-$x" 2 exit &&
            [ "$(windows_of "b-$x" | sed -n 1p | cut -d' ' -f1)" = launches=2 ]; } ||
            { echo "boundary $x"; failed=1; }
    done
    [ "$failed" = 0 ]
}

@test "trace: per-thread variants of boundary calls close windows too" {
    local x failed=0
    for x in cuStreamSynchronize cuStreamQuery cuEventRecord cuStreamWaitEvent \
        cuMemcpyHtoDAsync cuMemcpyDtoHAsync cuLaunchHostFunc; do
        traced "pt-$x" "$PROGS/scen" -l gpa-ptds boundary "$x" || { failed=1; continue; }
        reason_is "pt-$x" 1 "$x" || { echo "per-thread boundary $x"; failed=1; }
    done
    [ "$failed" = 0 ]
}

@test "trace: size-cap, idle and exit reasons" {
    TCFUSE_WINDOW_MAX=4 traced cap "$PROGS/scen" sizecap 10
    run windows_of cap
    [ "${lines[0]}" = "launches=4 ops=0 reason=size-cap" ]
    [ "${lines[1]}" = "launches=4 ops=0 reason=size-cap" ]
    [ "${lines[2]}" = "launches=2 ops=0 reason=cuStreamSynchronize" ]
    # Idle: 1 ms without work while the program sleeps 500 ms. Only the first window's
    # reason is asserted; the second may close either way.
    TCFUSE_IDLE_US=1000 traced idle "$PROGS/scen" idle 500
    run windows_of idle
    [ "${lines[0]}" = "launches=1 ops=0 reason=idle" ]
    traced exit "$PROGS/scen" boundary cuStreamSynchronize
    reason_is exit 2 exit
}

@test "trace: queries leave the window open" {
    local x failed=0
    for x in "${QUERIES[@]}"; do
        traced "q-$x" "$PROGS/scen" query "$x"
        [ "$(windows_of "q-$x")" = "launches=2 ops=0 reason=cuStreamSynchronize" ] ||
            { echo "query $x:"; windows_of "q-$x"; failed=1; }
    done
    [ "$failed" = 0 ]
}

@test "trace: memsets and device copies are ops of the window" {
    traced ops "$PROGS/scen" ops
    [ "$(windows_of ops)" = "launches=2 ops=4 reason=cuStreamSynchronize" ]
    run python3 "$CHECK" events "$T/ops.trace" memset
    [ "${#lines[@]}" = 3 ]
    [[ "${lines[0]}" == *'"elem":1'* && "${lines[0]}" == *'"count":4096'* && "${lines[0]}" == *'"ptr":"0x7f0000001000"'* ]]
    [[ "${lines[1]}" == *'"elem":4'* && "${lines[1]}" == *'"value":1065353216'* ]]
    [[ "${lines[2]}" == *'"elem":2'* && "${lines[2]}" == *'"value":15360'* ]]
    run python3 "$CHECK" events "$T/ops.trace" memcpy
    [ "${#lines[@]}" = 1 ]
    [[ "${lines[0]}" == *'"dst":"0x7f0000002000"'* && "${lines[0]}" == *'"src":"0x7f0000001000"'* && "${lines[0]}" == *'"size":1024'* ]]
}

@test "trace: allocations and frees match the driver's" {
    traced a "$PROGS/alloc" seq
    python3 "$CHECK" events "$T/a.trace" alloc | sed -E 's/.*"ptr":"([^"]+)".*"size":([0-9]+).*/\1 \2/' >"$T/a.allocs"
    grep -E '^cuMemAlloc(Async|FromPoolAsync|_v2)(_ptsz)? .*rc=0$' "$T/a.log" |
        sed -E 's/.* size=([0-9]+) .*ptr=(0x[0-9a-f]+).*/\2 \1/' >"$T/a.log.allocs"
    same_text allocs "$T/a.log.allocs" "$T/a.allocs"
    python3 "$CHECK" events "$T/a.trace" free | sed -E 's/.*"ptr":"([^"]+)".*/\1/' >"$T/a.frees"
    grep -E '^cuMemFree(Async|_v2)(_ptsz)? .*rc=0$' "$T/a.log" |
        sed -E 's/.* ptr=(0x[0-9a-f]+).*/\1/' >"$T/a.log.frees"
    same_text frees "$T/a.log.frees" "$T/a.frees"
    # The synchronous forms are in no window.
    run python3 "$CHECK" events "$T/a.trace" alloc
    [ "$(printf '%s\n' "${lines[@]}" | grep -c '"win":-1')" -ge 5 ]
}

@test "trace: threads on their own streams, and on their per-thread default streams" {
    traced mts "$PROGS/mt" streams 4 25
    run python3 "$CHECK" windows "$T/mts.trace"
    [ "${#lines[@]}" = 4 ]
    [ "$(printf '%s\n' "${lines[@]}" | cut -d' ' -f1 | sort -u)" = launches=25 ]
    [ "$(printf '%s\n' "${lines[@]}" | sed 's/.*stream=//' | sort -u | wc -l)" = 4 ]
    traced mtp "$PROGS/mt" -l gpa-ptds ptds 4 25
    run python3 "$CHECK" windows "$T/mtp.trace"
    [ "${#lines[@]}" = 4 ]
    [ "$(printf '%s\n' "${lines[@]}" | cut -d' ' -f1 | sort -u)" = launches=25 ]
}

@test "trace: TCFUSE_TRACE_LIMIT stops the trace and counts what was dropped" {
    # Windows of 16 launches: the events of one window are written together, so the
    # file may pass the limit by one window's lines (~4 KiB here) before it stops.
    TCFUSE_WINDOW_MAX=16 TCFUSE_TRACE="$T/lim.trace" TCFUSE_TRACE_LIMIT=64K \
        tcf lim "$PROGS/scen" sizecap 3000
    [ "$status" = 0 ]
    python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$T/lim.trace"
    local size
    size="$(stat -c %s "$T/lim.trace")"
    [ "$size" -ge 60000 ] || { echo "trace is only $size bytes"; return 1; }
    [ "$size" -le $((65536 + 8192)) ] || { echo "trace is $size bytes"; return 1; }
    run python3 -c '
import json, sys
last = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print(last["ev"], last["dropped"] > 0)' "$T/lim.trace"
    [ "$output" = "end True" ]
}
