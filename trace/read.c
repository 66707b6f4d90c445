/* trace_read: the trace reader (trace_read.h). A line is parsed in two steps: the lexer
 * notes where each field the format names sits in the line (every other field is skipped
 * whole), then the event's fields are decoded from those spans. Decoding runs twice,
 * first only counting the scratch bytes it needs, then writing them, so the scratch
 * buffer grows at most once per line and never moves under a pointer already handed out. */
#include "trace/read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/json.h"

#define TCF_TRACE_FIELDS(X) \
    X(tcfuse_trace) X(version) X(pid) X(mode) X(argv0) X(ev) X(id) X(name) X(handle) \
    X(kind) X(params) X(t) X(win) X(k) X(via) X(grid) X(block) X(smem) X(stream) X(rc) \
    X(call) X(ptr) X(size) X(value) X(elem) X(count) X(dst) X(src) X(ctx) X(launches) \
    X(ops) X(key) X(reason) X(bt) X(windows) X(dropped) X(replayed) X(patched)

enum {
#define TCF_TRACE_F(n) F_##n,
    TCF_TRACE_FIELDS(TCF_TRACE_F)
#undef TCF_TRACE_F
    F__COUNT
};
static const char *const field_names[F__COUNT] = {
#define TCF_TRACE_F(n) #n,
    TCF_TRACE_FIELDS(TCF_TRACE_F)
#undef TCF_TRACE_F
};
static const char *const ev_names[TCF_TRACE_EV__COUNT] = {
    "unknown", "header", "kernel", "launch", "alloc", "free", "memset", "memcpy",
    "window", "end",
};

struct tcf_trace_reader {
    FILE *f;                /* file input, or NULL */
    int own_f;
    const char *pos, *end;  /* memory input */
    char *line;             /* file input: the current line */
    size_t line_cap;
    unsigned char *scratch; /* decoded strings and arrays of the last event */
    size_t scratch_cap;
    tcf_trace_stats_t st;
};

const char *tcf_trace_ev_name(tcf_trace_ev_t ev)
{
    return ((unsigned)ev < TCF_TRACE_EV__COUNT) ? ev_names[ev] : "unknown";
}

/* Known keys are plain ASCII; a key written with escapes is decoded to compare. */
static int field_lookup(const tcf_json_val_t *k)
{
    char buf[32];
    const char *s = "";
    tcf_json_arena_t a = { (unsigned char *)buf, 0 };
    size_t n, i;
    if (memchr(k->p, '\\', (size_t)(k->e - k->p))) {
        tcf_json_arena_t count = { NULL, 0 };
        if (tcf_trace_json_str(k, &count, &s) < 0 || count.used > sizeof buf) return -1;
        tcf_trace_json_str(k, &a, &s);
        n = a.used - 1;
    } else {
        s = k->p, n = (size_t)(k->e - k->p);
    }
    for (i = 0; i < F__COUNT; i++)
        if (strlen(field_names[i]) == n && memcmp(field_names[i], s, n) == 0) return (int)i;
    return -1;
}

/* One flat object; the spans of known fields go to f[] (a repeated key: the last wins). */
static int parse_object(const char *p, const char *end, tcf_json_val_t f[F__COUNT])
{
    p = tcf_trace_json_ws(p, end);
    if (p >= end || *p++ != '{') return -1;
    p = tcf_trace_json_ws(p, end);
    if (p < end && *p == '}') p++;
    else for (;;) {
        tcf_json_val_t k, v;
        int i;
        if (p >= end || *p != '"' || tcf_trace_json_scan_value(&p, end, &k) < 0) return -1;
        p = tcf_trace_json_ws(p, end);
        if (p >= end || *p++ != ':') return -1;
        p = tcf_trace_json_ws(p, end);
        if (tcf_trace_json_scan_value(&p, end, &v) < 0) return -1;
        if ((i = field_lookup(&k)) >= 0) f[i] = v;
        p = tcf_trace_json_ws(p, end);
        if (p < end && *p == ',') { p = tcf_trace_json_ws(p + 1, end); continue; }
        if (p < end && *p == '}') { p++; break; }
        return -1;
    }
    return tcf_trace_json_ws(p, end) == end ? 0 : -1;
}

static tcf_trace_ev_t ev_kind(const tcf_json_val_t f[F__COUNT])
{
    size_t i, n;
    if (f[F_ev].type == TCF_JSON_NONE) /* the header is the one line without "ev" */
        return f[F_tcfuse_trace].type != TCF_JSON_NONE ? TCF_TRACE_EV_HEADER : TCF_TRACE_EV__COUNT;
    if (f[F_ev].type != TCF_JSON_STR) return TCF_TRACE_EV__COUNT;
    n = (size_t)(f[F_ev].e - f[F_ev].p);
    for (i = TCF_TRACE_EV_KERNEL; i < TCF_TRACE_EV__COUNT; i++)
        if (strlen(ev_names[i]) == n && memcmp(ev_names[i], f[F_ev].p, n) == 0)
            return (tcf_trace_ev_t)i;
    return TCF_TRACE_EV_UNKNOWN;
}

#define INT(fld, dst)  (tcf_trace_json_int(&f[F_##fld], (dst)) < 0)
#define UINT(fld, dst) (tcf_trace_json_uint(&f[F_##fld], (dst)) < 0)
#define HEX(fld, dst)  (tcf_trace_json_hex(&f[F_##fld], (dst)) < 0)
#define STR(fld, dst)  (tcf_trace_json_str(&f[F_##fld], a, (dst)) < 0)
#define HAS(fld)       (f[F_##fld].type != TCF_JSON_NONE)

/* Fills ev (already zeroed, strings "") from the spans; -1 when a field is malformed or
 * one the event cannot do without (the ids that tie events together) is missing. */
static int build(const tcf_json_val_t f[F__COUNT], tcf_json_arena_t *a, tcf_trace_event_t *ev)
{
    switch (ev->ev) {
    case TCF_TRACE_EV_HEADER: {
        tcf_trace_header_t *h = &ev->u.header;
        h->version = h->mode = h->argv0 = "";
        return (INT(tcfuse_trace, &h->format) || STR(version, &h->version) ||
                INT(pid, &h->pid) || STR(mode, &h->mode) || STR(argv0, &h->argv0)) ? -1 : 0;
    }
    case TCF_TRACE_EV_KERNEL: {
        tcf_trace_kernel_t *k = &ev->u.kernel;
        k->name = k->kind = "";
        return (!HAS(id) || INT(id, &k->id) || STR(name, &k->name) || HEX(handle, &k->handle) ||
                STR(kind, &k->kind) ||
                tcf_trace_json_pairs(&f[F_params], a, &k->params, &k->nparams) < 0) ? -1 : 0;
    }
    case TCF_TRACE_EV_LAUNCH: {
        tcf_trace_launch_t *l = &ev->u.launch;
        l->via = "", l->win = -1;
        return (!HAS(k) || INT(t, &l->t) || INT(win, &l->win) || INT(k, &l->k) ||
                STR(via, &l->via) || tcf_trace_json_u32s(&f[F_grid], l->grid, 3) < 0 ||
                tcf_trace_json_u32s(&f[F_block], l->block, 3) < 0 || INT(smem, &l->smem) ||
                HEX(stream, &l->stream) || INT(rc, &l->rc) ||
                tcf_trace_json_bytes(&f[F_params], a, &l->params, &l->params_len) < 0) ? -1 : 0;
    }
    case TCF_TRACE_EV_ALLOC: case TCF_TRACE_EV_FREE:
    case TCF_TRACE_EV_MEMSET: case TCF_TRACE_EV_MEMCPY: {
        tcf_trace_mem_t *m = &ev->u.mem;
        m->call = "", m->win = -1;
        return (INT(t, &m->t) || INT(win, &m->win) || STR(call, &m->call) || HEX(ptr, &m->ptr) ||
                HEX(dst, &m->ptr) || HEX(src, &m->src) || UINT(size, &m->size) ||
                INT(value, &m->value) || INT(elem, &m->elem) || INT(count, &m->count) ||
                HEX(stream, &m->stream) || INT(rc, &m->rc)) ? -1 : 0;
    }
    case TCF_TRACE_EV_WINDOW: {
        tcf_trace_window_t *w = &ev->u.window;
        w->reason = "";
        w->replayed = w->patched = 0;
        return (!HAS(id) || INT(t, &w->t) || INT(id, &w->id) || HEX(ctx, &w->ctx) ||
                HEX(stream, &w->stream) || INT(launches, &w->launches) || INT(ops, &w->ops) ||
                HEX(key, &w->key) || STR(reason, &w->reason) || INT(replayed, &w->replayed) ||
                INT(patched, &w->patched) ||
                tcf_trace_json_strs(&f[F_bt], a, &w->bt, &w->nbt) < 0) ? -1 : 0;
    }
    case TCF_TRACE_EV_END: {
        tcf_trace_end_t *e = &ev->u.end;
        return (INT(t, &e->t) || INT(launches, &e->launches) || INT(windows, &e->windows) ||
                INT(dropped, &e->dropped)) ? -1 : 0;
    }
    default: return 0;
    }
}
#undef INT
#undef UINT
#undef HEX
#undef STR
#undef HAS

int tcf_trace_read_line(tcf_trace_reader_t *r, const char *line, size_t len,
                        tcf_trace_event_t *ev)
{
    tcf_json_val_t f[F__COUNT];
    tcf_json_arena_t a = { NULL, 0 };
    tcf_trace_ev_t kind;

    memset(f, 0, sizeof f);
    if (!line || len > TCF_TRACE_LINE_MAX || parse_object(line, line + len, f) < 0 ||
        (kind = ev_kind(f)) == TCF_TRACE_EV__COUNT)
        return -1;
    memset(ev, 0, sizeof *ev);
    ev->ev = kind;
    if (build(f, &a, ev) < 0) return -1; /* the counting pass */
    if (a.used > r->scratch_cap) {
        size_t cap = r->scratch_cap * 2 > a.used ? r->scratch_cap * 2 : a.used;
        unsigned char *s = realloc(r->scratch, cap);
        if (!s) return -1;
        r->scratch = s, r->scratch_cap = cap;
    }
    memset(ev, 0, sizeof *ev);
    ev->ev = kind;
    a.base = r->scratch, a.used = 0;
    return build(f, &a, ev);
}

/* The next line without its newline. A line over the cap is consumed and reported with
 * *len past the cap, so the caller counts it malformed. 1: a line, 0: end, -1: error. */
static int next_line(tcf_trace_reader_t *r, const char **line, size_t *len)
{
    size_t n = 0, seen = 0;
    int c;
    if (!r->f) {
        const char *nl;
        if (!r->pos || r->pos >= r->end) return 0;
        nl = memchr(r->pos, '\n', (size_t)(r->end - r->pos));
        *line = r->pos, *len = (size_t)((nl ? nl : r->end) - r->pos);
        r->pos = nl ? nl + 1 : r->end;
        return 1;
    }
    while ((c = getc_unlocked(r->f)) != EOF && c != '\n') {
        if (seen++ >= TCF_TRACE_LINE_MAX) continue;
        if (n == r->line_cap) {
            size_t cap = r->line_cap ? r->line_cap * 2 : 4096;
            char *l = realloc(r->line, cap);
            if (!l) return -1;
            r->line = l, r->line_cap = cap;
        }
        r->line[n++] = (char)c;
    }
    if (c == EOF && ferror(r->f)) return -1;
    if (c == EOF && seen == 0) return 0;
    *line = r->line ? r->line : "", *len = seen; /* an empty first line: nothing allocated */
    return 1;
}

int tcf_trace_read_next(tcf_trace_reader_t *r, tcf_trace_event_t *ev)
{
    const char *line = NULL;
    size_t len = 0;
    int rc;
    while ((rc = next_line(r, &line, &len)) == 1) {
        r->st.lines++;
        if (len <= TCF_TRACE_LINE_MAX && tcf_trace_json_ws(line, line + len) == line + len)
            continue; /* blank */
        if (tcf_trace_read_line(r, line, len, ev) < 0) r->st.malformed++;
        else if (ev->ev == TCF_TRACE_EV_UNKNOWN) r->st.unknown++;
        else { r->st.events++; ev->line = r->st.lines; return 1; }
    }
    return rc;
}

static tcf_trace_reader_t *reader_new(void)
{
    return calloc(1, sizeof(tcf_trace_reader_t));
}

tcf_trace_reader_t *tcf_trace_read_open(const char *path)
{
    tcf_trace_reader_t *r;
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
    if (!f) return NULL;
    if (!(r = reader_new())) {
        if (f != stdin) fclose(f);
        errno = ENOMEM;
        return NULL;
    }
    r->f = f, r->own_f = (f != stdin);
    return r;
}

tcf_trace_reader_t *tcf_trace_read_mem(const char *buf, size_t len)
{
    tcf_trace_reader_t *r = reader_new();
    if (r) r->pos = buf, r->end = buf ? buf + len : NULL;
    return r;
}

tcf_trace_stats_t tcf_trace_read_stats(const tcf_trace_reader_t *r)
{
    return r->st;
}

void tcf_trace_read_close(tcf_trace_reader_t *r)
{
    if (!r) return;
    if (r->own_f) fclose(r->f);
    free(r->line);
    free(r->scratch);
    free(r);
}
