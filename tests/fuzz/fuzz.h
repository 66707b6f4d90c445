/* tests/fuzz: one target per parser of outside data, in libFuzzer's form. Each fuzz_*.c
 * defines LLVMFuzzerTestOneInput; `make fuzz` links it with libFuzzer (clang) and runs it
 * for a bounded time; replay.c links the same file with a plain main that runs every saved
 * input (corpus/<target>/ and, for each crash found, regress/<target>/) as a unit test, so
 * CI needs no clang and a crash once found stays fixed. A target returns 0; anything else,
 * a crash or a sanitizer report is a finding. */
#ifndef TCF_FUZZ_H
#define TCF_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
