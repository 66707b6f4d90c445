/* capture's private structures, shared by its files. Nothing outside capture/ includes it. */
#ifndef TCF_CAPTURE_INTERNAL_H
#define TCF_CAPTURE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "capture/capture.h"
#include "capture/decode.h"
#include "capture/key.h"
#include "config/config.h"

extern tcf_driver_t tcf_drv;

/* --- kernels (kernels.c) ------------------------------------------------------------- */
enum { TCF_KIND_UNKNOWN = 0, TCF_KIND_KERNEL, TCF_KIND_FUNCTION };

typedef struct {
    uint64_t    handle;
    uint32_t    id;           /* dense, from 1, in order of first launch */
    uint8_t     kind;
    uint32_t    nparams;      /* 0 with param_known 0: the driver would not say */
    uint8_t     param_known;
    uint32_t    param_bytes;  /* end of the last parameter */
    uint64_t    name_hash, layout_hash;
    const char *name;         /* owned; "" when unknown */
    uint32_t   *off, *size;   /* nparams each */
    atomic_int  traced;       /* its "kernel" line is in the trace */
    atomic_int  fuse_state;   /* TCF_FUSE_*: whether fuse mode may hold its launches */
    tcf_decode_kernel_t dk;   /* fuse mode: what its name and layout decode to; written once
                               * before fuse_state becomes DECODABLE (release) */
    atomic_int  verdict;      /* TCF_KV_*: its decoding checked alone (fuse_kernels.c) */
    _Atomic uint64_t code;    /* identity of the code it came from (images.c); 0 unknown */
    atomic_int  code_known;   /* code was looked up */
} tcf_kernel_t;

enum { TCF_FUSE_UNKNOWN = 0, TCF_FUSE_DECODING, TCF_FUSE_DECODABLE, TCF_FUSE_NEVER };
enum { TCF_KV_UNKNOWN = 0, TCF_KV_OK, TCF_KV_BAD };

/* The memoized identity of a handle; never NULL (a shared "unknown" entry on failure). */
tcf_kernel_t *tcf_kernel_get(CUfunction f);
uint32_t tcf_kernel_count(void);

/* --- where code came from (images.c) --------------------------------------------------- */
/* The identity recorded for a module or library handle; 0 unknown. */
uint64_t tcf_loaded_id(uint64_t handle);
/* The identity of the code kernel k came from (asked once of the driver, then kept). */
uint64_t tcf_kernel_code(tcf_kernel_t *k);

/* --- windows (window.c) -------------------------------------------------------------- */
enum { TCF_EV_LAUNCH = 0, TCF_EV_ALLOC, TCF_EV_FREE, TCF_EV_MEMSET, TCF_EV_MEMCPY };

typedef struct {
    uint8_t  kind, via;
    uint8_t  held;            /* fuse mode: not issued yet */
    uint8_t  dec;             /* fuse mode: a decoded launch (its op is in the window's ops) */
    int32_t  rc;
    uint64_t t;
    uint64_t stream;
    union {
        struct { tcf_kernel_t *k; uint32_t grid[3], block[3], smem, pbytes, poff; } l;
        struct { const char *call; uint64_t ptr, size; } m;
        struct { const char *call; uint64_t dst, src, value, count; uint32_t elem; } op;
    } u;
} tcf_event_t;

typedef struct {
    uint64_t        ctx, stream, tid;  /* identity */
    pthread_mutex_t lock;
    uint64_t        id;                /* of the open window; 0 while empty */
    uint64_t        first_t, last_t;
    tcf_event_t    *ev;
    uint32_t        nev, cap_ev, nlaunch, nops;
    uint8_t        *arena;             /* parameter bytes of the window's launches */
    uint32_t        arena_len, arena_cap;
    tcf_key_scratch_t scratch;
    /* fuse mode */
    struct tcf_op_s  *ops;             /* decoded op of each decoded launch (cap_ev entries) */
    uint32_t          nheld, exec_from;/* held events; first event not yet issued/planned */
    uint32_t          ndec;            /* decoded launches since exec_from, held or not */
} tcf_window_t;

/* Window internals shared with fuse*.c (window.c). */
tcf_window_t *tcf_window_for(CUstream stream, int ptds);
tcf_event_t *tcf_window_append(tcf_window_t *w, uint64_t now, uint32_t bytes);
void tcf_event_launch(tcf_event_t *e, tcf_via_t via, int held, CUresult rc, CUstream stream,
                      tcf_kernel_t *k, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                      unsigned by, unsigned bz, unsigned smem, uint32_t poff);
void tcf_window_close_locked(tcf_window_t *w, const char *reason, char (*bt)[160], int nbt);
unsigned tcf_window_count(void);
tcf_window_t *tcf_window_at(unsigned i);

/* --- fuse mode (fuse.c, fuse_kernels.c, fuse_verify.c) ------------------------------- */
void tcf_fuse_init(void);
void tcf_fuse_stop(void);
/* Issues the window's held work (planned: fused groups whose kernel is ready, the rest as
 * issued). The window is locked. */
void tcf_fuse_execute(tcf_window_t *w, const char *reason);
void tcf_fuse_stats_print(void);

/* --- stats (stats.c) ---------------------------------------------------------------- */
typedef struct {
    atomic_ullong launches, launch_errors, params_unknown, ops, allocs, frees,
                  frees_stream, windows, windows_launches, boundary_calls, oom;
    atomic_ullong dev_lo, dev_hi;      /* span of device memory seen allocated */
    /* fuse mode */
    atomic_ullong held, held_frees, flushes, groups_fused, launches_removed, stores_dropped,
                  bytes_avoided, fused_failed, held_failed, dropped_at_exit;
    atomic_ullong passed, holds, learned;  /* decoded but issued at once; windows held from
                                            * a known start; plans of windows not held */
    atomic_ullong no_nvrtc;                /* launches not decoded: no NVRTC was found */
} tcf_counters_t;
extern tcf_counters_t tcf_ctr;

void tcf_stats_init(void);
void tcf_stats_window(uint64_t key, uint32_t nlaunch, const char *reason);
void tcf_stats_print(void);

/* --- trace (trace.c) ----------------------------------------------------------------- */
int  tcf_trace_open(void);            /* 0 when tracing; -1 when off or failed */
int  tcf_trace_on(void);
void tcf_trace_window(const tcf_window_t *w, uint64_t key, const char *reason,
                      char (*bt)[160], int nbt);
void tcf_trace_event(const tcf_event_t *e, int64_t win);   /* not in any window */
void tcf_trace_close(void);

/* --- backtraces (backtrace.c) -------------------------------------------------------- */
/* Fills up to max frames "module+0xoff symbol" of the caller's stack, skipping tcfuse's own
 * frames; returns how many, 0 when libunwind is not there. */
int tcf_backtrace(char (*out)[160], int max);

uint64_t tcf_now_ns(void);

#endif
