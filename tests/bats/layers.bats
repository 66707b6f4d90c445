#!/usr/bin/env bats
# The layering of docs/ARCHITECTURE.md holds: no folder includes a header of a layer above
# it (tests/layers, over #include lines), and the check itself catches each kind of breach.

@test "layers: no file includes a header of a layer above its own" {
    run tests/layers
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *", 0 violations" ]]
}

@test "layers: an upward include, another folder's internal.h, tools including interpose, a foreign header all fail" {
    t=$(mktemp -d)
    mkdir -p "$t/capture" "$t/tools" "$t/fuser" "$t/base"
    printf '#include "exec/exec.h"\n#include "capture/window.h"\n#include "recognize/recognize.h"\n' > "$t/capture/a.c"
    printf '#include "interpose/interpose.h"\n#include "trace/read.h"\n' > "$t/tools/b.c"
    printf '#include "codegen/internal.h"\n#include "codegen/codegen.h"\n' > "$t/fuser/c.h"
    printf '  #  include "tests/unit/check.h"\n#include <stdio.h>\n' > "$t/base/d.c"
    run tests/layers "$t"
    rm -rf "$t"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *'capture/a.c:1 includes "exec/exec.h": exec/ is a layer above capture/'* ]]
    [[ "$output" == *'tools/b.c:1 includes "interpose/interpose.h"'* ]]
    [[ "$output" == *"fuser/c.h:1 includes \"codegen/internal.h\": codegen's private header"* ]]
    [[ "$output" == *'base/d.c:1 includes "tests/unit/check.h": not a header'* ]]
    [[ "$output" == *"4 files, 4 violations" ]]
}
