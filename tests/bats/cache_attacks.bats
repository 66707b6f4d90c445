#!/usr/bin/env bats
# Attacks on the disk cache, end to end: a fuse-mode process (fusechain, as in
# faults.bats) fills a cache; then its compiled kernels are bit-flipped, truncated, moved to
# other keys, replaced by links, owned by someone else, or the directory is opened to
# everyone or given to someone else. The next process must refuse each (a miss, and a
# warning), compile again, and never load what it did not compile: the stand-in names every
# image a module load is given (an FNV-1a hash of the ELF's bytes), and each must be one an
# honest run loaded. Its output stays the program's own.

load helpers
bats_require_minimum_version 1.5.0

setup() {
    fusechain_setup || return 1
    need_nvrtc
    export FAKECUDA_MEM=1 TCFUSE_MODE=fuse TCFUSE_STATS=1 TCFUSE_COMPILE_WAIT=1 TCFUSE_NVRTC="$NVRTC"
    base plain "$PROGS/fusechain" 4
    TCFUSE_CACHE_DIR="$T/good" tcf honest "$PROGS/fusechain" 4
    expect_line "$T/honest.err" '^tcfuse: +fused +3 groups'
    images honest >"$T/genuine"
    [ -s "$T/genuine" ]
    CUBINS=$(TCFUSE_CACHE_DIR="$T/good" "$TCFUSE" cache ls | awk '$2 == "cubin" { print $1 ".tcf" }')
    [ "$(wc -w <<<"$CUBINS")" -ge 2 ] || { echo "cubins: $CUBINS"; false; }
}

# The images the run NAME loaded, one id a line.
images() { sed -n 's/^cuModuleLoadData .*image=\(elf:[^ ]*\).*/\1/p' "$T/$1.log" | sort -u; }

# A fresh copy of the honest cache at $T/atk.
fresh() { rm -rf "$T/atk"; cp -a "$T/good" "$T/atk"; }

# attacked NAME WARNING: fusechain on $T/atk: the program's output, the chain fused again,
# nothing from the disk cache, only honest images loaded, and a warning naming WARNING.
attacked() {
    TCFUSE_CACHE_DIR="$T/atk" tcf "$1" "$PROGS/fusechain" 4
    [ "$status" = 0 ] || { cat "$T/$1.err"; return 1; }
    same_text "$1: stdout" "$T/plain.out" "$T/$1.out" || return 1
    expect_line "$T/$1.err" '^tcfuse: +fused +3 groups' || return 1
    expect_line "$T/$1.err" ' 0 from the disk cache' || return 1
    expect_line "$T/$1.err" "$2" || return 1
    local bad
    bad=$(images "$1" | comm -23 - "$T/genuine")
    [ -z "$bad" ] || { echo "$1 loaded images no honest run made: $bad"; return 1; }
}

@test "cache attacks: the honest cache is used by the next process" {
    TCFUSE_CACHE_DIR="$T/good" tcf warm "$PROGS/fusechain" 4
    same_text stdout "$T/plain.out" "$T/warm.out"
    expect_line "$T/warm.err" ' 0 compiled, 1 from the disk cache'
}

@test "cache attacks: bit-flipped and truncated kernels are refused" {
    local f
    fresh
    for f in $CUBINS; do  # a byte of each cubin's payload (which starts at offset 32)
        printf '\xff' | dd of="$T/atk/$f" bs=1 seek=200 conv=notrunc status=none
    done
    attacked flipped 'is corrupt \(checksum mismatch\)'
    fresh
    for f in $CUBINS; do
        truncate -s $(($(stat -c %s "$T/atk/$f") / 2)) "$T/atk/$f"
    done
    attacked truncated 'is corrupt \((length does not match size|truncated)\)'
}

@test "cache attacks: kernels moved to other keys, and links in their place, are refused" {
    local f first prev=
    fresh
    for f in $CUBINS; do  # each cubin takes the next one's name
        if [ -z "$prev" ]; then first=$f; mv "$T/atk/$f" "$T/atk/tmp"; else mv "$T/atk/$f" "$T/atk/$prev"; fi
        prev=$f
    done
    mv "$T/atk/tmp" "$T/atk/$prev"
    attacked swapped 'is corrupt \(key does not match its name\)'
    fresh
    mkdir "$T/elsewhere"
    for f in $CUBINS; do  # a link to the honest entry itself, moved out of the directory
        mv "$T/atk/$f" "$T/elsewhere/$f"
        ln -s "$T/elsewhere/$f" "$T/atk/$f"
    done
    attacked linked 'is corrupt \(a symbolic link\)'
}

@test "cache attacks: a directory open to everyone, or someone else's, is not used" {
    fresh
    chmod 0777 "$T/atk"
    attacked open 'writable by group or others .*disk cache off'
    [ "$(find "$T/atk" -newer "$T/honest.err" -name '*.tcf' | wc -l)" = 0 ] ||
        { echo "wrote into a world-writable directory"; false; }
    [ "$(id -u)" = 0 ] || skip "not root: cannot give files to another user"
    fresh
    chown 65534:65534 "$T/atk"
    attacked owned "is owned by uid 65534.*disk cache off"
    fresh
    local f
    for f in $CUBINS; do chown 65534:65534 "$T/atk/$f"; done
    attacked entries 'is corrupt \(owned by another user\)'
}
