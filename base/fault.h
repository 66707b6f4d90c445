/* base/fault.h: fault injection, for tests (TCFUSE_FAULT), and tcfuse's own allocations.
 *
 * TCFUSE_FAULT=<site>[:<count>][,<site>[:<count>]...] makes calls at the named sites
 * (base/faults.def) fail as if the call itself had failed: count N fails the N-th call
 * only (default 1), N+ the N-th and every later one, `every` all of them. Every injected
 * failure must end as a real one would: the original launches run and the stats count it
 * under the site's named reason (faults.def says which); the stats' "faults" line says
 * how many were injected at each site out of how many calls.
 *
 * Cost when unset: one relaxed load of a global and a branch predicted not taken, at each
 * site (all off the per-launch path but the fused launch). config/ parses the option and
 * arms the sites at start (tcf_fault_arm), before any thread of tcfuse runs; unit tests
 * may arm again between tests. Thread-safe: call counts are atomic, so "the N-th call" is
 * the N-th in the order the threads reached the site.
 *
 * tcf_malloc and its kin are the site `alloc`: every heap allocation tcfuse makes for its
 * own work goes through them, and each one that returns NULL (injected or real) is
 * counted (tcf_alloc_failures, the stats' problems line).
 */
#ifndef TCF_BASE_FAULT_H
#define TCF_BASE_FAULT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
#define TCF_FAULT_SITE(id, name, what, ends) TCF_FAULT_##id,
#include "base/faults.def"
#undef TCF_FAULT_SITE
    TCF_FAULT__COUNT
} tcf_fault_site_t;

/* What TCFUSE_FAULT asks for, per site: nth 0 leaves the site alone; otherwise the nth
 * call fails, and with from set every later one too. */
typedef struct {
    uint64_t nth[TCF_FAULT__COUNT];
    uint8_t  from[TCF_FAULT__COUNT];
} tcf_fault_spec_t;

/* Nonzero once any site is armed. */
extern atomic_int tcf_fault_armed;

/* Counts a call at site s; 1 when it must fail. Only reached when armed. */
int tcf_fault_hit(tcf_fault_site_t s);

/* Whether this call at site s must fail. Put it in front of the call, and fail the way
 * the call would have. */
static inline int tcf_fault(tcf_fault_site_t s)
{
    return __builtin_expect(atomic_load_explicit(&tcf_fault_armed, memory_order_relaxed), 0) &&
           tcf_fault_hit(s);
}

/* Parses a TCFUSE_FAULT value into *out (pure). Blank text arms nothing. 0, or -1 with
 * the first problem in err (when err is not NULL); *out is untouched on failure. */
int tcf_fault_parse(const char *text, tcf_fault_spec_t *out, char *err, size_t cap);
/* Arms the sites of *spec (NULL: none) and zeroes every count. */
void tcf_fault_arm(const tcf_fault_spec_t *spec);

/* The site's name as TCFUSE_FAULT spells it ("?" when s is out of range). */
const char *tcf_fault_name(int s);
/* Calls counted and failures injected at s since it was armed. */
uint64_t tcf_fault_calls(tcf_fault_site_t s);
uint64_t tcf_fault_injected(tcf_fault_site_t s);
/* "nvrtc_compile 1 of 3 calls, alloc 0 of 0 calls" for every armed site, into buf.
 * Returns its length, 0 when no site is armed. */
size_t tcf_fault_summary(char *buf, size_t cap);

/* --- tcfuse's own allocations (the site `alloc`) -------------------------------------- */
void *tcf_malloc(size_t n);
void *tcf_calloc(size_t n, size_t size);
void *tcf_realloc(void *p, size_t n);   /* on failure p is left as it was */
/* free(p) with asynchronous signals deferred, for memory freed on the application's thread. */
void tcf_free(void *p);
char *tcf_strdup(const char *s);
/* Allocations of the above that returned NULL, injected or not. */
uint64_t tcf_alloc_failures(void);

#endif
