/* The launches of recorded traces (tests/fixtures/trace-*.jsonl) whose kernel a test
 * wants, with their kernels' names and parameter layouts: what the decoder tests run
 * through the decoder. One test binary includes it once (static state). */
#ifndef TCF_TEST_FIXTURE_LAUNCHES_H
#define TCF_TEST_FIXTURE_LAUNCHES_H
#include <glob.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixture_kernels.h"
#include "recognize/decode_reduce.h"
#include "recognize/recognize.h"
#include "trace/read.h"
typedef struct {
    size_t k;                       /* index into ks */
    uint8_t *params;
    uint32_t len, grid[3], block[3], smem;
    char *trace;                    /* the file's name */
} launch_t;

static launch_t *ls;
static size_t nls;
static kern_t *ks;
static size_t nks;

/* Launch x as the decoder takes it, with these parameter bytes and grid (its own, or a
 * test's variation of them). */
static inline tcf_decode_launch_t fixture_decode_launch(const launch_t *x, const uint8_t *params,
                                                        uint32_t len, const uint32_t grid[3])
{
    const kern_t *k = &ks[x->k];
    return (tcf_decode_launch_t){ k->name, k->np, k->off, k->sz, params, len,
                                  { grid[0], grid[1], grid[2] },
                                  { x->block[0], x->block[1], x->block[2] } };
}

/* A kernel as capture makes it from the driver's layout, for launch x (what exec's marks
 * and masks take). */
static inline tcf_kernel_t fixture_kernel(const launch_t *x)
{
    const kern_t *k = &ks[x->k];
    tcf_kernel_t kk = { .name = k->name, .nparams = k->np, .off = k->off, .size = k->sz,
                        .param_known = 1, .param_bytes = x->len };
    return kk;
}

/* Adds the launches of the trace at path whose kernel's name `want` accepts. */
static void load_launches(const char *path, int (*want)(const char *name))
{
    tcf_trace_event_t ev;
    size_t first = nks;
    tcf_trace_reader_t *r = tcf_trace_read_open(path);
    if (!CHECK(r != NULL))
        return;
    while (tcf_trace_read_next(r, &ev) == 1) {
        if (ev.ev == TCF_TRACE_EV_KERNEL) {
            kern_add(&ks, &nks, &ev.u.kernel);
        } else if (ev.ev == TCF_TRACE_EV_LAUNCH) {
            const tcf_trace_launch_t *l = &ev.u.launch;
            for (size_t i = first; i < nks; i++)
                if (ks[i].id == l->k && want(ks[i].name)) {
                    ls = realloc(ls, ++nls * sizeof *ls);
                    launch_t *x = &ls[nls - 1];
                    x->k = i;
                    x->params = malloc(l->params_len + 1);
                    memcpy(x->params, l->params, l->params_len);
                    x->len = (uint32_t)l->params_len;
                    memcpy(x->grid, l->grid, sizeof x->grid);
                    memcpy(x->block, l->block, sizeof x->block);
                    x->smem = (uint32_t)l->smem;
                    x->trace = strdup(strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
                    break;
                }
        }
    }
    tcf_trace_read_close(r);
}

/* Adds the launches `want` accepts of every recorded trace (tests/fixtures/trace-*.jsonl). */
static inline void load_fixture_launches(int (*want)(const char *name))
{
    glob_t g;
    if (glob("tests/fixtures/trace-*.jsonl", 0, NULL, &g) != 0)
        return;
    for (size_t i = 0; i < g.gl_pathc; i++)
        load_launches(g.gl_pathv[i], want);
    globfree(&g);
}

/* Recorded launch x through both halves of the row decoder: the elementwise decoder must
 * call it a REDUCTION, then decode_reduce.h's must decode it into *r. 1 when it did; a
 * refusal is reported (the trace, the kernel and the reason) and gives 0. */
static inline int fixture_decode_reduce(const launch_t *x, tcf_reduce_t *r)
{
    const kern_t *k = &ks[x->k];
    tcf_decode_launch_t d = { k->name, k->np, k->off, k->sz, x->params, x->len,
                              { x->grid[0], x->grid[1], x->grid[2] },
                              { x->block[0], x->block[1], x->block[2] } };
    tcf_op_t op;
    CHECK_EQ_INT(tcf_decode_launch(&d, &op), TCF_DECODE_REDUCTION);
    tcf_decode_status_t st = tcf_decode_reduce(&d, r);
    char what[400];
    snprintf(what, sizeof what, "%s launch of %s: %s", x->trace, k->name, tcf_decode_reason(st));
    return check_report(st == TCF_DECODE_OK, __FILE__, __LINE__, what, NULL);
}

/* A pointer as the recorded programs' allocators hand them out: the caching allocator's
 * cudaMalloc blocks (0x7f...) or cudaMallocAsync's pools (the fuse-mode traces, below
 * 2^40). */
static inline int fixture_device_ptr(uint64_t p)
{
    return p >> 40 == 0x7f || (p >= (1ull << 32) && p < (1ull << 40));
}

/* Frees what load_launches kept (the sanitizer builds check for leaks). */
static void free_launches(void)
{
    for (size_t i = 0; i < nls; i++)
        free(ls[i].params), free(ls[i].trace);
    kern_free(ks, nks);
    free(ls);
    ls = NULL, ks = NULL, nls = nks = 0;
}
#endif
