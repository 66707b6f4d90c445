/* report_print: the text summary of `tcfuse report`. Every table is sorted with a total
 * order (count, then name), so tests can compare the output byte for byte. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/report.h"

#define TCF_REPORT_SITES 3   /* call sites shown per reason */
#define TCF_REPORT_EXAMPLE 8 /* kernels shown per example window */
#define TCF_REPORT_BAR 40    /* width of the longest histogram bar */

static int by_kernel(const void *a, const void *b)
{
    const tcf_report_kernel_t *x = *(tcf_report_kernel_t *const *)a;
    const tcf_report_kernel_t *y = *(tcf_report_kernel_t *const *)b;
    int c;
    if (x->launches != y->launches) return x->launches > y->launches ? -1 : 1;
    return (c = strcmp(x->label, y->label)) ? c : strcmp(x->name, y->name);
}

static int by_key(const void *a, const void *b)
{
    const tcf_report_key_t *x = *(tcf_report_key_t *const *)a, *y = *(tcf_report_key_t *const *)b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Sites carry their reason's rank in `reason` by the time they are sorted. */
static int by_count(const void *a, const void *b)
{
    const tcf_report_count_t *x = *(tcf_report_count_t *const *)a;
    const tcf_report_count_t *y = *(tcf_report_count_t *const *)b;
    if (x->reason != y->reason) return x->reason < y->reason ? -1 : 1;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->text, y->text);
}

static int by_value(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* An array of pointers to the n elements of arr (each `size` bytes), sorted by cmp. */
static void **sorted(void *arr, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    void **v = tcf_tool_realloc(NULL, n * sizeof *v);
    size_t i;
    for (i = 0; i < n; i++) v[i] = (char *)arr + i * size;
    qsort(v, n, sizeof *v, cmp);
    return v;
}

static double pct(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

static void print_kernels(tcf_report_t *r, FILE *f, size_t top)
{
    tcf_report_kernel_t **k =
        (tcf_report_kernel_t **)sorted(r->kern, r->nkern, sizeof *r->kern, by_kernel);
    size_t i, j;
    fprintf(f, "\ntop kernels by launches\n");
    fprintf(f, "  %9s  %6s  %s\n", "launches", "share", "kernel");
    for (i = 0; i < r->nkern && i < top && k[i]->launches > 0; i++)
        fprintf(f, "  %9" PRId64 "  %5.1f%%  %s\n", k[i]->launches,
                pct(k[i]->launches, r->launches), k[i]->label);
    for (j = i; j < r->nkern && k[j]->launches > 0; j++) {}
    if (j > i) fprintf(f, "  (%zu more kernels)\n", j - i);
    free(k);
}

/* Lengths in power-of-two buckets: 0, 1, 2-3, 4-7, ... */
static void print_windows(tcf_report_t *r, FILE *f)
{
    int64_t *v = tcf_tool_realloc(NULL, (r->nwlen ? r->nwlen : 1) * sizeof *v);
    size_t count[66] = { 0 }, i, lo = 65, hi = 0, most = 0, n = r->nwlen;
    if (n) memcpy(v, r->wlen, n * sizeof *v);
    for (i = 0; i < n; i++) v[i] = v[i] < 0 ? 0 : v[i]; /* a corrupt count reads as 0 */
    qsort(v, n, sizeof *v, by_value);
    fprintf(f, "\nwindows\n  count %zu", n);
    if (n) { /* the sum of two values <= INT64_MAX fits in a uint64_t */
        uint64_t sum = (uint64_t)v[(n - 1) / 2] + (uint64_t)v[n / 2];
        fprintf(f, ", launches per window: min %" PRId64 ", median %" PRIu64 "%s, max %" PRId64,
                v[0], sum / 2, sum % 2 ? ".5" : "", v[n - 1]);
    }
    fprintf(f, "\n");
    for (i = 0; i < n; i++) {
        size_t b = 0;
        uint64_t x = (uint64_t)v[i];
        while (x) b++, x >>= 1; /* 0 -> 0, 1 -> 1, 2..3 -> 2, ... */
        count[b]++;
        lo = b < lo ? b : lo, hi = b > hi ? b : hi;
    }
    for (i = lo; n && i <= hi; i++) most = count[i] > most ? count[i] : most;
    if (n) fprintf(f, "  %11s  %7s\n", "launches", "windows");
    for (i = lo; n && i <= hi; i++) {
        char label[48];
        size_t bar = count[i] ? (count[i] * TCF_REPORT_BAR + most - 1) / most : 0, j;
        if (i <= 1) snprintf(label, sizeof label, "%zu", i);
        else snprintf(label, sizeof label, "%llu-%llu", 1ull << (i - 1), (1ull << i) - 1);
        fprintf(f, "  %11s  %7zu  ", label, count[i]);
        for (j = 0; j < bar; j++) fputc('#', f);
        fprintf(f, "\n");
    }
    free(v);
}

/* One kernel per line under the key's row; a run of one kernel prints once, "(xN)". */
static void print_example(const tcf_report_t *r, const tcf_report_key_t *k, FILE *f)
{
    size_t i = 0, lines = 0, run;
    while (i < k->nexample && lines < TCF_REPORT_EXAMPLE) {
        for (run = 1; i + run < k->nexample && k->example[i + run] == k->example[i]; run++) {}
        fprintf(f, "%*s%s", lines++ ? 41 : 0, "", r->kern[k->example[i]].label);
        if (run > 1) fprintf(f, " (x%zu)", run);
        fprintf(f, "\n");
        i += run;
    }
    if (i < k->nexample) fprintf(f, "%41s... (%zu more launches)\n", "", k->nexample - i);
}

static void print_keys(tcf_report_t *r, FILE *f, size_t top)
{
    tcf_report_key_t **k = (tcf_report_key_t **)sorted(r->keys, r->nkeys, sizeof *r->keys, by_key);
    size_t i, rep = 0, in_rep = 0;
    for (i = 0; i < r->nkeys && k[i]->count > 1; i++) rep++, in_rep += (size_t)k[i]->count;
    fprintf(f, "\nrepeated windows\n  %zu distinct keys in %zu windows", r->nkeys, r->nwlen);
    if (rep)
        fprintf(f, "; %zu keys seen more than once cover %zu windows (%.1f%%)\n", rep, in_rep,
                pct((int64_t)in_rep, (int64_t)r->nwlen));
    else
        fprintf(f, "; no key seen twice\n");
    if (rep) fprintf(f, "  %7s  %-18s  %8s  %s\n", "windows", "key", "launches",
                     "kernels of one window");
    for (i = 0; i < rep && i < top; i++) {
        fprintf(f, "  %7" PRId64 "  0x%016" PRIx64 "  %8" PRId64 "  ", k[i]->count, k[i]->key,
                k[i]->launches);
        if (!k[i]->nexample) fprintf(f, "(no launches in the trace)\n");
        print_example(r, k[i], f);
    }
    if (rep > top) fprintf(f, "  (%zu more keys)\n", rep - top);
    free(k);
}

static void print_reasons(tcf_report_t *r, FILE *f)
{
    tcf_report_count_t **rs, **ss;
    size_t i, j, *rank = tcf_tool_realloc(NULL, (r->nreasons + 1) * sizeof *rank);
    for (i = 0; i < r->nreasons; i++) r->reasons[i].reason = 0; /* all rank 0: count, name */
    rs = (tcf_report_count_t **)sorted(r->reasons, r->nreasons, sizeof *r->reasons, by_count);
    for (i = 0; i < r->nreasons; i++) rank[rs[i] - r->reasons] = i;
    for (i = 0; i < r->nsites; i++) r->sites[i].reason = rank[r->sites[i].reason];
    ss = (tcf_report_count_t **)sorted(r->sites, r->nsites, sizeof *r->sites, by_count);

    fprintf(f, "\nboundary reasons\n  %7s  %6s  %s\n", "windows", "share", "reason");
    for (i = 0, j = 0; i < r->nreasons; i++) {
        size_t shown = 0;
        fprintf(f, "  %7" PRId64 "  %5.1f%%  %s\n", rs[i]->count,
                pct(rs[i]->count, (int64_t)r->nwlen), rs[i]->text);
        for (; j < r->nsites && ss[j]->reason == i; j++)
            if (shown++ < TCF_REPORT_SITES)
                fprintf(f, "  %7s  %6" PRId64 "  at %s\n", "", ss[j]->count,
                        strchr(ss[j]->text, '\037') + 1);
    }
    if (r->bt_windows)
        fprintf(f, "  (call sites from %" PRId64 " windows with a backtrace; top %d per reason)\n",
                r->bt_windows, TCF_REPORT_SITES);
    free(rank), free(rs), free(ss);
}

void tcf_report_print(tcf_report_t *r, const char *path, FILE *f, size_t top)
{
    fprintf(f, "trace %s\n", path);
    if (r->have_header)
        fprintf(f, "  written by tcfuse %s, pid %" PRId64 ", mode %s, argv0 %s\n", r->version,
                r->pid, r->mode, r->argv0);
    else
        fprintf(f, "  no header line\n");
    if (r->have_end) fprintf(f, "  complete, %" PRId64 " events dropped\n", r->dropped);
    else fprintf(f, "  incomplete: no end line (the process died, or is still running)\n");
    fprintf(f, "  %zu lines, %zu malformed, %zu unknown events\n", r->st.lines,
            r->st.malformed, r->st.unknown);

    fprintf(f, "\ntotals\n");
    fprintf(f, "  %-9s %9" PRId64 "\n", "launches", r->launches);
    fprintf(f, "  %-9s %9" PRId64 "  (%zu distinct names)\n", "kernels", r->kernel_lines,
            r->nkern);
    fprintf(f, "  %-9s %9" PRId64 "\n", "windows", r->windows);
    fprintf(f, "  %-9s %9" PRId64 "\n", "allocs", r->allocs);
    fprintf(f, "  %-9s %9" PRId64 "\n", "frees", r->frees);
    fprintf(f, "  %-9s %9" PRId64 "\n", "memsets", r->memsets);
    fprintf(f, "  %-9s %9" PRId64 "\n", "memcpys", r->memcpys);

    print_kernels(r, f, top);
    print_windows(r, f);
    print_keys(r, f, top);
    print_reasons(r, f);
}
