/* Fuse mode's counters and its lines of the summary printed at exit (TCFUSE_STATS=1). */
#include <stdio.h>
#include <string.h>

#include "cache/cache.h"
#include "exec/internal.h"

tcf_xcounters_t tcf_xctr;
tcf_fkcounters_t tcf_fkc;

static void tcf_fuse_refusals(char *line, size_t cap)
{
    size_t len = 0;
    line[0] = '\0';
    for (int s = 1; s < TCF_DECODE_NSTATUS && len < cap; s++) {
        unsigned long c = atomic_load(&tcf_xctr.refused[s]);
        if (c)
            len += (size_t)snprintf(line + len, cap - len, "%s%s %lu", len ? ", " : "",
                                    tcf_decode_reason((tcf_decode_status_t)s), c);
    }
    unsigned long long nn = atomic_load(&tcf_xctr.no_nvrtc), nw = atomic_load(&tcf_xctr.no_worker);
    if (nn && len < cap)
        len += (size_t)snprintf(line + len, cap - len, "%sno NVRTC %llu", len ? ", " : "", nn);
    if (nw && len < cap)
        snprintf(line + len, cap - len, "%sno worker %llu", len ? ", " : "", nw);
}

/* Per kernel family: launches, decoded, fused, and the reason the most launches of the
 * family were left alone. What a user looks at first: what tcfuse did to their program. */
static void tcf_exec_families_print(void)
{
    struct { unsigned long long launches, decoded, fused, why[TCF_DECODE_NSTATUS]; } f[TCF_FAM_COUNT];
    memset(f, 0, sizeof f);
    for (uint32_t i = 0, n = tcf_kernel_count(); i < n; i++) {
        tcf_kernel_t *k = tcf_kernel_at(i);
        if (!k || k->family >= TCF_FAM_COUNT)
            continue;
        unsigned long long left = atomic_load_explicit(&k->launches, memory_order_relaxed),
                           d = atomic_load_explicit(&k->decoded, memory_order_relaxed);
        f[k->family].launches += left + d;
        f[k->family].decoded += d;
        f[k->family].fused += atomic_load_explicit(&k->fused, memory_order_relaxed);
        if (left && k->refusal < TCF_DECODE_NSTATUS)
            f[k->family].why[k->refusal] += left;
    }
    tcf_out("  by family     launches   decoded     fused  most left alone by");
    for (int done = 0; done < TCF_FAM_COUNT; done++) {
        int best = -1;
        for (int j = 0; j < TCF_FAM_COUNT; j++)
            if (f[j].launches && (best < 0 || f[j].launches > f[best].launches))
                best = j;
        if (best < 0)
            break;
        int why = 0;   /* a refusal; launches of kernels that decode (left when nothing can be
                        * fused: no NVRTC, no worker) name none */
        for (int r = 1; r < TCF_DECODE_NSTATUS; r++)
            if (f[best].why[r] && (!why || f[best].why[r] > f[best].why[why]))
                why = r;
        tcf_out("    %-20s %9llu %9llu %9llu%s%s", tcf_family_name((tcf_family_t)best),
                f[best].launches, f[best].decoded, f[best].fused, why ? "  " : "",
                why ? tcf_decode_reason((tcf_decode_status_t)why) : "");
        f[best].launches = 0;
    }
}

/* Why checks could not run (verify_unable): the first words of each distinct reason, its
 * numbers folded ('#'), with a count and the kernel or ops it was about; the summary shows
 * them beside the fallbacks, so that one run names the cause on a real model. */
#define TCF_UNABLE_KINDS 6
static struct {
    char why[96], what[72];
    unsigned n;
} tcf_unable[TCF_UNABLE_KINDS];
static unsigned tcf_nunable;
static pthread_mutex_t tcf_unable_lock = PTHREAD_MUTEX_INITIALIZER;

void tcf_unable_note(const char *what, const char *why)
{
    char key[96];
    size_t k = 0;
    /* values become '#' (hex, and decimals of 4 digits or more: sizes, addresses), so
     * that one cause counts once; small numbers (an original's index, a byte offset in
     * its parameters) stay, they say where */
    const char *c = why && *why ? why : "out of memory";
    while (*c && k + 1 < sizeof key) {
        size_t run = 0;
        if (c[0] == '0' && c[1] == 'x')
            for (run = 2; (c[run] >= '0' && c[run] <= '9') || (c[run] >= 'a' && c[run] <= 'f'); run++)
                ;
        else
            while (c[run] >= '0' && c[run] <= '9')
                run++;
        if (run >= 4 || (run > 2 && c[1] == 'x')) {
            key[k++] = '#';
            c += run;
        } else if (run) {
            for (size_t i = 0; i < run && k + 1 < sizeof key; i++)
                key[k++] = *c++;
        } else {
            key[k++] = *c++;
        }
    }
    key[k] = '\0';
    pthread_mutex_lock(&tcf_unable_lock);
    unsigned i = 0;
    while (i < tcf_nunable && strcmp(tcf_unable[i].why, key))
        i++;
    if (i == tcf_nunable && tcf_nunable < TCF_UNABLE_KINDS) {
        snprintf(tcf_unable[i].why, sizeof tcf_unable[i].why, "%s", key);
        snprintf(tcf_unable[i].what, sizeof tcf_unable[i].what, "%s", what ? what : "");
        tcf_nunable++;
    }
    if (i < tcf_nunable)
        tcf_unable[i].n++;
    pthread_mutex_unlock(&tcf_unable_lock);
}

static void tcf_unable_print(void)
{
    int locked = tcf_lock_at_exit(&tcf_unable_lock);
    for (unsigned i = 0; i < tcf_nunable; i++)
        tcf_out("  unable        %u x %s (first: %s)", tcf_unable[i].n, tcf_unable[i].why,
                tcf_unable[i].what);
    if (locked)
        pthread_mutex_unlock(&tcf_unable_lock);
}

void tcf_exec_stats_print(void)
{
    unsigned long long held = atomic_load(&tcf_xctr.held), passed = atomic_load(&tcf_xctr.passed),
                       all = atomic_load(&tcf_ctr.launches);
    tcf_out("  decoded       %llu of %llu launches (%.1f%%): %llu held, %llu issued at once%s",
            held + passed, all, all ? 100.0 * (double)(held + passed) / (double)all : 0.0, held,
            passed, tcf_cfg.hold_all ? " (TCFUSE_HOLD_ALL)" : "");
    tcf_out("  held          %llu windows from a known start; %llu launches, %llu frees (%llu "
            "handed to an allocation of their size); %llu flushes; %llu chains planned as "
            "issued, %llu not planned again (planned before in vain)",
            (unsigned long long)atomic_load(&tcf_xctr.holds), held,
            (unsigned long long)atomic_load(&tcf_xctr.held_frees),
            (unsigned long long)atomic_load(&tcf_xctr.frees_handed),
            (unsigned long long)atomic_load(&tcf_xctr.flushes),
            (unsigned long long)atomic_load(&tcf_xctr.learned),
            (unsigned long long)atomic_load(&tcf_xctr.learn_skipped));
    if (tcf_cfg.ahead)
        tcf_out("  ahead         %llu launches and %llu memsets issued ahead of decoded work "
                "they do not touch, %llu not (they may); %llu frees kept from hand-over "
                "(%llu kernels learned); %llu allocations placed by the driver, %llu GEMMs' "
                "parameters unread",
                (unsigned long long)atomic_load(&tcf_xctr.ahead_launches),
                (unsigned long long)atomic_load(&tcf_xctr.ahead_ops),
                (unsigned long long)atomic_load(&tcf_xctr.ahead_refused),
                (unsigned long long)atomic_load(&tcf_xctr.frees_kept_back),
                (unsigned long long)atomic_load(&tcf_xctr.ahead_learned),
                (unsigned long long)atomic_load(&tcf_xctr.ahead_queries),
                (unsigned long long)atomic_load(&tcf_xctr.ahead_unread));
    tcf_out("  reuse         %llu allocations served from kept blocks; %llu frees kept, %llu "
            "not (TCFUSE_REUSE full); %llu given back to the driver; at most %.1f MiB kept%s",
            (unsigned long long)atomic_load(&tcf_xctr.reuse_served),
            (unsigned long long)atomic_load(&tcf_xctr.reuse_kept),
            (unsigned long long)atomic_load(&tcf_xctr.reuse_full),
            (unsigned long long)atomic_load(&tcf_xctr.reuse_released),
            (double)atomic_load(&tcf_xctr.reuse_peak) / (1 << 20),
            tcf_cfg.reuse ? "" : " (TCFUSE_REUSE=0: off)");
    tcf_reserve_stats();
    if (tcf_cfg.stats)
        tcf_out("  flush time    %.1f ms issuing held windows (planning, fused and original "
                "launches, held frees)",
                (double)atomic_load(&tcf_xctr.flush_ns) / 1e6);
    tcf_out("  hold policy   %llu held windows fused nothing; %llu holds passed (their place "
            "fused nothing when held), %llu held again to re-check (%llu after passes, %llu "
            "after new kernels)%s",
            (unsigned long long)atomic_load(&tcf_xctr.holds_vain),
            (unsigned long long)atomic_load(&tcf_xctr.site_passed),
            (unsigned long long)(atomic_load(&tcf_xctr.site_probes) +
                                 atomic_load(&tcf_xctr.site_probes_table)),
            (unsigned long long)atomic_load(&tcf_xctr.site_probes),
            (unsigned long long)atomic_load(&tcf_xctr.site_probes_table),
            tcf_cfg.hold_all ? " (TCFUSE_HOLD_ALL: always held)"
            : tcf_cfg.hold_adapt ? "" : " (TCFUSE_HOLD_ADAPT=0: always held)");
    /* bench/run-all reads "fused N groups; M launches removed": keep that prefix */
    tcf_out("  fused         %llu groups; %llu launches removed, %llu stores dropped, "
            "%llu MiB of traffic avoided; %llu groups over N-d spaces, %llu with a row "
            "reduction (%llu of them a softmax, %llu a norm)",
            (unsigned long long)atomic_load(&tcf_xctr.groups_fused),
            (unsigned long long)atomic_load(&tcf_xctr.launches_removed),
            (unsigned long long)atomic_load(&tcf_xctr.stores_dropped),
            (unsigned long long)(atomic_load(&tcf_xctr.bytes_avoided) >> 20),
            (unsigned long long)atomic_load(&tcf_xctr.groups_nd),
            (unsigned long long)atomic_load(&tcf_xctr.groups_rows),
            (unsigned long long)atomic_load(&tcf_xctr.groups_softmax),
            (unsigned long long)atomic_load(&tcf_xctr.groups_norm));
    tcf_out("  kernels       %u generated: %lu compiled, %lu from the disk cache, %lu verified; "
            "%lu decoded kernels checked alone, %lu disabled; %.1f ms looking in the disk cache "
            "on the application's threads",
            tcf_fkern_made(), atomic_load(&tcf_fkc.compiled), atomic_load(&tcf_fkc.disk_hits),
            atomic_load(&tcf_fkc.verified), atomic_load(&tcf_fkc.kernels_checked),
            atomic_load(&tcf_fkc.kernel_mismatch), atomic_load(&tcf_xctr.disk_load_ns) / 1e6);
    char line[512];
    size_t len = 0;
    line[0] = '\0';
#define TCF_FK_PRINT(nm)                                                                   \
    if (atomic_load(&tcf_fkc.nm) && strcmp(#nm, "compiled") && strcmp(#nm, "disk_hits") && \
        strcmp(#nm, "verified") && strcmp(#nm, "kernels_checked") && len < sizeof line)    \
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%s %lu", len ? ", " : "", \
                                #nm, atomic_load(&tcf_fkc.nm));
    TCF_FK_COUNTERS(TCF_FK_PRINT)
    unsigned long long hf = atomic_load(&tcf_xctr.held_failed), ff = atomic_load(&tcf_xctr.fused_failed);
    if (hf && len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, "%sheld_failed %llu", len ? ", " : "", hf);
    if (ff && len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, "%sfused_failed %llu", len ? ", " : "", ff);
    uint64_t cr, cw;
    tcf_cache_failures(&cr, &cw);
    if (cr && len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, "%scache_read_failed %llu",
                                len ? ", " : "", (unsigned long long)cr);
    if (cw && len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, "%scache_write_failed %llu",
                                len ? ", " : "", (unsigned long long)cw);
    tcf_out("  fallbacks     %s", len ? line : "none");
    tcf_unable_print();
    tcf_fuse_refusals(line, sizeof line);
    tcf_out("  not held      %s", line[0] ? line : "none");
    tcf_exec_families_print();
}
