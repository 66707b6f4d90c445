/* report_collect: one pass over a trace, filling tcf_report_t (report.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/report.h"

/* The kernel index for a name, created on first sight. */
static size_t kernel_index(tcf_report_t *r, const char *name)
{
    int created;
    size_t *slot = tcf_tool_map_str(&r->kern_by_name, name, &created), i;
    char label[512];
    if (!created) return *slot;
    i = *slot = r->nkern++;
    tcf_tool_grow((void **)&r->kern, &r->capkern, r->nkern, sizeof *r->kern);
    r->kern[i].name = tcf_tool_strdup(name);
    r->kern[i].label = tcf_tool_strdup(tcf_tool_demangle(name, label, sizeof label));
    r->kern[i].launches = 0;
    return i;
}

/* A kernel id's index; a launch whose kernel line is missing gets a placeholder. */
static size_t kernel_of_id(tcf_report_t *r, int64_t id, const char *name)
{
    char buf[64];
    int created;
    size_t *slot = tcf_tool_map_u64(&r->kern_by_id, (uint64_t)id, &created), i;
    if (!created && !name) return *slot;
    if (!name || !*name) {
        snprintf(buf, sizeof buf, name ? "(unnamed kernel %" PRId64 ")" : "(kernel %" PRId64 ")", id);
        name = buf;
    }
    i = kernel_index(r, name);
    *tcf_tool_map_u64(&r->kern_by_id, (uint64_t)id, &created) = i; /* the map may have grown */
    return i;
}

static size_t count_text(tcf_tool_map_t *m, tcf_report_count_t **arr, size_t *n, size_t *cap,
                         const char *text, size_t reason)
{
    int created;
    size_t *slot = tcf_tool_map_str(m, text, &created), i;
    if (created) {
        i = *slot = (*n)++;
        tcf_tool_grow((void **)arr, cap, *n, sizeof **arr);
        (*arr)[i].text = tcf_tool_strdup(text), (*arr)[i].count = 0, (*arr)[i].reason = reason;
    }
    i = *slot;
    (*arr)[i].count++;
    return i;
}

/* Frames inside tcfuse, the driver or the runtime say nothing about the application. */
const char *tcf_report_call_site(const char *const *bt, size_t nbt)
{
    static const char *const skip[] = { "libtcfuse", "libcuda.", "libcudart", "libunwind" };
    size_t i, j;
    for (i = 0; i < nbt; i++) {
        const char *f = bt[i], *slash = strrchr(f, '/'), *plus = strchr(f, '+');
        const char *base = (slash && (!plus || slash < plus)) ? slash + 1 : f;
        for (j = 0; j < sizeof skip / sizeof *skip; j++)
            if (strncmp(base, skip[j], strlen(skip[j])) == 0) break;
        if (j == sizeof skip / sizeof *skip) return f;
    }
    return nbt ? bt[0] : "";
}

static void on_window(tcf_report_t *r, const tcf_trace_window_t *w)
{
    int created;
    size_t *slot, reason;
    tcf_report_key_t *key;

    r->windows++;
    tcf_tool_grow((void **)&r->wlen, &r->capwlen, r->nwlen + 1, sizeof *r->wlen);
    r->wlen[r->nwlen++] = w->launches;

    slot = tcf_tool_map_u64(&r->key_map, w->key, &created);
    if (created) {
        *slot = r->nkeys++;
        tcf_tool_grow((void **)&r->keys, &r->capkeys, r->nkeys, sizeof *r->keys);
        memset(&r->keys[*slot], 0, sizeof *r->keys);
        r->keys[*slot].key = w->key, r->keys[*slot].launches = w->launches;
    }
    key = &r->keys[*slot];
    key->count++;
    if (!key->example && r->cur_win == w->id && r->ncur) {
        key->example = tcf_tool_realloc(NULL, r->ncur * sizeof *key->example);
        memcpy(key->example, r->cur, r->ncur * sizeof *key->example);
        key->nexample = r->ncur;
    }
    r->ncur = 0, r->cur_win = INT64_MIN;

    reason = count_text(&r->reason_map, &r->reasons, &r->nreasons, &r->capreasons,
                        w->reason, 0);
    if (w->nbt) {
        /* one map for all reasons: the key is reason, a unit separator, the site */
        const char *site = tcf_report_call_site(w->bt, w->nbt);
        size_t len = strlen(site), n;
        char *both;
        while (len && site[len - 1] == ' ') len--; /* "module+0xoff " when no symbol */
        n = strlen(w->reason) + len + 2;
        both = tcf_tool_realloc(NULL, n);
        snprintf(both, n, "%s\037%.*s", w->reason, (int)len, site);
        count_text(&r->site_map, &r->sites, &r->nsites, &r->capsites, both, reason);
        free(both);
        r->bt_windows++;
    }
}

static void on_event(tcf_report_t *r, const tcf_trace_event_t *ev)
{
    switch (ev->ev) {
    case TCF_TRACE_EV_HEADER:
        if (r->have_header) break; /* a second header: keep the first writer's */
        r->have_header = 1, r->pid = ev->u.header.pid;
        r->version = tcf_tool_strdup(ev->u.header.version);
        r->mode = tcf_tool_strdup(ev->u.header.mode);
        r->argv0 = tcf_tool_strdup(ev->u.header.argv0);
        break;
    case TCF_TRACE_EV_KERNEL:
        r->kernel_lines++;
        kernel_of_id(r, ev->u.kernel.id, ev->u.kernel.name);
        break;
    case TCF_TRACE_EV_LAUNCH: {
        size_t k = kernel_of_id(r, ev->u.launch.k, NULL);
        r->launches++;
        r->kern[k].launches++;
        if (ev->u.launch.win < 0) break;
        if (ev->u.launch.win != r->cur_win) r->ncur = 0, r->cur_win = ev->u.launch.win;
        tcf_tool_grow((void **)&r->cur, &r->capcur, r->ncur + 1, sizeof *r->cur);
        r->cur[r->ncur++] = k;
        break;
    }
    case TCF_TRACE_EV_ALLOC: r->allocs++; break;
    case TCF_TRACE_EV_FREE: r->frees++; break;
    case TCF_TRACE_EV_MEMSET: r->memsets++; break;
    case TCF_TRACE_EV_MEMCPY: r->memcpys++; break;
    case TCF_TRACE_EV_WINDOW: on_window(r, &ev->u.window); break;
    case TCF_TRACE_EV_END: r->have_end = 1, r->dropped = ev->u.end.dropped; break;
    default: break;
    }
}

int tcf_report_collect(tcf_report_t *r, const char *path)
{
    tcf_trace_reader_t *rd = tcf_trace_read_open(path);
    tcf_trace_event_t ev;
    int rc;

    memset(r, 0, sizeof *r);
    r->cur_win = INT64_MIN;
    if (!rd) {
        fprintf(stderr, "tcfuse report: %s: %s\n", path, strerror(errno));
        return -1;
    }
    while ((rc = tcf_trace_read_next(rd, &ev)) == 1) on_event(r, &ev);
    if (rc < 0) fprintf(stderr, "tcfuse report: %s: %s\n", path, strerror(errno));
    r->st = tcf_trace_read_stats(rd);
    tcf_trace_read_close(rd);
    if (rc < 0) return -1;
    if (r->st.events == 0) {
        fprintf(stderr, "tcfuse report: %s: not a tcfuse trace (no event in %zu lines)\n",
                path, r->st.lines);
        return -1;
    }
    return 0;
}

void tcf_report_free(tcf_report_t *r)
{
    size_t i;
    for (i = 0; i < r->nkern; i++) free(r->kern[i].name), free(r->kern[i].label);
    for (i = 0; i < r->nkeys; i++) free(r->keys[i].example);
    for (i = 0; i < r->nreasons; i++) free(r->reasons[i].text);
    for (i = 0; i < r->nsites; i++) free(r->sites[i].text);
    free(r->kern), free(r->wlen), free(r->keys), free(r->reasons), free(r->sites), free(r->cur);
    free(r->version), free(r->mode), free(r->argv0);
    tcf_tool_map_free(&r->kern_by_name), tcf_tool_map_free(&r->kern_by_id);
    tcf_tool_map_free(&r->key_map), tcf_tool_map_free(&r->reason_map);
    tcf_tool_map_free(&r->site_map);
}
