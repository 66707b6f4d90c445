/* trace/read.h: a reader for tcfuse's trace format, version 1 (docs/TRACE.md).
 *
 * Conventions: pure C, no CUDA, no global state; one reader is used by one thread.
 * Each line is a flat JSON object; the reader decodes the fields the format names into
 * typed structs and skips every other field (of any JSON type, nested to a limit).
 * Hex strings ("0x7f4b...") become uint64_t; a launch's "params" hex becomes bytes.
 * A line that does not parse is counted (tcf_trace_read_stats) and skipped: input is
 * untrusted (it is fuzzed), so nothing here may crash, loop, or allocate without bound.
 *
 * Ownership: every pointer inside an event (strings, params, bt) points into the reader's
 * scratch buffer and stays valid only until the next call on that reader. Strings are
 * NUL-terminated UTF-8; an escaped \u0000 ends one early (names never contain it).
 * A field the line lacks reads as 0, "" or NULL/0-length; "win" reads as -1. Only the
 * fields that tie events together are required: a kernel's "id", a launch's "k", a
 * window's "id", and the header's "tcfuse_trace"; a field of the wrong type, a number
 * that does not fit int64_t (or uint32_t for grid and block) and bad hex are malformed.
 *
 * Names: tcf_trace_read_* (and tcf_trace_json_* inside), so they never collide with the
 * trace writer's tcf_trace_* functions in the same library.
 */
#ifndef TCF_TRACE_READ_H
#define TCF_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

/* Lines longer than this are malformed (a launch's params are at most 32 KiB, i.e. 64 Ki
 * hex digits; a backtrace a few KiB): a bound keeps a corrupt file from eating memory. */
#define TCF_TRACE_LINE_MAX (4u << 20)

typedef enum {
    TCF_TRACE_EV_UNKNOWN = 0, /* a well-formed line whose "ev" this reader does not know */
    TCF_TRACE_EV_HEADER,
    TCF_TRACE_EV_KERNEL,
    TCF_TRACE_EV_LAUNCH,
    TCF_TRACE_EV_ALLOC,
    TCF_TRACE_EV_FREE,
    TCF_TRACE_EV_MEMSET,
    TCF_TRACE_EV_MEMCPY,
    TCF_TRACE_EV_WINDOW,
    TCF_TRACE_EV_END,
    TCF_TRACE_EV__COUNT
} tcf_trace_ev_t;

typedef struct {
    int64_t     format;  /* "tcfuse_trace": 1 for this format */
    const char *version; /* tcfuse's version */
    int64_t     pid;
    const char *mode;
    const char *argv0;
} tcf_trace_header_t;

typedef struct { uint32_t offset, size; } tcf_trace_param_t;

typedef struct {
    int64_t                  id;
    const char              *name;   /* mangled; "" when the driver would not say */
    uint64_t                 handle;
    const char              *kind;   /* "kernel", "function", "unknown" */
    const tcf_trace_param_t *params; /* nparams entries */
    size_t                   nparams;
} tcf_trace_kernel_t;

typedef struct {
    int64_t        t, win, k;
    const char    *via;
    uint32_t       grid[3], block[3];
    int64_t        smem;
    uint64_t       stream;
    int64_t        rc;
    const uint8_t *params; /* params_len bytes, decoded from hex */
    size_t         params_len;
} tcf_trace_launch_t;

/* alloc, free, memset and memcpy share one shape; each uses the fields its line has:
 * alloc: ptr size; free: ptr; memset: ptr value elem count; memcpy: dst(=ptr) src size. */
typedef struct {
    int64_t     t, win;
    const char *call;
    uint64_t    ptr, src, size;
    int64_t     value, elem, count;
    uint64_t    stream;
    int64_t     rc;
} tcf_trace_mem_t;

typedef struct {
    int64_t             t, id;
    uint64_t            ctx, stream;
    int64_t             launches, ops;
    uint64_t            key;
    const char         *reason;
    const char *const  *bt;  /* nbt frames, "module+0xoff symbol"; NULL when absent */
    size_t              nbt;
    int64_t             replayed, patched;  /* graph mode: run as one graph of that many
                                             * nodes, that many patched; 0 otherwise */
} tcf_trace_window_t;

typedef struct {
    int64_t t, launches, windows, dropped;
} tcf_trace_end_t;

typedef struct {
    tcf_trace_ev_t ev;
    size_t         line; /* 1-based line number in the input */
    union {
        tcf_trace_header_t header;
        tcf_trace_kernel_t kernel;
        tcf_trace_launch_t launch;
        tcf_trace_mem_t    mem; /* alloc, free, memset, memcpy */
        tcf_trace_window_t window;
        tcf_trace_end_t    end;
    } u;
} tcf_trace_event_t;

typedef struct {
    size_t lines;     /* lines read, blank ones included */
    size_t events;    /* events returned */
    size_t malformed; /* lines that did not parse, or that were too long */
    size_t unknown;   /* well-formed lines with an "ev" this reader does not know */
} tcf_trace_stats_t;

typedef struct tcf_trace_reader tcf_trace_reader_t;

/* Opens the trace at path ("-" is stdin). Returns a reader the caller owns (free it with
 * tcf_trace_read_close), or NULL with errno set. */
tcf_trace_reader_t *tcf_trace_read_open(const char *path);

/* A reader over len bytes in memory (for tests and fuzzing). buf is borrowed, not copied:
 * it must outlive the reader. Returns NULL only when out of memory. */
tcf_trace_reader_t *tcf_trace_read_mem(const char *buf, size_t len);

/* Fills *ev with the next known event, skipping blank, malformed and unknown lines (they
 * are counted). Returns 1 for an event, 0 at the end of input, -1 on a read error
 * (errno set). */
int tcf_trace_read_next(tcf_trace_reader_t *r, tcf_trace_event_t *ev);

/* Parses one line (len bytes, no newline or NUL needed) into *ev, using r's scratch
 * buffer (r may be any reader, e.g. tcf_trace_read_mem(NULL, 0)). Returns 0 with ev->ev
 * set (TCF_TRACE_EV_UNKNOWN for an unknown "ev") and ev->line 0, or -1 when the line is
 * malformed (or scratch memory ran out), *ev then unspecified. Does not count anything. */
int tcf_trace_read_line(tcf_trace_reader_t *r, const char *line, size_t len,
                        tcf_trace_event_t *ev);

/* The reader's counters so far. */
tcf_trace_stats_t tcf_trace_read_stats(const tcf_trace_reader_t *r);

/* Closes the file (not stdin) and frees the reader. NULL is allowed. */
void tcf_trace_read_close(tcf_trace_reader_t *r);

/* The "ev" name of an event type ("launch"), "header", or "unknown". */
const char *tcf_trace_ev_name(tcf_trace_ev_t ev);

#endif
