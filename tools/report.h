/* report: what `tcfuse report` gathers from a trace, and the passes that use it.
 * Internal to tools/report*.c.
 *
 * The trace is read once, front to back, in constant memory per event: counts go into
 * maps keyed by kernel, window key, reason and call site. A window's launches are the
 * launch lines with its id, written just before its window line (docs/TRACE.md), so only
 * the current window's launches are held, for the one example each key keeps.
 */
#ifndef TCF_REPORT_H
#define TCF_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "trace/read.h"
#include "tools/tools.h"

typedef struct {
    char *name;  /* the mangled name, or "(kernel N)" when the trace does not say */
    char *label; /* its short, readable form */
    int64_t launches;
} tcf_report_kernel_t;

typedef struct {
    uint64_t key;
    int64_t count;
    int64_t launches; /* of the first window with this key */
    size_t *example;  /* kernel indices of one window with this key (NULL: none seen) */
    size_t nexample;
} tcf_report_key_t;

/* A reason, or a (reason, call site) pair: text, count and, for a site, its reason. */
typedef struct {
    char *text;
    int64_t count;
    size_t reason;
} tcf_report_count_t;

typedef struct {
    tcf_trace_stats_t st;
    int have_header, have_end;
    int64_t pid, dropped;
    char *version, *mode, *argv0;
    int64_t launches, kernel_lines, windows, allocs, frees, memsets, memcpys, bt_windows;

    tcf_report_kernel_t *kern;
    size_t nkern, capkern;
    tcf_tool_map_t kern_by_name, kern_by_id;

    int64_t *wlen; /* launches per window, in file order */
    size_t nwlen, capwlen;

    tcf_report_key_t *keys;
    size_t nkeys, capkeys;
    tcf_tool_map_t key_map;

    tcf_report_count_t *reasons, *sites;
    size_t nreasons, capreasons, nsites, capsites;
    tcf_tool_map_t reason_map, site_map;

    size_t *cur; /* kernel indices of the window being read */
    size_t ncur, capcur;
    int64_t cur_win;
} tcf_report_t;

/* Reads the trace at path into *r (zeroed first). Returns 0, or -1 after printing why
 * (the file cannot be read, or holds no trace event). *r must be freed either way. */
int tcf_report_collect(tcf_report_t *r, const char *path);
void tcf_report_free(tcf_report_t *r);

/* Writes the text summary: sections in a fixed order, ties broken by name, so the same
 * trace always prints the same text. top: rows per table. */
void tcf_report_print(tcf_report_t *r, const char *path, FILE *f, size_t top);

/* Writes the trace at `trace` as Chrome trace-event JSON to `out` ("-": stdout).
 * Returns 0, or -1 after printing why. */
int tcf_report_chrome(const char *trace, const char *out);

/* The first frame of a backtrace that is the application's, not tcfuse's or CUDA's. */
const char *tcf_report_call_site(const char *const *bt, size_t nbt);

#endif
