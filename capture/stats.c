/* Counters and the summary printed at exit (TCFUSE_STATS=1). Window-level bookkeeping
 * (keys, lengths, reasons) happens once per closed window, under one lock; per-launch
 * counters are relaxed atomics. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/internal.h"

#define TCF_KEYS_BITS 14
#define TCF_KEYS (1u << TCF_KEYS_BITS)
#define TCF_REASONS 128

tcf_counters_t tcf_ctr;

typedef struct { uint64_t key, count, launches; } tcf_keyrow_t;
typedef struct { const char *name; uint64_t count; } tcf_reason_t;

static pthread_mutex_t tcf_slock = PTHREAD_MUTEX_INITIALIZER;
static tcf_keyrow_t *tcf_keys;
static uint64_t tcf_nkeys, tcf_keys_untracked, tcf_repeats;
static uint64_t *tcf_lengths;  /* windows by exact launch count, 0..window_max */
static uint32_t tcf_maxlen;
static tcf_reason_t tcf_reasons[TCF_REASONS];
static unsigned tcf_nreasons;

void tcf_stats_init(void)
{
    tcf_keys = tcf_calloc(TCF_KEYS, sizeof *tcf_keys);
    tcf_maxlen = (uint32_t)tcf_cfg.window_max;
    tcf_lengths = tcf_calloc(tcf_maxlen + 1, sizeof *tcf_lengths);
}

static void tcf_count_reason(const char *reason)
{
    for (unsigned i = 0; i < tcf_nreasons; i++)
        if (tcf_reasons[i].name == reason || !strcmp(tcf_reasons[i].name, reason)) {
            tcf_reasons[i].count++;
            return;
        }
    if (tcf_nreasons < TCF_REASONS)
        tcf_reasons[tcf_nreasons++] = (tcf_reason_t){ reason, 1 };
}

void tcf_stats_window(uint64_t key, uint32_t nlaunch, const char *reason)
{
    atomic_fetch_add(&tcf_ctr.windows, 1);
    atomic_fetch_add(&tcf_ctr.windows_launches, nlaunch);
    if (!tcf_cfg.stats)
        return;  /* lengths, reasons and keys are the summary's alone */
    pthread_mutex_lock(&tcf_slock);
    if (tcf_lengths)
        tcf_lengths[nlaunch < tcf_maxlen ? nlaunch : tcf_maxlen]++;
    tcf_count_reason(reason);
    if (tcf_keys && tcf_stats_keyed()) {
        key = key ? key : 1;
        uint32_t i = (uint32_t)(key >> (64 - TCF_KEYS_BITS));
        uint32_t probe = 0;
        while (tcf_keys[i].key && tcf_keys[i].key != key && probe++ < TCF_KEYS)
            i = (i + 1) & (TCF_KEYS - 1);
        if (tcf_keys[i].key == key) {
            tcf_keys[i].count++;
            tcf_repeats++;
        } else if (!tcf_keys[i].key && tcf_nkeys < TCF_KEYS * 3 / 4) {
            tcf_keys[i] = (tcf_keyrow_t){ key, 1, nlaunch };
            tcf_nkeys++;
        } else {
            tcf_keys_untracked++;
        }
    }
    pthread_mutex_unlock(&tcf_slock);
}

static int tcf_by_count_desc(const void *a, const void *b)
{
    const tcf_reason_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->name, y->name);
}

static int tcf_key_by_count_desc(const void *a, const void *b)
{
    const tcf_keyrow_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Appends to a line buffer, never past its end. */
static void tcf_cat(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void tcf_cat(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = *len + (size_t)n < cap ? *len + (size_t)n : cap;
}

static void tcf_print_lengths(uint64_t windows)
{
    uint64_t median = 0, seen = 0, maxl = 0;
    char line[512];
    size_t len = 0;
    for (uint32_t n = 1; n <= tcf_maxlen; n++) {
        if (!tcf_lengths[n])
            continue;
        maxl = n;
        if (!median && (seen + tcf_lengths[n]) * 2 >= windows)
            median = n;
        seen += tcf_lengths[n];
    }
    tcf_out("  windows       %llu (launches per window: median %llu, max %llu)",
            (unsigned long long)windows, (unsigned long long)median, (unsigned long long)maxl);
    /* Power-of-two buckets: 1, 2-3, 4-7, ... */
    for (uint32_t lo = 1; lo <= tcf_maxlen; lo *= 2) {
        uint64_t c = 0;
        uint32_t hi = lo * 2 - 1 < tcf_maxlen ? lo * 2 - 1 : tcf_maxlen;
        for (uint32_t n = lo; n <= hi; n++)
            c += tcf_lengths[n];
        if (!c)
            continue;
        if (lo == hi)
            tcf_cat(line, sizeof line, &len, " %u:%llu", lo, (unsigned long long)c);
        else
            tcf_cat(line, sizeof line, &len, " %u-%u:%llu", lo, hi, (unsigned long long)c);
    }
    tcf_out("  window sizes %s", len ? line : " (none)");
}

/* ", rank R of W" where a launcher of torch.distributed's named this process's rank
 * (tcf_rank): each rank prints its own summary, and a pid says nothing of which rank. */
static void tcf_rank_suffix(char *buf, size_t n)
{
    char r[10], w[10];
    buf[0] = 0;
    if (tcf_rank(r, w))
        snprintf(buf, n, ", rank %s of %s", r, w);
}

int tcf_stats_idle(void)
{
    return !atomic_load(&tcf_ctr.launches) && !atomic_load(&tcf_ctr.allocs) &&
           !atomic_load(&tcf_ctr.ops) && !atomic_load(&tcf_ctr.frees);
}

/* What one read of the clock costs here: observe mode reads it once an event, and a
 * virtual machine whose clock has no vDSO path makes each read a system call. 256 reads,
 * the cheapest of four rounds, so that a preemption does not count. */
static double tcf_clock_read_ns(void)
{
    uint64_t best = UINT64_MAX;
    for (int round = 0; round < 4; round++) {
        uint64_t t0 = tcf_now_ns(), t1 = t0;
        for (int i = 0; i < 256; i++)
            t1 = tcf_now_ns();
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    return (double)best / 256;
}

void tcf_stats_print(void)
{
    char rank[48];
    tcf_rank_suffix(rank, sizeof rank);
    tcf_out("stats: mode %s, pid %d%s", tcf_mode_name(tcf_cfg.mode), (int)getpid(), rank);
    if (tcf_stats_idle()) {   /* a launcher (torchrun's agent) that only asked the driver */
        tcf_out("  no GPU work  no kernel launched, nothing allocated, copied or set");
        return;
    }
    /* At exit: a holder that exit interrupted never lets go; the figures are read as
     * they stand (the tables have fixed sizes: a half-made update misreads, never faults). */
    int locked = tcf_lock_at_exit(&tcf_slock);
    uint64_t windows = atomic_load(&tcf_ctr.windows);
    tcf_out("  launches      %llu (%u distinct kernels)",
            (unsigned long long)atomic_load(&tcf_ctr.launches), tcf_kernel_count());
    if (tcf_lengths)
        tcf_print_lengths(windows);
    if (tcf_stats_keyed())
        tcf_out("  keys          %llu distinct; %llu of %llu windows repeated an earlier key",
                (unsigned long long)tcf_nkeys, (unsigned long long)tcf_repeats,
                (unsigned long long)windows);
    if (tcf_keys && tcf_nkeys) {
        tcf_keyrow_t top[5] = { 0 };
        for (uint32_t i = 0; i < TCF_KEYS; i++) {
            if (!tcf_keys[i].key)
                continue;
            if (tcf_key_by_count_desc(&tcf_keys[i], &top[4]) < 0 || !top[4].key) {
                top[4] = tcf_keys[i];
                qsort(top, 5, sizeof *top, tcf_key_by_count_desc);
            }
        }
        char line[512];
        size_t len = 0;
        for (int i = 0; i < 5 && top[i].key; i++)
            tcf_cat(line, sizeof line, &len, "%s%016llx x%llu (%llu launches)", i ? ", " : "",
                    (unsigned long long)top[i].key, (unsigned long long)top[i].count,
                    (unsigned long long)top[i].launches);
        tcf_out("  top keys      %s", line);
    }
    tcf_reason_t r[TCF_REASONS];
    memcpy(r, tcf_reasons, tcf_nreasons * sizeof *r);
    qsort(r, tcf_nreasons, sizeof *r, tcf_by_count_desc);
    char line[1024];
    size_t len = 0;
    for (unsigned i = 0; i < tcf_nreasons; i++)
        tcf_cat(line, sizeof line, &len, "%s%s %llu", i ? ", " : "", r[i].name,
                (unsigned long long)r[i].count);
    tcf_out("  boundaries    %s", len ? line : "(none)");
    /* Every boundary call from every thread, whether it closed a window or found none open:
     * a thread that polls one (a watchdog's event query) shows here, not above. */
    tcf_out("  calls         %llu boundary calls from every thread (the windows they closed are above)",
            (unsigned long long)atomic_load(&tcf_ctr.boundary_calls));
    tcf_out("  clock         %.0f ns a read (one an event in observe mode, none in the others "
            "without a trace)", tcf_clock_read_ns());
    unsigned long long fs = atomic_load(&tcf_ctr.frees_stream);
    tcf_out("  allocator     %llu allocs, %llu frees (%llu stream-ordered); frees visible: %s",
            (unsigned long long)atomic_load(&tcf_ctr.allocs),
            (unsigned long long)atomic_load(&tcf_ctr.frees), fs, fs ? "yes" : "no");
    unsigned long long at = atomic_load(&tcf_ctr.alloc_timed), ft = atomic_load(&tcf_ctr.free_timed);
    if (at || ft)
        tcf_out("  driver time   stream-ordered: %llu allocations %.1f ms (%llu over %u us), "
                "%llu frees %.1f ms",
                at, (double)atomic_load(&tcf_ctr.alloc_ns) / 1e6,
                (unsigned long long)atomic_load(&tcf_ctr.alloc_slow), TCF_ALLOC_SLOW_NS / 1000u,
                ft, (double)atomic_load(&tcf_ctr.free_ns) / 1e6);
    unsigned long long fam[TCF_FAM_COUNT] = { 0 };
    for (uint32_t i = 0, n = tcf_kernel_count(); i < n; i++) {
        tcf_kernel_t *k = tcf_kernel_at(i);
        if (k && k->family < TCF_FAM_COUNT)
            fam[k->family] += atomic_load_explicit(&k->launches, memory_order_relaxed) +
                              atomic_load_explicit(&k->decoded, memory_order_relaxed);
    }
    len = 0;
    for (int done = 0; done < TCF_FAM_COUNT; done++) {   /* most launches first */
        int best = -1;
        for (int f = 0; f < TCF_FAM_COUNT; f++)
            if (fam[f] && (best < 0 || fam[f] > fam[best]))
                best = f;
        if (best < 0)
            break;
        tcf_cat(line, sizeof line, &len, "%s%s %llu", len ? ", " : "",
                tcf_family_name((tcf_family_t)best), fam[best]);
        fam[best] = 0;
    }
    if (len)
        tcf_out("  families      %s", line);
    unsigned long long ops = atomic_load(&tcf_ctr.ops);
    if (ops)
        tcf_out("  other work    %llu device memsets and copies", ops);
    unsigned long long pu = atomic_load(&tcf_ctr.params_unknown),
                       le = atomic_load(&tcf_ctr.launch_errors),
                       oom = atomic_load(&tcf_ctr.oom) + tcf_kernel_oom(),
                       af = tcf_alloc_failures();
    if (pu || le || oom || tcf_keys_untracked || af)
        tcf_out("  problems      params-unknown %llu, launch-errors %llu, out-of-memory %llu, "
                "keys-untracked %llu, allocations-failed %llu", pu, le, oom,
                (unsigned long long)tcf_keys_untracked, af);
    if (tcf_fault_summary(line, sizeof line))  /* TCFUSE_FAULT: what was injected where */
        tcf_out("  faults        %s", line);
    if (locked)
        pthread_mutex_unlock(&tcf_slock);
}
