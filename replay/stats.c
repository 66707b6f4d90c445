/* Graph (and full) mode's counters and its lines of the summary printed at exit (TCFUSE_STATS=1). */
#include <stdio.h>
#include <string.h>

#include "replay/internal.h"

tcf_rcounters_t tcf_rctr;

void tcf_rstats_patched(uint32_t n)
{
    unsigned b = 0;
    while (b + 1 < TCF_R_PATCH_BUCKETS && (1u << b) <= n)
        b++;
    atomic_fetch_add_explicit(&tcf_rctr.patches_hist[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&tcf_rctr.patched, n, memory_order_relaxed);
    unsigned long long m = atomic_load_explicit(&tcf_rctr.patch_max, memory_order_relaxed);
    while (n > m && !atomic_compare_exchange_weak(&tcf_rctr.patch_max, &m, n))
        ;
}

#define L(x) atomic_load(&tcf_rctr.x)

static void tcf_mib(char *buf, size_t cap, uint64_t bytes)
{
    snprintf(buf, cap, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

void tcf_replay_stats_print(void)
{
    unsigned long long rep = L(replayed), lrep = L(launches_replayed), all = atomic_load(&tcf_ctr.launches);
    tcf_out("  replay        %llu windows run as graphs (%llu launches, %.1f%% of all); %llu "
            "windows held (%llu launches, %llu memsets and copies, %llu frees)",
            rep, lrep, all ? 100.0 * (double)lrep / (double)all : 0.0, L(holds), L(held),
            L(held_ops), L(held_frees));
    char line[512];
    size_t len = 0;
    line[0] = '\0';
    for (unsigned b = 0; b < TCF_R_PATCH_BUCKETS && len < sizeof line; b++) {
        unsigned long long c = L(patches_hist[b]);
        if (!c)
            continue;
        unsigned lo = b ? 1u << (b - 1) : 0, hi = b ? (1u << b) - 1 : 0;
        if (b + 1 == TCF_R_PATCH_BUCKETS)
            len += (size_t)snprintf(line + len, sizeof line - len, " %u+:%llu", lo, c);
        else if (lo == hi)
            len += (size_t)snprintf(line + len, sizeof line - len, " %u:%llu", lo, c);
        else
            len += (size_t)snprintf(line + len, sizeof line - len, " %u-%u:%llu", lo, hi, c);
    }
    tcf_out("  patches       nodes patched per replay:%s; mean %.2f, max %llu; %.1f ms replaying "
            "on the application's threads (%.1f us a window)", len ? line : " none",
            rep ? (double)L(patched) / (double)rep : 0.0, L(patch_max),
            (double)L(replay_ns) / 1e6, rep ? (double)L(replay_ns) / 1e3 / (double)rep : 0.0);
    if (rep) {   /* where a window's time goes: the driver's calls, and the rest */
        double us = 1e3 * (double)rep, pk = (double)L(patch_kernel_ns) / us,
               po = (double)L(patch_op_ns) / us, la = (double)L(launch_ns) / us;
        unsigned long long ops = L(patched_ops), kern = L(patched) - ops;
        tcf_out("  replay time   us a window: %.1f the driver's kernel-node patches (%.2f us "
                "each), %.1f its memset and copy patches (%.2f us each), %.1f its graph "
                "launches; %.1f the rest", pk,
                kern ? (double)L(patch_kernel_ns) / 1e3 / (double)kern : 0.0, po,
                ops ? (double)L(patch_op_ns) / 1e3 / (double)ops : 0.0, la,
                (double)L(replay_ns) / us - pk - po - la);
        if (tcf_cfg.replay_launcher) {
            unsigned long long q = atomic_load(&tcf_rl_queued);
            tcf_out("  launcher      %llu graph launches made on tcfuse's launcher thread (%.1f us "
                    "each; TCFUSE_REPLAY_LAUNCHER), %llu on the application's (a free after the "
                    "graph, no thread, the queue full, exit), %llu refused there and their "
                    "nodes issued one by one; the application's threads waited for it %llu "
                    "times, %.1f ms in all%s", q,
                    q ? (double)L(rl_launch_ns) / 1e3 / (double)q : 0.0, L(rl_inline),
                    L(rl_failed), L(rl_waits), (double)L(rl_wait_ns) / 1e6,
                    L(rl_lost) ? "; at exit it did not finish within 0.1 s" : "");
        }
        if (tcf_cfg.replay_unread)
            tcf_out("  unread        %llu kernel nodes left unpatched: only bytes their kernel "
                    "never reads had changed (TCFUSE_REPLAY_UNREAD), %llu patched",
                    L(patched_unread), kern);
        tcf_rplan_print_costliest(5);
    }
    tcf_out("  as issued     held windows run as issued: %llu left a graph's path, %llu closed "
            "without a ready graph, %llu for another stream's order, %llu at exit, %llu failed, "
            "%llu mismatched; %llu windows run as issued to time them (%llu graphs judged, "
            "%llu not seen often enough to be; %llu kept their key's verdict)",
            L(issued_diverged), L(issued_no_graph), L(issued_order), L(issued_exit),
            L(issued_failed), L(issued_collision), L(explored), L(judged), L(judge_expired),
            L(judge_kept));
    tcf_out("  pauses        %llu times a stream's held windows ran as issued %d in a row, "
            "%llu times its windows' keys were new %d in a row (%d after a pause): %llu windows "
            "then not held, their %llu launches counted, not recorded",
            L(pauses), TCF_R_VAIN, L(learn_pauses), TCF_R_NEWRUN, TCF_R_NEWRUN_AGAIN,
            L(paused), L(quiet));
    uint64_t graphs, mem, peak, keys, ready, building, given_up;
    tcf_rplan_held(&graphs, &mem, &peak);
    tcf_rplan_census(&keys, &ready, &building, &given_up);
    char m1[32], m2[32];
    tcf_mib(m1, sizeof m1, mem);
    tcf_mib(m2, sizeof m2, peak);
    char nw[48] = "";
    if (L(no_worker))
        snprintf(nw, sizeof nw, " (%llu: no worker thread)", L(no_worker));
    char ring[96] = "";
    if (tcf_rring > 1)
        snprintf(ring, sizeof ring, ", %llu of them with a second instance (TCFUSE_REPLAY_RING; "
                 "%llu refused)", L(ring_built), L(ring_failed));
    tcf_out("  graphs        %llu made (%llu in the background, %llu on the application's "
            "thread%s)%s, %llu whole-graph updates, %llu re-instantiated, %llu evicted; %llu held, "
            "~%s of device memory (peak ~%s)",
            L(built_bg) + L(built_sync), L(built_bg), L(built_sync), nw, ring, L(updates),
            L(reinstantiated), L(evicted), (unsigned long long)graphs, m1, m2);
    char rc[64] = "";
    if (L(keys_reclaimed))
        snprintf(rc, sizeof rc, "; %llu entries of keys seen once long ago reused",
                 L(keys_reclaimed));
    tcf_out("  keys          %llu windows learned, %llu distinct keys: %llu with a graph, %llu "
            "building, %llu given up; %llu too short or not carriable%s%s",
            L(learned), (unsigned long long)keys, (unsigned long long)ready,
            (unsigned long long)building, (unsigned long long)given_up, L(not_buildable),
            L(learn_untracked) ? " (some untracked: table full)" : "", rc);
    len = 0;
    line[0] = '\0';
    for (int r = 0; r < TCF_RG__COUNT; r++) {
        unsigned long long c = L(gave_up[r]);
        if (c)
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%s %llu", len ? ", " : "",
                                    tcf_rg_names[r], c);
    }
    if (len)
        tcf_out("  given up      %s", line);
    len = 0;
    line[0] = '\0';
    for (int r = 1; r < TCF_RN__COUNT && len < sizeof line; r++) {
        unsigned long long c = L(not_held[r]);
        if (!c)
            continue;
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%s %llu", len ? ", " : "",
                                tcf_rn_names[r], c);
        if (r == TCF_RN_ATTR) {
            len += (size_t)snprintf(line + len, sizeof line - len, " (ids");
            for (int id = 0; id < 32 && len < sizeof line; id++)
                if (L(not_held_attr_id[id]))
                    len += (size_t)snprintf(line + len, sizeof line - len, " %d:%llu", id,
                                            L(not_held_attr_id[id]));
            len += (size_t)snprintf(line + len, sizeof line - len, ")");
        }
    }
    if (L(capturing) && len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, "%sduring the application's "
                                "stream captures %llu (%llu captures)", len ? ", " : "",
                                L(capturing), L(app_captures));
    if (len)
        tcf_out("  not held      %s", line);
    if (tcf_cfg.replay_slow_end)
        tcf_out("  slow end      %llu windows cut short before a wait their stream's last "
                "stretches predicted (TCFUSE_REPLAY_SLOW_END)", L(slow_end_cuts));
    if (L(cuts_unsupported))
        tcf_out("  cuts          %llu before launches a node cannot carry", L(cuts_unsupported));
    if (L(held_failed) || L(patch_failed))
        tcf_out("  problems      %llu held launches or frees the driver refused when issued, "
                "%llu patches refused", L(held_failed), L(patch_failed));
    tcf_rfull_stats_print();
}
