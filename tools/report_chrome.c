/* report_chrome: a trace as Chrome trace-event JSON, for Perfetto (ui.perfetto.dev) and
 * chrome://tracing. One process (the traced pid), one track per stream, in the order the
 * streams first appear. Launches, memsets and copies are instant events at their host
 * time (the trace has no GPU times); a window is a complete event from its first event
 * to its last, so the instants of a window sit inside its span. One pass: a window's
 * events come before its window line, so its span is known when the line arrives. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/report.h"

typedef struct { int64_t first, last; } span_t;

typedef struct {
    FILE *f;
    int64_t pid;
    size_t events;
    tcf_tool_map_t streams, names, spans; /* stream -> tid, kernel id -> name, win -> span */
    char **name;                          /* kernel names, by the index `names` gives */
    size_t nname, capname;
    span_t *span;
    size_t nspan, capspan;
} chrome_t;

/* JSON string: escapes quotes, backslashes and control bytes; bytes that are not valid
 * UTF-8 are written as \u00XX so the file always parses. */
static void json_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    while (*p) {
        size_t n = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0, i;
        for (i = 1; i < n; i++)
            if ((p[i] & 0xc0) != 0x80) n = 0;
        if (n > 1) { fwrite(p, 1, n, f); p += n; continue; }
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x80) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
        p++;
    }
    fputc('"', f);
}

/* Nanoseconds as exact microseconds: 1234567 -> 1234.567 (no double rounding). */
static void us_abs(FILE *f, int neg, uint64_t ns)
{
    fprintf(f, "%s%" PRIu64 ".%03" PRIu64, neg ? "-" : "", ns / 1000, ns % 1000);
}

static void us(FILE *f, int64_t ns)
{
    us_abs(f, ns < 0, ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns);
}

static void begin(chrome_t *c, const char *name, const char *cat, const char *ph, int64_t tid)
{
    fprintf(c->f, "%s\n{\"name\":", c->events++ ? "," : "");
    json_str(c->f, name);
    fprintf(c->f, ",\"cat\":\"%s\",\"ph\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64, cat, ph,
            c->pid, tid);
}

static int64_t track(chrome_t *c, uint64_t stream)
{
    int created;
    size_t *slot = tcf_tool_map_u64(&c->streams, stream, &created);
    char label[64];
    if (!created) return (int64_t)*slot;
    *slot = c->streams.len; /* tids 1, 2, ...: the order of first appearance */
    snprintf(label, sizeof label, "stream 0x%" PRIx64, stream);
    begin(c, "thread_name", "__metadata", "M", (int64_t)c->streams.len);
    fprintf(c->f, ",\"args\":{\"name\":\"%s\"}}", label);
    begin(c, "thread_sort_index", "__metadata", "M", (int64_t)c->streams.len);
    fprintf(c->f, ",\"args\":{\"sort_index\":%zu}}", c->streams.len);
    return (int64_t)c->streams.len;
}

static void widen(chrome_t *c, int64_t win, int64_t t)
{
    int created;
    size_t *slot;
    if (win < 0) return;
    slot = tcf_tool_map_u64(&c->spans, (uint64_t)win, &created);
    if (created) {
        *slot = c->nspan++;
        tcf_tool_grow((void **)&c->span, &c->capspan, c->nspan, sizeof *c->span);
        c->span[*slot].first = c->span[*slot].last = t;
    }
    if (t < c->span[*slot].first) c->span[*slot].first = t;
    if (t > c->span[*slot].last) c->span[*slot].last = t;
}

static void on_kernel(chrome_t *c, const tcf_trace_kernel_t *k)
{
    char label[512];
    int created;
    size_t *slot = tcf_tool_map_u64(&c->names, (uint64_t)k->id, &created);
    if (created) {
        *slot = c->nname++;
        tcf_tool_grow((void **)&c->name, &c->capname, c->nname, sizeof *c->name);
    } else {
        free(c->name[*slot]);
    }
    c->name[*slot] = tcf_tool_strdup(*k->name ? tcf_tool_demangle(k->name, label, sizeof label)
                                              : "(unnamed kernel)");
}

static void on_launch(chrome_t *c, const tcf_trace_launch_t *l)
{
    size_t *slot = tcf_tool_map_get_u64(&c->names, (uint64_t)l->k);
    char unknown[64];
    int64_t tid = track(c, l->stream);
    snprintf(unknown, sizeof unknown, "(kernel %" PRId64 ")", l->k);
    widen(c, l->win, l->t);
    begin(c, slot ? c->name[*slot] : unknown, "launch", "i", tid);
    fprintf(c->f, ",\"s\":\"t\",\"ts\":");
    us(c->f, l->t);
    fprintf(c->f, ",\"args\":{\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%" PRId64
            ",\"win\":%" PRId64 ",\"k\":%" PRId64 ",\"rc\":%" PRId64 ",\"via\":",
            l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->smem,
            l->win, l->k, l->rc);
    json_str(c->f, l->via);
    fprintf(c->f, "}}");
}

static void on_mem(chrome_t *c, tcf_trace_ev_t ev, const tcf_trace_mem_t *m)
{
    widen(c, m->win, m->t); /* allocs and frees count for the span, but draw nothing */
    if (ev != TCF_TRACE_EV_MEMSET && ev != TCF_TRACE_EV_MEMCPY) return;
    begin(c, *m->call ? m->call : tcf_trace_ev_name(ev), tcf_trace_ev_name(ev), "i",
          track(c, m->stream));
    fprintf(c->f, ",\"s\":\"t\",\"ts\":");
    us(c->f, m->t);
    if (ev == TCF_TRACE_EV_MEMSET)
        fprintf(c->f, ",\"args\":{\"ptr\":\"0x%" PRIx64 "\",\"elem\":%" PRId64 ",\"count\":%"
                PRId64 ",\"win\":%" PRId64 "}}", m->ptr, m->elem, m->count, m->win);
    else
        fprintf(c->f, ",\"args\":{\"dst\":\"0x%" PRIx64 "\",\"src\":\"0x%" PRIx64 "\",\"size\":%"
                PRIu64 ",\"win\":%" PRId64 "}}", m->ptr, m->src, m->size, m->win);
}

static void on_window(chrome_t *c, const tcf_trace_window_t *w)
{
    size_t *slot = tcf_tool_map_get_u64(&c->spans, (uint64_t)w->id);
    span_t s = { w->t, w->t }; /* a window with no events: a point at its close */
    char name[256];
    if (slot) s = c->span[*slot];
    if (w->replayed)
        snprintf(name, sizeof name, "window %" PRId64 " (%s; replayed as a graph, %" PRId64
                 " of %" PRId64 " nodes patched)", w->id, w->reason, w->patched, w->replayed);
    else
        snprintf(name, sizeof name, "window %" PRId64 " (%s)", w->id, w->reason);
    begin(c, name, w->replayed ? "replay" : "window", "X", track(c, w->stream));
    fprintf(c->f, ",\"ts\":");
    us(c->f, s.first);
    fprintf(c->f, ",\"dur\":");
    us_abs(c->f, 0, (uint64_t)s.last - (uint64_t)s.first); /* last >= first: no overflow */
    fprintf(c->f, ",\"args\":{\"id\":%" PRId64 ",\"key\":\"0x%016" PRIx64 "\",\"launches\":%"
            PRId64 ",\"ops\":%" PRId64 ",\"reason\":", w->id, w->key, w->launches, w->ops);
    json_str(c->f, w->reason);
    if (w->replayed)
        fprintf(c->f, ",\"replayed\":%" PRId64 ",\"patched\":%" PRId64, w->replayed, w->patched);
    fprintf(c->f, ",\"closed_us\":");
    us(c->f, w->t);
    fprintf(c->f, "}}");
}

int tcf_report_chrome(const char *trace, const char *out)
{
    tcf_trace_reader_t *rd = tcf_trace_read_open(trace);
    tcf_trace_event_t ev;
    tcf_trace_stats_t st;
    chrome_t c;
    size_t i;
    int rc, bad;

    memset(&c, 0, sizeof c);
    if (!rd) {
        fprintf(stderr, "tcfuse report: %s: %s\n", trace, strerror(errno));
        return -1;
    }
    /* Remember whether we create the output: on failure only a regular file we made is
     * removed (an output of /dev/null or an existing file is never unlinked). */
    struct stat before;
    int created = strcmp(out, "-") != 0 && lstat(out, &before) != 0;
    c.f = strcmp(out, "-") == 0 ? stdout : fopen(out, "we");
    if (!c.f) {
        fprintf(stderr, "tcfuse report: %s: %s\n", out, strerror(errno));
        tcf_trace_read_close(rd);
        return -1;
    }
    c.pid = 1; /* until a header says */
    fprintf(c.f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    while ((rc = tcf_trace_read_next(rd, &ev)) == 1) {
        switch (ev.ev) {
        case TCF_TRACE_EV_HEADER:
            if (c.events) break; /* only a first line names the process */
            c.pid = ev.u.header.pid;
            begin(&c, "process_name", "__metadata", "M", 0);
            fprintf(c.f, ",\"args\":{\"name\":");
            json_str(c.f, *ev.u.header.argv0 ? ev.u.header.argv0 : "tcfuse trace");
            fprintf(c.f, "}}");
            break;
        case TCF_TRACE_EV_KERNEL: on_kernel(&c, &ev.u.kernel); break;
        case TCF_TRACE_EV_LAUNCH: on_launch(&c, &ev.u.launch); break;
        case TCF_TRACE_EV_WINDOW: on_window(&c, &ev.u.window); break;
        case TCF_TRACE_EV_END: break;
        default: on_mem(&c, ev.ev, &ev.u.mem); break;
        }
    }
    fprintf(c.f, "\n]}\n");
    if (rc < 0) fprintf(stderr, "tcfuse report: %s: %s\n", trace, strerror(errno));
    st = tcf_trace_read_stats(rd);
    if (st.malformed)
        fprintf(stderr, "tcfuse report: %s: %zu malformed lines skipped\n", trace, st.malformed);
    bad = ferror(c.f) || (c.f != stdout ? fclose(c.f) : fflush(c.f)) != 0;
    if (bad) fprintf(stderr, "tcfuse report: %s: write failed\n", out);
    tcf_trace_read_close(rd);
    for (i = 0; i < c.nname; i++) free(c.name[i]);
    free(c.name), free(c.span);
    tcf_tool_map_free(&c.streams), tcf_tool_map_free(&c.names), tcf_tool_map_free(&c.spans);
    if (rc == 0 && !bad && st.events == 0) {
        fprintf(stderr, "tcfuse report: %s: not a tcfuse trace (no event in %zu lines)\n",
                trace, st.lines);
        struct stat after;
        if (created && stat(out, &after) == 0 && S_ISREG(after.st_mode)) unlink(out);
        rc = -1;
    }
    if (rc == 0 && !bad && strcmp(out, "-") != 0)
        printf("tcfuse report: wrote %zu events to %s\n", c.events, out);
    return (rc < 0 || bad) ? -1 : 0;
}
