/* The CPU emulations' last step, shared by test_reduce_emu.c, test_rows.c,
 * test_softmax.c and test_layernorm.c: each writes one C++ file (reduce_emu.hpp's CUDA on the host, its
 * generated kernels, a table of cases and a driver that prints
 * "<stem>_emu: P passed, F failed"); this builds and runs it. One test binary includes it
 * once (static functions). */
#ifndef TCF_TEST_EMU_RUN_H
#define TCF_TEST_EMU_RUN_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

/* Whether bin was built after every emulation header changed (the text includes them). */
static int emu_newer_than_headers(const char *bin)
{
    static const char *const hdr[] = { "tests/unit/reduce_emu.hpp", "tests/unit/rows_emu.hpp",
                                       "tests/unit/softmax_emu.hpp", "tests/unit/layernorm_emu.hpp" };
    struct stat b, h;
    if (stat(bin, &b) != 0)
        return 0;
    for (size_t i = 0; i < sizeof hdr / sizeof hdr[0]; i++)
        if (stat(hdr[i], &h) == 0 && h.st_mtime >= b.st_mtime)
            return 0;
    return 1;
}

/* Writes text to build/reduce_emu/<stem>.cpp and compiles it (once per text and headers:
 * the sanitizer builds run the same tests again on the same file), runs it with its other
 * lines passed to stderr, and reads its result line into *passed and *failed. 0, or -1
 * (reported) when it cannot be built or run or printed no result. */
static int emu_build_run(const char *stem, const char *text, size_t len, unsigned *passed,
                         unsigned *failed)
{
    char cpp[96], bin[96], log[96], cmd[512], want[64];
    snprintf(cpp, sizeof cpp, "build/reduce_emu/%s.cpp", stem);
    snprintf(bin, sizeof bin, "build/reduce_emu/%s", stem);
    snprintf(log, sizeof log, "build/reduce_emu/%s.log", stem);
    snprintf(want, sizeof want, "%s_emu: %%u passed, %%u failed", stem);
    *passed = *failed = 0;
    mkdir("build", 0755), mkdir("build/reduce_emu", 0755);
    int same = 0;
    FILE *old = fopen(cpp, "r");
    if (old) {
        char *prev = malloc(len + 2);
        same = prev && fread(prev, 1, len + 1, old) == len && !memcmp(prev, text, len) &&
               access(bin, X_OK) == 0 && emu_newer_than_headers(bin);
        free(prev);
        fclose(old);
    }
    if (!same) {
        FILE *f = fopen(cpp, "w");
        int ok = f && fwrite(text, 1, len, f) == len;
        if (!check_report((f && fclose(f) == 0) && ok, __FILE__, __LINE__, cpp, "not written"))
            return -1;
        unlink(bin);
        snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O1 -ffp-contract=off -U_FORTIFY_SOURCE -I. -w "
                                  "-o %s %s >%s 2>&1", bin, cpp, log);
        if (!check_report(system(cmd) == 0, __FILE__, __LINE__, cpp, log))
            return -1;
    }
    snprintf(cmd, sizeof cmd, "%s 2>&1", bin);
    FILE *p = popen(cmd, "r");
    char line[512];
    int seen = 0;
    while (p && fgets(line, sizeof line, p)) {
        if (sscanf(line, want, passed, failed) == 2)
            seen = 1;
        else
            fputs(line, stderr);
    }
    int rc = p ? pclose(p) : -1;
    CHECK(p != NULL && rc == 0);
    CHECK(seen);
    return p && seen ? 0 : -1;
}
#endif
