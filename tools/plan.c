/* plan: `tcfuse plan [--compile] [--window ID] [--time N] FILE`. Replays a recorded trace through
 * the planner: each window's launches are decoded (recognize/decode.h) and planned
 * (fuser/fuser.h) exactly as the library would, and the groups, the stores they drop and
 * the source generated for them are printed, in file order with fixed formats, so tests
 * can match lines. --compile also compiles each group with NVRTC for sm_90. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "recognize/decode.h"
#include "recognize/decode_reduce.h"
#include "recognize/recognize.h"
#include "trace/read.h"
#include "codegen/codegen.h"
#include "fuser/fuser.h"
#include "tools/tools.h"

int tcf_tool_plan(int argc, char **argv);
void tcf_tool_help_plan(FILE *f);

#define TCF_PLAN_ARCH 90                  /* H100 */
#define TCF_PLAN_NOKERNEL TCF_DECODE_NSTATUS /* a launch whose kernel line is missing */
#define TCF_PLAN_SRC_MAX (256u << 10)
#define TCF_PLAN_TOP_KERNELS 12          /* rows of plan's kernels-left table */

typedef struct {
    char *name;
    uint32_t np, *off, *sz;
    uint64_t launches, fused;            /* counted as the coverage table counts */
    uint64_t notdec[TCF_DECODE_NSTATUS + 1], unfused[TCF_FUSER_NREASON];
} tcf_plan_kernel_t;

typedef struct {
    tcf_tool_map_t kmap;                 /* kernel id -> index into k */
    tcf_plan_kernel_t *k;
    size_t nk, capk;
    tcf_item_t *items;                   /* events of windows not closed yet, in order */
    int64_t *win;
    uint8_t *why;                        /* a launch's decode status, else 0xff */
    uint8_t *fam;                        /* a launch's kernel family */
    int32_t *kix;                        /* a launch's kernel, an index into k; else -1 */
    size_t n, cap;
    int compile, found, quiet;           /* quiet: the coverage table alone (report) */
    long time_reps;                      /* --time: plans of each window timed */
    double plan_ns, plan_max_ns;         /* --time: sum of windows' mean plan, the largest */
    int64_t plan_max_win, timed, timed_launches;
    double bind_ns;                      /* --time: sum of groups' mean bind */
    int64_t bound;                       /* --time: groups bound */
    const char *cmd;                     /* "plan" or "report", for messages */
    int64_t only;                        /* --window, or -1 */
    size_t top;                          /* rows of the kernels-left table */
    int64_t windows, launches, decoded, fused, groups, dropped, failed;
    uint64_t avoided;
    uint64_t notdec[TCF_DECODE_NSTATUS + 1], unfused[TCF_FUSER_NREASON];
    struct {                             /* coverage by kernel family */
        uint64_t launches, decoded, fused, notdec[TCF_DECODE_NSTATUS + 1];
    } cov[TCF_FAM_COUNT];
    tcf_plan_t plan;
    char src[TCF_PLAN_SRC_MAX];
} tcf_plan_state_t;

void tcf_tool_help_plan(FILE *f)
{
    fprintf(f,
        "usage: tcfuse plan [--compile] [--window ID] [--time N] FILE\n"
        "\n"
        "Plans a trace (TCFUSE_TRACE=FILE) as tcfuse would fuse it: for each window, its\n"
        "launches, the ops decoded (and why the others were not), the groups of ops that\n"
        "would run as one generated kernel with the stores they drop and the bytes they\n"
        "avoid, each group's CUDA source, and each decoded op no group holds (\"as issued\",\n"
        "with the reason it was counted under, its sizes and strides). A table of coverage\n"
        "by kernel family (launches, decoded, fused, why not decoded), the kernels most often\n"
        "left as issued (and the reason most of their launches were left under) and a summary\n"
        "of all windows end the output.\n"
        "\n"
        "options:\n"
        "  -c, --compile        also compile each group with NVRTC for sm_%d and print the\n"
        "                       cubin's size (TCFUSE_NVRTC names the library)\n"
        "  -w, --window ID      only the window with this id\n"
        "  -t, --time N         also plan each window N more times and print what planning\n"
        "                       costs (the planner alone, as full mode runs it for a window\n"
        "                       it cannot bind from its key's memo): per window, per launch;\n"
        "                       and bind each group N times (full mode's re-bind of a group\n"
        "                       whose launches are new to the memo): per group\n"
        "  -h, --help           this text\n", TCF_PLAN_ARCH);
}

static const char *dt(tcf_dtype_t d) { return tcf_decode_dtype_name(d); }
/* The dtype an op's line names first: its first input's, or a fill's own (no input). */
static tcf_dtype_t dt_in(const tcf_dtype_t *in_dt, unsigned nin, tcf_dtype_t out_dt)
{
    return nin ? in_dt[0] : out_dt;
}

/* "buf2", "op1" or "-": where a group op's operand comes from or goes. */
static const char *where(uint8_t v, char *buf, size_t cap)
{
    if (v == TCF_NO_STORE) return "-";
    snprintf(buf, cap, (v & TCF_SRC_OP) ? "op%u" : "buf%u", v & (unsigned)~TCF_SRC_OP);
    return buf;
}

/* Counts, largest first, ties by name: "3 not-elementwise, 1 reduction". */
static void print_counts(const char *label, const uint64_t *c, size_t n,
                         const char *(*name)(size_t))
{
    int done[32] = { 0 }, any = 0;
    for (;;) {
        size_t best = n;
        for (size_t i = 0; i < n; i++)
            if (!done[i] && c[i] &&
                (best == n || c[i] > c[best] ||
                 (c[i] == c[best] && strcmp(name(i), name(best)) < 0)))
                best = i;
        if (best == n) break;
        printf("%s%" PRIu64 " %s", any++ ? ", " : label, c[best], name(best));
        done[best] = 1;
    }
    if (any) printf("\n");
}
static const char *decode_name(size_t i)
{
    return i == TCF_PLAN_NOKERNEL ? "no-kernel-line" : tcf_decode_reason((tcf_decode_status_t)i);
}
static const char *fuser_name(size_t i) { return tcf_fuser_reason_name((tcf_fuser_reason_t)i); }

/* Text of several lines, each behind prefix, so that it cannot be mistaken for ours. */
static void print_lines(const char *prefix, const char *text)
{
    for (const char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        printf("%s%.*s\n", prefix, nl ? (int)(nl - line) : (int)strlen(line), line);
        if (!nl) break;
    }
}

static void print_group(tcf_plan_state_t *s, unsigned gi, const tcf_fgroup_t *fg,
                        const tcf_item_t *items)
{
    const tcf_group_t *g = &fg->g;
    char a[3][16], o[16];
    printf("  group %u: items %u-%u, %u ops, n=%" PRIu64 ", %u buffers, %u scalars, vec %u, "
           "%u stores dropped, %" PRIu64 " bytes avoided", gi, fg->first, fg->last, fg->nitems,
           fg->n, g->nbufs, g->nscalars, g->vec, fg->stores_dropped, fg->bytes_avoided);
    /* an N-d group: its space, innermost first, and each buffer's byte strides over it */
    for (unsigned d = 0; d < g->ndim; d++)
        printf("%s%u", d ? "x" : ", space ", fg->args.size[d]);
    if (g->red)   /* a row group: rows of K elements, M of them */
        printf(", rows %ux%u, reduction op %u", fg->args.size[0], fg->args.size[1], g->red - 1u);
    printf("\n");
    for (unsigned b = 0; (g->ndim || g->red) && b < g->nbufs; b++) {
        printf("    buf%u %s%s strides", b, dt(g->buf_dt[b]),
               g->vec > 1 && (g->bcast0 >> b & 1) ? " (broadcast in packs)" : "");
        for (unsigned d = 0; d < (g->red ? 2u : g->ndim); d++)
            printf(" %u", fg->args.stride[b][d]);
        printf("\n");
    }
    for (unsigned k = 0; k < g->nops; k++) {
        const tcf_gop_t *op = &g->ops[k];
        for (unsigned i = 0; i < 3; i++) where(op->in_src[i], a[i], sizeof a[i]);
        if (!op->nin)   /* a fill: no input */
            snprintf(a[0], sizeof a[0], "-");
        const tcf_item_t *it = &items[fg->items[k]];
        int red = it->kind == TCF_ITEM_REDUCE;
        tcf_dtype_t din = dt_in(op->in_dt, op->nin, op->out_dt);
        printf("    op %u (item %u): %s%s %s%s%s n=%u in %s%s%s%s%s -> %s\n", k, fg->items[k],
               red ? "REDUCE " : tcf_decode_kind_name(op->kind),
               red ? tcf_reduce_op_name(it->red.op) : g->red && (g->rowops >> k & 1) ? " (per row)" : "",
               dt(din), op->out_dt != din ? "->" : "", op->out_dt != din ? dt(op->out_dt) : "",
               red ? it->red.cfg.num_inputs * it->red.cfg.num_outputs : it->op.n, a[0], op->nin > 1 ? "," : "", op->nin > 1 ? a[1] : "",
               op->nin > 2 ? "," : "", op->nin > 2 ? a[2] : "", where(op->out_buf, o, sizeof o));
    }
    if (tcf_codegen_source(g, s->src, sizeof s->src) < 0) {
        printf("  source of group %u: error (malformed group)\n", gi);
        s->failed++;
        return;
    }
    printf("  source of group %u:\n", gi);
    print_lines("    | ", s->src);
    if (s->compile) {
        void *cubin = NULL;
        size_t len = 0;
        char log[4096] = "";
        if (tcf_nvrtc_compile(s->src, TCF_PLAN_ARCH, &cubin, &len, log, sizeof log) == 0) {
            printf("  cubin of group %u: %zu bytes (sm_%d)\n", gi, len, TCF_PLAN_ARCH);
        } else {
            printf("  cubin of group %u: compile error\n", gi);
            print_lines("    ! ", log);
            s->failed++;
        }
        free(cubin);
    }
}

/* A decoded op that runs as issued: its item, kind, dtypes, count, and for a strided op its
 * sizes (innermost first) and each operand's byte strides, so that what keeps it out of
 * every group can be read off. */
static void print_alone(size_t i, const tcf_item_t *it, uint8_t why)
{
    char r[40] = "";
    if (why != 0xff)
        snprintf(r, sizeof r, " (%s)", tcf_fuser_reason_name((tcf_fuser_reason_t)why));
    if (it->kind == TCF_ITEM_REDUCE) {
        printf("  as issued: item %zu%s: REDUCE %s %s n=%u\n", i, r, tcf_reduce_op_name(it->red.op),
               dt(it->red.in_dt), it->red.cfg.num_inputs * it->red.cfg.num_outputs);
        return;
    }
    const tcf_op_t *op = &it->op;
    tcf_dtype_t din = dt_in(op->in_dt, op->nin, op->out_dt);
    printf("  as issued: item %zu%s: %s %s%s%s n=%u", i, r, tcf_decode_kind_name(op->kind),
           dt(din), op->out_dt != din ? "->" : "", op->out_dt != din ? dt(op->out_dt) : "", op->n);
    for (unsigned d = 0; d < op->it.ndim; d++)
        printf("%s%u", d ? "x" : ", space ", op->it.size[d]);
    for (unsigned k = 0; op->it.ndim && k <= op->nin; k++) {
        printf(k ? "; in%u" : "; out", k - 1u);
        for (unsigned d = 0; d < op->it.ndim; d++)
            printf(" %u", op->it.stride[k][d]);
    }
    printf("\n");
}

/* A window closed: take its events out of the pending list, plan them, count each launch
 * under its kernel's family, print (unless quiet). */
static void on_window(tcf_plan_state_t *s, int64_t id)
{
    size_t m = 0, keep = 0;
    uint64_t notdec[TCF_DECODE_NSTATUS + 1] = { 0 }, launches = 0, ops = 0, fused = 0;
    tcf_item_t *w = tcf_tool_realloc(NULL, (s->n ? s->n : 1) * sizeof *w);
    uint8_t *wfam = tcf_tool_realloc(NULL, (s->n ? s->n : 1) * sizeof *wfam);
    int32_t *wk = tcf_tool_realloc(NULL, (s->n ? s->n : 1) * sizeof *wk);
    for (size_t i = 0; i < s->n; i++) {
        if (s->win[i] != id) {   /* another window's: stays pending */
            s->items[keep] = s->items[i], s->win[keep] = s->win[i], s->fam[keep] = s->fam[i];
            s->kix[keep] = s->kix[i], s->why[keep++] = s->why[i];
            continue;
        }
        launches += s->why[i] != 0xff;
        ops += s->items[i].kind == TCF_ITEM_OP || s->items[i].kind == TCF_ITEM_REDUCE;
        if (s->why[i] != 0xff && s->why[i] != TCF_DECODE_OK) notdec[s->why[i]]++;
        wfam[m] = s->why[i] != 0xff ? s->fam[i] : 0xff;   /* 0xff: no launch */
        if (wfam[m] != 0xff && (s->only < 0 || id == s->only)) {
            s->cov[wfam[m]].launches++;
            s->cov[wfam[m]].notdec[s->why[i]]++;          /* [TCF_DECODE_OK]: decoded */
            if (s->kix[i] >= 0)
                s->k[s->kix[i]].launches++, s->k[s->kix[i]].notdec[s->why[i]]++;
        }
        wk[m] = wfam[m] != 0xff ? s->kix[i] : -1;
        w[m++] = s->items[i];
    }
    s->n = keep;
    if (s->only >= 0 && id != s->only) {
        free(w), free(wfam), free(wk);
        return;
    }
    s->found = 1;
    s->windows++, s->launches += (int64_t)launches, s->decoded += (int64_t)ops;
    for (size_t i = 0; i <= TCF_DECODE_NSTATUS; i++) s->notdec[i] += notdec[i];
    if (!s->quiet) {
        printf("window %" PRId64 ": %" PRIu64 " launches, %" PRIu64 " ops decoded, %zu items\n",
               id, launches, ops, m);
        print_counts("  not decoded: ", notdec, TCF_DECODE_NSTATUS + 1, decode_name);
    }
    if (s->time_reps > 0 && launches) {   /* before the plan the lines below print */
        uint64_t t0 = tcf_now_ns();
        for (long r = 0; r < s->time_reps; r++)
            tcf_fuser_plan(w, m, &s->plan);
        double ns = (double)(tcf_now_ns() - t0) / (double)s->time_reps;
        s->plan_ns += ns, s->timed++, s->timed_launches += (int64_t)launches;
        if (ns > s->plan_max_ns)
            s->plan_max_ns = ns, s->plan_max_win = id;
        if (!s->quiet)
            printf("  planning: %.1f us (mean of %ld)\n", ns / 1e3, s->time_reps);
    }
    if (tcf_fuser_plan(w, m, &s->plan) < 0) {
        if (!s->quiet) printf("  not planned: over %d items\n", TCF_FUSER_MAX_ITEMS);
        free(w), free(wfam), free(wk);
        return;
    }
    for (unsigned g = 0; s->time_reps > 0 && g < s->plan.ngroups; g++) {
        /* each group bound again to this window, as full mode re-binds one whose
         * launches are new to its memo (tcf_fuser_bind) */
        tcf_fused_args_t args;
        uint64_t t0 = tcf_now_ns();
        for (long r = 0; r < s->time_reps; r++)
            tcf_fuser_bind(&s->plan.groups[g], w, m, &args);
        s->bind_ns += (double)(tcf_now_ns() - t0) / (double)s->time_reps;
        s->bound++;
    }
    uint64_t unfused[TCF_FUSER_NREASON];
    for (unsigned r = 0; r < TCF_FUSER_NREASON; r++)
        s->unfused[r] += unfused[r] = s->plan.reasons[r];
    for (size_t i = 0; i < m; i++) {
        if (wfam[i] != 0xff && s->plan.item_group[i] >= 0) s->cov[wfam[i]].fused++;
        if (wk[i] < 0 || (w[i].kind != TCF_ITEM_OP && w[i].kind != TCF_ITEM_REDUCE))
            continue;
        if (s->plan.item_group[i] >= 0)
            s->k[wk[i]].fused++;
        else if (s->plan.item_why[i] < TCF_FUSER_NREASON)
            s->k[wk[i]].unfused[s->plan.item_why[i]]++;
    }
    for (unsigned gi = 0; gi < s->plan.ngroups; gi++) {
        const tcf_fgroup_t *g = &s->plan.groups[gi];
        fused += g->nitems, s->dropped += g->stores_dropped, s->avoided += g->bytes_avoided;
        if (!s->quiet) print_group(s, gi, g, w);
    }
    s->groups += s->plan.ngroups, s->fused += (int64_t)fused;
    if (!s->quiet) {
        printf("  fused: %" PRIu64 " of %" PRIu64 " ops in %u group%s\n", fused, ops,
               s->plan.ngroups, s->plan.ngroups == 1 ? "" : "s");
        print_counts("  not fused: ", unfused, TCF_FUSER_NREASON, fuser_name);
        for (size_t i = 0; i < m; i++)
            if ((w[i].kind == TCF_ITEM_OP || w[i].kind == TCF_ITEM_REDUCE) && s->plan.item_group[i] < 0)
                print_alone(i, &w[i], s->plan.item_why[i]);
    }
    free(w), free(wfam), free(wk);
}

/* The coverage table: per kernel family, launches, how many decode into ops and how many
 * of those a plan fuses, and why the rest were not decoded. Families with launches only,
 * most launches first (ties by name). */
static void print_families(const tcf_plan_state_t *s)
{
    int done[TCF_FAM_COUNT] = { 0 };
    printf("coverage by kernel family\n");
    printf("  %-20s %9s %8s %8s  %s\n", "family", "launches", "decoded", "fused", "not decoded");
    for (;;) {
        int best = -1;
        for (int f = 0; f < TCF_FAM_COUNT; f++)
            if (!done[f] && s->cov[f].launches &&
                (best < 0 || s->cov[f].launches > s->cov[best].launches ||
                 (s->cov[f].launches == s->cov[best].launches &&
                  strcmp(tcf_family_name((tcf_family_t)f), tcf_family_name((tcf_family_t)best)) < 0)))
                best = f;
        if (best < 0) break;
        done[best] = 1;
        uint64_t why[TCF_DECODE_NSTATUS + 1];
        memcpy(why, s->cov[best].notdec, sizeof why);
        uint64_t dec = why[TCF_DECODE_OK];
        why[TCF_DECODE_OK] = 0;
        printf("  %-20s %9" PRIu64 " %8" PRIu64 " %8" PRIu64,
               tcf_family_name((tcf_family_t)best), s->cov[best].launches, dec, s->cov[best].fused);
        if (dec == s->cov[best].launches)
            printf("\n");
        else
            print_counts("  ", why, TCF_DECODE_NSTATUS + 1, decode_name);
    }
}

/* The kernels whose launches were left as issued, most such launches first (ties by
 * name), s->top of them: each with its launches, how many decoded and fused,
 * and the reason most of the rest were left under (not decoded, or decoded and not fused;
 * "not-planned" for a window over the planner's size). What to teach tcfuse next. */
static void print_kernels(const tcf_plan_state_t *s)
{
    uint8_t *done = calloc(s->nk ? s->nk : 1, 1);
    size_t shown = 0;
    if (!done) return;
    for (; shown < s->top; shown++) {
        size_t best = s->nk;
        for (size_t i = 0; i < s->nk; i++) {
            uint64_t left = s->k[i].launches - s->k[i].fused;
            if (done[i] || !left) continue;
            uint64_t bl = best < s->nk ? s->k[best].launches - s->k[best].fused : 0;
            if (best == s->nk || left > bl || (left == bl && strcmp(s->k[i].name, s->k[best].name) < 0))
                best = i;
        }
        if (best == s->nk) break;
        done[best] = 1;
        const tcf_plan_kernel_t *k = &s->k[best];
        const char *why = "not-planned";
        uint64_t most = 0, accounted = 0;
        for (size_t r = 0; r <= TCF_DECODE_NSTATUS; r++) {
            if (r == TCF_DECODE_OK) continue;
            accounted += k->notdec[r];
            if (k->notdec[r] > most) most = k->notdec[r], why = decode_name(r);
        }
        for (size_t r = 0; r < TCF_FUSER_NREASON; r++) {
            accounted += k->unfused[r];
            if (k->unfused[r] > most) most = k->unfused[r], why = fuser_name(r);
        }
        if (k->launches - k->fused - accounted > most) why = "not-planned";
        char label[160];
        if (!shown) {
            printf("kernels left as issued (most such launches first)\n");
            printf("  %6s %9s %8s %8s  %-18s %s\n", "left", "launches", "decoded", "fused",
                   "most left by", "kernel");
        }
        printf("  %6" PRIu64 " %9" PRIu64 " %8" PRIu64 " %8" PRIu64 "  %-18s %s\n",
               k->launches - k->fused, k->launches, k->notdec[TCF_DECODE_OK], k->fused, why,
               tcf_tool_demangle(k->name, label, sizeof label));
    }
    free(done);
}

static void on_event(tcf_plan_state_t *s, const tcf_trace_event_t *ev)
{
    tcf_item_t it = { .kind = TCF_ITEM_OPAQUE };
    uint8_t why = 0xff, fam = TCF_FAM_OTHER;
    int32_t kix = -1;
    int64_t win;
    int created;
    if (ev->ev == TCF_TRACE_EV_KERNEL) {
        const tcf_trace_kernel_t *k = &ev->u.kernel;
        size_t *slot = tcf_tool_map_u64(&s->kmap, (uint64_t)k->id, &created);
        if (!created) return;   /* written once per handle; keep the first */
        *slot = s->nk;
        tcf_tool_grow((void **)&s->k, &s->capk, s->nk + 1, sizeof *s->k);
        tcf_plan_kernel_t *pk = memset(&s->k[s->nk++], 0, sizeof *s->k);
        pk->name = tcf_tool_strdup(k->name);
        pk->np = (uint32_t)k->nparams;
        pk->off = tcf_tool_realloc(NULL, (k->nparams + 1) * sizeof *pk->off);
        pk->sz = tcf_tool_realloc(NULL, (k->nparams + 1) * sizeof *pk->sz);
        for (size_t i = 0; i < k->nparams; i++)
            pk->off[i] = k->params[i].offset, pk->sz[i] = k->params[i].size;
        return;
    }
    if (ev->ev == TCF_TRACE_EV_WINDOW) {
        on_window(s, ev->u.window.id);
        return;
    }
    if (ev->ev == TCF_TRACE_EV_LAUNCH) {
        const tcf_trace_launch_t *l = &ev->u.launch;
        size_t *ki = tcf_tool_map_get_u64(&s->kmap, (uint64_t)l->k);
        win = l->win;
        why = TCF_PLAN_NOKERNEL;
        fam = TCF_FAM_OTHER;
        if (ki) {
            const tcf_plan_kernel_t *k = &s->k[*ki];
            kix = (int32_t)*ki;
            fam = (uint8_t)tcf_kernel_family(k->name);
            tcf_decode_launch_t d = { k->name, k->np, k->off, k->sz, l->params,
                                      (uint32_t)l->params_len,
                                      { l->grid[0], l->grid[1], l->grid[2] },
                                      { l->block[0], l->block[1], l->block[2] } };
            why = (uint8_t)tcf_decode_launch(&d, &it.op);
            if (why == TCF_DECODE_OK) it.kind = TCF_ITEM_OP;
            if (why == TCF_DECODE_REDUCTION) {   /* decoded as a row reduction, or why not */
                tcf_reduce_t r;
                why = (uint8_t)tcf_decode_reduce(&d, &r);
                if (why == TCF_DECODE_OK) it.kind = TCF_ITEM_REDUCE, it.red = r;
            }
        }
    } else if (ev->ev == TCF_TRACE_EV_ALLOC || ev->ev == TCF_TRACE_EV_FREE) {
        it.kind = ev->ev == TCF_TRACE_EV_ALLOC ? TCF_ITEM_ALLOC : TCF_ITEM_FREE;
        it.ptr = ev->u.mem.ptr, it.size = ev->u.mem.size;
        win = ev->u.mem.win;
    } else if (ev->ev == TCF_TRACE_EV_MEMSET || ev->ev == TCF_TRACE_EV_MEMCPY) {
        win = ev->u.mem.win;   /* device work the planner cannot see into: opaque */
    } else {
        return;
    }
    if (win < 0) return;       /* not stream-ordered: in no window */
    tcf_tool_grow((void **)&s->items, &s->cap, s->n + 1, sizeof *s->items);
    s->win = tcf_tool_realloc(s->win, s->cap * sizeof *s->win);
    s->why = tcf_tool_realloc(s->why, s->cap * sizeof *s->why);
    s->fam = tcf_tool_realloc(s->fam, s->cap * sizeof *s->fam);
    s->kix = tcf_tool_realloc(s->kix, s->cap * sizeof *s->kix);
    s->items[s->n] = it, s->win[s->n] = win, s->fam[s->n] = fam, s->kix[s->n] = kix;
    s->why[s->n++] = why;
}

static int run_plan(tcf_plan_state_t *s, const char *path)
{
    tcf_trace_event_t ev;
    tcf_trace_reader_t *r = tcf_trace_read_open(path);
    int rc;
    if (!r) {
        fprintf(stderr, "tcfuse %s: %s: %s\n", s->cmd, path, strerror(errno));
        return TCF_EXIT_FAIL;
    }
    int headed = 0;  /* at the first event: nothing on stdout for a file that is no trace */
    while ((rc = tcf_trace_read_next(r, &ev)) == 1) {
        if (!headed++ && !s->quiet) printf("trace %s\n", path);
        on_event(s, &ev);
    }
    tcf_trace_stats_t st = tcf_trace_read_stats(r);
    tcf_trace_read_close(r);
    if (rc < 0) {
        fprintf(stderr, "tcfuse %s: %s: %s\n", s->cmd, path, strerror(errno));
        return TCF_EXIT_FAIL;
    }
    if (st.events == 0) {  /* as `tcfuse report` says it */
        fprintf(stderr, "tcfuse %s: %s: not a tcfuse trace (no event in %zu lines)\n", s->cmd,
                path, st.lines);
        return TCF_EXIT_FAIL;
    }
    if (st.malformed && !s->quiet)
        fprintf(stderr, "tcfuse plan: %s: %zu malformed lines skipped\n", path, st.malformed);
    if (s->only >= 0 && !s->found) {
        fprintf(stderr, "tcfuse plan: %s: no window %" PRId64 "\n", path, s->only);
        return TCF_EXIT_FAIL;
    }
    print_families(s);
    print_kernels(s);
    if (s->quiet) return TCF_EXIT_OK;
    printf("summary: %" PRId64 " windows, %" PRId64 " launches, %" PRId64 " decoded, %" PRId64
           " fused, %" PRId64 " groups, %" PRId64 " stores dropped, %" PRIu64 " bytes avoided\n",
           s->windows, s->launches, s->decoded, s->fused, s->groups, s->dropped, s->avoided);
    print_counts("  not decoded: ", s->notdec, TCF_DECODE_NSTATUS + 1, decode_name);
    print_counts("  not fused: ", s->unfused, TCF_FUSER_NREASON, fuser_name);
    if (s->timed)
        printf("planning: %" PRId64 " windows of %" PRId64 " launches, %.1f us a window, "
               "%.0f ns a launch; the longest %.1f us (window %" PRId64 ")\n", s->timed,
               s->timed_launches, s->plan_ns / 1e3 / (double)s->timed,
               s->plan_ns / (double)(s->timed_launches ? s->timed_launches : 1),
               s->plan_max_ns / 1e3, s->plan_max_win);
    if (s->bound)
        printf("binding: %" PRId64 " groups, %.2f us a group\n", s->bound,
               s->bind_ns / 1e3 / (double)s->bound);
    return s->failed ? TCF_EXIT_FAIL : TCF_EXIT_OK;
}

static tcf_plan_state_t *plan_new(const char *cmd)
{
    tcf_plan_state_t *s = memset(tcf_tool_realloc(NULL, sizeof *s), 0, sizeof *s);
    s->cmd = cmd, s->only = -1, s->top = TCF_PLAN_TOP_KERNELS;
    return s;
}

static void plan_free(tcf_plan_state_t *s)
{
    for (size_t i = 0; i < s->nk; i++) free(s->k[i].name), free(s->k[i].off), free(s->k[i].sz);
    free(s->k), free(s->items), free(s->win), free(s->why), free(s->fam), free(s->kix);
    tcf_tool_map_free(&s->kmap);
    free(s);
}

/* For `tcfuse report`: the coverage tables of the trace at path (top kernels left), nothing
 * else. */
int tcf_tool_coverage(const char *path, size_t top)
{
    tcf_plan_state_t *s = plan_new("report");
    s->quiet = 1, s->top = top;
    int rc = run_plan(s, path);
    plan_free(s);
    return rc;
}

int tcf_tool_plan(int argc, char **argv)
{
    static const struct option opts[] = {
        { "compile", no_argument, NULL, 'c' }, { "window", required_argument, NULL, 'w' },
        { "time", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    tcf_plan_state_t *s;
    char err[512];
    int c, rc, compile = 0;
    long long only = -1, reps = 0;

    optind = 1, opterr = 0;
    while ((c = getopt_long(argc, argv, "cw:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': compile = 1; break;
        case 'w':
            if (tcf_tool_int(optarg, 0, INT64_MAX, &only) != 0)
                return tcf_tool_bad_usage("plan", "--window wants a window id, not '%s'", optarg);
            break;
        case 't':
            if (tcf_tool_int(optarg, 1, 1000000, &reps) != 0)
                return tcf_tool_bad_usage("plan", "--time wants a count from 1 to 1000000, "
                                          "not '%s'", optarg);
            break;
        case 'h': tcf_tool_help_plan(stdout); return TCF_EXIT_OK;
        default:
            return tcf_tool_bad_usage("plan", "%s option '%s'",
                                      optopt == 'w' || optopt == 't' ? "missing value for"
                                                                     : "unknown",
                                      argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return tcf_tool_bad_usage("plan", "%s", optind >= argc ? "no trace file given"
                                                               : "one trace file at a time");
    if (compile && tcf_nvrtc_open(getenv("TCFUSE_NVRTC"), err, sizeof err) != 0) {
        fprintf(stderr, "tcfuse plan: --compile: NVRTC unavailable: %s\n", err);
        return TCF_EXIT_FAIL;
    }
    s = plan_new("plan");
    s->compile = compile, s->only = only, s->time_reps = (long)reps;
    if (s->compile) printf("nvrtc %s, sm_%d\n", tcf_nvrtc_version(), TCF_PLAN_ARCH);
    rc = run_plan(s, argv[optind]);
    plan_free(s);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tcfuse plan: write failed\n");
        return TCF_EXIT_FAIL;
    }
    return rc;
}
