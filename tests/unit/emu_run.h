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
#include "codegen/codegen.h"
#include "codegen/internal.h"   /* tcf_codegen_prelude */
#include "fuser/fuser.h"

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
/* The row kernels' argument, as the emulations' C++ declares it (codegen.h's
 * tcf_rows_args_t over reduce_emu.hpp's tcf_rargs_host). */
#define EMU_ROWS_ARGS                                                                     \
    "struct rows_args { tcf_rargs_host r; unsigned long long buf[16]; unsigned s[16], "   \
    "st[16][2]; };\nstatic_assert(sizeof(rows_args) == 544, \"tcf_rows_args_t\");\n"

/* Writes a generated row kernel's source into kf as namespace k<n>: without the NVRTC
 * prelude (reduce_emu.hpp defines its names), the kernel renamed, and run(args) calling it.
 * 0, or -1 (reported) when src is no such source. */
static inline int emu_put_kernel(FILE *kf, const char *src, unsigned n)
{
    const char *pre = tcf_codegen_prelude(), *pp = strstr(src, pre);
    const char *k = strstr(src, TCF_REDUCE_KERNEL "(const tcf_rargs a)");
    if (!CHECK(pp != NULL && k != NULL))
        return -1;
    fprintf(kf, "namespace k%u {\n%.*s%.*s%s_%u%s", n, (int)(pp - src), src,
            (int)(k - (pp + strlen(pre))), pp + strlen(pre), TCF_REDUCE_KERNEL, n,
            k + strlen(TCF_REDUCE_KERNEL));
    fprintf(kf, "void run(const void *p) { %s_%u(*(const tcf_rargs *)p); }\n}\n", TCF_REDUCE_KERNEL, n);
    return 0;
}

/* A case's buffers for its table row: " { role, ... }, { { along, across }, ... }", each
 * role the buffer's address in the plan less base, shifted right (the test's numbering
 * of its buffers), then its strides as ra binds them. */
static inline void emu_put_bufs(FILE *tf, const tcf_fgroup_t *g, const tcf_rows_args_t *ra, uint64_t base,
                         unsigned shift)
{
    fprintf(tf, " {");
    for (unsigned b = 0; b < g->g.nbufs; b++)
        fprintf(tf, " %u,", (unsigned)((g->args.buf[b] - base) >> shift));
    fprintf(tf, " }, {");
    for (unsigned b = 0; b < g->g.nbufs; b++)
        fprintf(tf, " { %u, %u },", ra->st[b][0], ra->st[b][1]);
    fprintf(tf, " }");
}

/* Builds and runs the emulation's text (emu_build_run) and checks that all ncase cases
 * passed. 0 when they did. */
static inline int emu_check_run(const char *stem, const char *text, size_t len, unsigned ncase)
{
    unsigned passed, failed;
    if (emu_build_run(stem, text, len, &passed, &failed))
        return -1;
    CHECK_EQ_INT(passed, ncase);
    CHECK_EQ_INT(failed, 0);
    return passed == ncase && !failed ? 0 : -1;
}
/* An emulation's C++ being written: kf the file (the kernels in namespaces, then the cases'
 * table, the model and main), tf the table's rows, gathered apart until the end. */
typedef struct {
    FILE *kf, *tf;
    char *text, *rows;
    size_t text_len, rows_len;
} emu_text_t;

/* Opens both, the file starting with reduce_emu.hpp's CUDA on the host. 0, or -1 when there
 * is no C++ compiler (said: `test`'s CPU run is skipped) or a stream would not open. */
static inline int emu_open(emu_text_t *t, const char *test)
{
    memset(t, 0, sizeof *t);
    if (system("c++ --version >/dev/null 2>&1") != 0) {
        printf("%s: no C++ compiler (c++): the CPU run skipped\n", test);
        return -1;
    }
    t->kf = open_memstream(&t->text, &t->text_len);
    t->tf = open_memstream(&t->rows, &t->rows_len);
    if (!CHECK(t->kf != NULL && t->tf != NULL)) {
        if (t->kf)
            fclose(t->kf);
        if (t->tf)
            fclose(t->tf);
        free(t->text), free(t->rows);
        return -1;
    }
    fprintf(t->kf, "#include \"tests/unit/reduce_emu.hpp\"\n");
    return 0;
}

/* Ends the file: head (the case type and the table's opening), the rows, tail (the table's
 * end, the model's header, main); builds and runs it, and checks that all ncase cases
 * passed (emu_check_run). 0 when they did. */
static inline int emu_close_run(emu_text_t *t, const char *stem, const char *head, const char *tail,
                                unsigned ncase)
{
    fclose(t->tf);
    fprintf(t->kf, "%s%s%s", head, t->rows ? t->rows : "", tail);
    free(t->rows);
    int rc = CHECK(fclose(t->kf) == 0) ? emu_check_run(stem, t->text, t->text_len, ncase) : -1;
    free(t->text);
    return rc;
}
#endif
