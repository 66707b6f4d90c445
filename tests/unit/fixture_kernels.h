/* A recorded trace's kernels (tests/fixtures/trace-*.jsonl) as the decoder takes them:
 * id, name and parameter layout. Shared by fixture_launches.h and test_fuser.c. */
#ifndef TCF_TEST_FIXTURE_KERNELS_H
#define TCF_TEST_FIXTURE_KERNELS_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace/read.h"

typedef struct { int64_t id; char *name; uint32_t np, *off, *sz; } kern_t;

/* Appends the trace's kernel k to (*ks)[0..*n). */
static inline void kern_add(kern_t **ks, size_t *n, const tcf_trace_kernel_t *k)
{
    *ks = realloc(*ks, ++*n * sizeof **ks);
    kern_t *x = &(*ks)[*n - 1];
    *x = (kern_t){ k->id, strdup(k->name), (uint32_t)k->nparams, calloc(k->nparams + 1, 4),
                   calloc(k->nparams + 1, 4) };
    for (size_t i = 0; i < k->nparams; i++)
        x->off[i] = k->params[i].offset, x->sz[i] = k->params[i].size;
}

/* Frees ks[0..n) and ks. */
static inline void kern_free(kern_t *ks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ks[i].name), free(ks[i].off), free(ks[i].sz);
    free(ks);
}

#endif
