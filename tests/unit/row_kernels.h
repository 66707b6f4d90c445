/* What the row-kernel tests (test_rows.c, test_softmax.c, test_layernorm.c) share: NVRTC
 * opened once, and a planned group's source made, checked and compiled. One test binary
 * includes it once (static state). */
#ifndef TCF_TEST_ROW_KERNELS_H
#define TCF_TEST_ROW_KERNELS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codegen/codegen.h"
#include "fuser/fuser.h"

#define RK_SRC_CAP (1u << 17)

static int rk_have_nvrtc;
static unsigned rk_compiled;

/* Opens NVRTC (the default search, then CUDA's usual place), or says that the compile
 * checks of `test` are skipped. */
static void rk_open_nvrtc(const char *test)
{
    char err[512];
    rk_have_nvrtc = tcf_nvrtc_open(NULL, err, sizeof err) == 0 ||
                    tcf_nvrtc_open("/usr/local/cuda/lib64/libnvrtc.so.13", err, sizeof err) == 0;
    if (!rk_have_nvrtc)
        printf("%s: NVRTC not found (%s): compile checks skipped\n", test, err);
}

/* g's source: made; `kind` (every string of marks, up to a NULL, is in it); the same when
 * made again; refused by a buffer one byte short; compiled for sm_90 when NVRTC is here. */
static void rk_compiles(const tcf_fgroup_t *g, const char *what, const char *kind,
                        const char *const *marks)
{
    char *src = malloc(RK_SRC_CAP), *again = malloc(RK_SRC_CAP);
    int n = tcf_codegen_source(&g->g, src, RK_SRC_CAP);
    if (check_report(n > 0, __FILE__, __LINE__, what, "no source")) {
        int all = 1;
        for (unsigned i = 0; marks[i]; i++)
            all &= strstr(src, marks[i]) != NULL;
        check_report(all, __FILE__, __LINE__, what, kind);
        check_report(tcf_codegen_source(&g->g, again, RK_SRC_CAP) == n && !strcmp(src, again),
                     __FILE__, __LINE__, what, "deterministic");
        check_report(tcf_codegen_source(&g->g, again, (size_t)n) == -1, __FILE__, __LINE__, what,
                     "a buffer one byte short fails");
        if (rk_have_nvrtc) {
            void *cubin = NULL;
            size_t len = 0;
            char log[4096] = "";
            check_report(tcf_nvrtc_compile(src, 90, &cubin, &len, log, sizeof log) == 0, __FILE__,
                         __LINE__, what, log);
            rk_compiled += cubin != NULL;
            free(cubin);
        }
    }
    free(src), free(again);
}

/* The last line of a test: how many of its kernels compiled, when NVRTC was there. */
static void rk_report(const char *test, const char *kinds)
{
    if (rk_have_nvrtc)
        printf("%s: %u %s compiled for sm_90 (NVRTC %s)\n", test, rk_compiled, kinds,
               tcf_nvrtc_version());
}
#endif
