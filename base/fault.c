/* Fault injection (fault.h): the spec's parser, the armed sites and their counts, and
 * tcfuse's own allocations, which are the site `alloc`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/fault.h"

static const char *const tcf_fault_names[TCF_FAULT__COUNT] = {
#define TCF_FAULT_SITE(id, name, what, ends) name,
#include "base/faults.def"
#undef TCF_FAULT_SITE
};

atomic_int tcf_fault_armed;
static tcf_fault_spec_t tcf_fault_spec;   /* written by tcf_fault_arm before armed is set */
static atomic_ullong tcf_fault_ncalls[TCF_FAULT__COUNT], tcf_fault_ninjected[TCF_FAULT__COUNT];
static atomic_ullong tcf_alloc_nfailed;

#define TCF_FAULT_NTH_MAX 1000000000000ull  /* 10^12 calls: past any test */

const char *tcf_fault_name(int s)
{
    return s >= 0 && s < TCF_FAULT__COUNT ? tcf_fault_names[s] : "?";
}

static int tcf_fault_space(char c) { return c == ' ' || c == '\t' || c == '\n'; }

static int tcf_fault_err(char *err, size_t cap, const char *what, const char *b, size_t n)
{
    if (err && cap)
        snprintf(err, cap, "%s '%.*s'", what, (int)(n > 64 ? 64 : n), b);
    return -1;
}

/* One "site[:count]" item, [b, b+n), spaces trimmed, into *spec. */
static int tcf_fault_item(const char *b, size_t n, tcf_fault_spec_t *spec, char *err, size_t cap)
{
    while (n && tcf_fault_space(*b))
        b++, n--;
    while (n && tcf_fault_space(b[n - 1]))
        n--;
    const char *colon = memchr(b, ':', n);
    size_t nl = colon ? (size_t)(colon - b) : n;
    int s = 0;
    while (s < TCF_FAULT__COUNT &&
           (strlen(tcf_fault_names[s]) != nl || memcmp(tcf_fault_names[s], b, nl) != 0))
        s++;
    if (!n)
        return tcf_fault_err(err, cap, "an empty item in", "", 0);
    if (s == TCF_FAULT__COUNT)
        return tcf_fault_err(err, cap, "no fault site named", b, nl);
    if (spec->nth[s])
        return tcf_fault_err(err, cap, "a site named twice:", b, nl);
    uint64_t nth = 1;
    uint8_t from = 0;
    if (colon) {
        const char *c = colon + 1, *end = b + n;
        size_t cl = (size_t)(end - c);
        if (cl == 5 && memcmp(c, "every", 5) == 0) {
            from = 1;
        } else {
            nth = 0;
            if (cl && end[-1] == '+')
                from = 1, end--;
            const char *d = c;
            for (; d < end && *d >= '0' && *d <= '9' && nth <= TCF_FAULT_NTH_MAX; d++)
                nth = nth * 10 + (uint64_t)(*d - '0');
            if (d == c || d != end || nth == 0 || nth > TCF_FAULT_NTH_MAX)
                return tcf_fault_err(err, cap, "a count that is not N, N+ or every:", c, cl);
        }
    }
    spec->nth[s] = nth;
    spec->from[s] = from;
    return 0;
}

int tcf_fault_parse(const char *text, tcf_fault_spec_t *out, char *err, size_t cap)
{
    tcf_fault_spec_t spec;
    memset(&spec, 0, sizeof spec);
    if (!text)
        text = "";
    const char *p = text;
    while (tcf_fault_space(*p))
        p++;
    if (*p) {
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t n = comma ? (size_t)(comma - p) : strlen(p);
            if (tcf_fault_item(p, n, &spec, err, cap))
                return -1;
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    *out = spec;
    return 0;
}

void tcf_fault_arm(const tcf_fault_spec_t *spec)
{
    int any = 0;
    atomic_store(&tcf_fault_armed, 0);
    if (spec)
        tcf_fault_spec = *spec;
    else
        memset(&tcf_fault_spec, 0, sizeof tcf_fault_spec);
    for (int s = 0; s < TCF_FAULT__COUNT; s++) {
        atomic_store(&tcf_fault_ncalls[s], 0);
        atomic_store(&tcf_fault_ninjected[s], 0);
        any |= tcf_fault_spec.nth[s] != 0;
    }
    atomic_store_explicit(&tcf_fault_armed, any, memory_order_release);
}

int tcf_fault_hit(tcf_fault_site_t s)
{
    if (!atomic_load_explicit(&tcf_fault_armed, memory_order_acquire) ||
        (unsigned)s >= TCF_FAULT__COUNT || !tcf_fault_spec.nth[s])
        return 0;
    uint64_t c = atomic_fetch_add(&tcf_fault_ncalls[s], 1) + 1, nth = tcf_fault_spec.nth[s];
    int hit = tcf_fault_spec.from[s] ? c >= nth : c == nth;
    if (hit)
        atomic_fetch_add(&tcf_fault_ninjected[s], 1);
    return hit;
}

uint64_t tcf_fault_calls(tcf_fault_site_t s)
{
    return (unsigned)s < TCF_FAULT__COUNT ? atomic_load(&tcf_fault_ncalls[s]) : 0;
}

uint64_t tcf_fault_injected(tcf_fault_site_t s)
{
    return (unsigned)s < TCF_FAULT__COUNT ? atomic_load(&tcf_fault_ninjected[s]) : 0;
}

size_t tcf_fault_summary(char *buf, size_t cap)
{
    size_t len = 0;
    if (!cap)
        return 0;
    buf[0] = '\0';
    if (!atomic_load_explicit(&tcf_fault_armed, memory_order_acquire))
        return 0;
    for (int s = 0; s < TCF_FAULT__COUNT && len < cap; s++) {
        if (!tcf_fault_spec.nth[s])
            continue;
        int n = snprintf(buf + len, cap - len, "%s%s %llu of %llu calls", len ? ", " : "",
                         tcf_fault_names[s], (unsigned long long)tcf_fault_injected(s),
                         (unsigned long long)tcf_fault_calls(s));
        len = n < 0 ? len : len + (size_t)n < cap ? len + (size_t)n : cap - 1;
    }
    return len;
}

/* --- tcfuse's own allocations --------------------------------------------------------- */
static void *tcf_alloc_done(void *p)
{
    if (!p)
        atomic_fetch_add_explicit(&tcf_alloc_nfailed, 1, memory_order_relaxed);
    return p;
}

/* Each with asynchronous signals deferred (base/sigdefer.c): they run on the application's
 * thread, and an exit from a signal handler landing inside malloc would wait for its lock
 * for ever. They are rare on the hot path (first sight of a kernel, a window's growth). */
void *tcf_malloc(size_t n)
{
    if (tcf_fault(TCF_FAULT_ALLOC))
        return tcf_alloc_done(NULL);
    sigset_t old;
    tcf_sig_defer(&old);
    void *p = malloc(n ? n : 1);
    tcf_sig_resume(&old);
    return tcf_alloc_done(p);
}

void *tcf_calloc(size_t n, size_t size)
{
    if (tcf_fault(TCF_FAULT_ALLOC))
        return tcf_alloc_done(NULL);
    sigset_t old;
    tcf_sig_defer(&old);
    void *p = calloc(n ? n : 1, size ? size : 1);
    tcf_sig_resume(&old);
    return tcf_alloc_done(p);
}

void *tcf_realloc(void *p, size_t n)
{
    if (tcf_fault(TCF_FAULT_ALLOC))
        return tcf_alloc_done(NULL);
    sigset_t old;
    tcf_sig_defer(&old);
    void *q = realloc(p, n ? n : 1);
    tcf_sig_resume(&old);
    return tcf_alloc_done(q);
}

char *tcf_strdup(const char *s)
{
    if (tcf_fault(TCF_FAULT_ALLOC))
        return tcf_alloc_done(NULL);
    sigset_t old;
    tcf_sig_defer(&old);
    char *d = strdup(s);
    tcf_sig_resume(&old);
    return tcf_alloc_done(d);
}

void tcf_free(void *p)
{
    if (!p)
        return;
    sigset_t old;
    tcf_sig_defer(&old);
    free(p);
    tcf_sig_resume(&old);
}

uint64_t tcf_alloc_failures(void)
{
    return atomic_load_explicit(&tcf_alloc_nfailed, memory_order_relaxed);
}
