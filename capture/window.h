/* capture/window.h: capture's windows as the layer above (exec/) sees them.
 *
 * A window is the work one (context, stream) issued since its last boundary: events in
 * order (launches with their copied parameter bytes in the window's arena, allocations,
 * frees, memsets, copies). In observe mode every event has already reached the driver.
 * exec/ also keeps work here that has not: a held event (held = 1) is issued by exec when
 * capture calls its flush (capture.h), and a decoded launch (dec = 1) carries its op in
 * ops[] for planning. exec/ owns those fields; capture only resets them when a window
 * closes.
 *
 * Locking: a window's fields are read and written under its lock (w->lock), except the
 * counters nheld and ndec, which may be read without it as a hint. Windows are never
 * freed; tcf_window_at(i) for i < tcf_window_count() is always valid.
 */
#ifndef TCF_CAPTURE_WINDOW_H
#define TCF_CAPTURE_WINDOW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "capture/capture.h"
#include "capture/key.h"
#include "codegen/op.h"
#include "recognize/recognize.h"

enum { TCF_EV_LAUNCH = 0, TCF_EV_ALLOC, TCF_EV_FREE, TCF_EV_MEMSET, TCF_EV_MEMCPY };

/* What exec keeps of a decoded launch: an elementwise op (event dec 1) or a row
 * reduction (dec 2). */
typedef union {
    tcf_op_t     op;
    tcf_reduce_t red;
} tcf_wop_t;

enum { TCF_DEC_OP = 1, TCF_DEC_REDUCE = 2 };

typedef struct {
    uint8_t  kind, via;
    uint8_t  held;            /* exec: not issued yet */
    uint8_t  dec;             /* exec: a decoded launch (TCF_DEC_*: what the window's ops
                               * hold for it) */
    int32_t  rc;
    uint64_t t;
    uint64_t stream;
    union {
        struct { tcf_kernel_t *k; uint32_t grid[3], block[3], smem, pbytes, poff; } l;
        struct { const char *call; uint64_t ptr, size; } m;
        struct { const char *call; uint64_t dst, src, value, count; uint32_t elem; } op;
    } u;
} tcf_event_t;

typedef struct tcf_window {
    uint64_t        ctx, stream, tid;  /* identity */
    pthread_mutex_t lock;
    uint64_t        id;                /* of the open window; 0 while empty */
    uint64_t        first_t, last_t;
    tcf_event_t    *ev;
    uint32_t        nev, cap_ev, nlaunch, nops;
    uint8_t        *arena;             /* parameter bytes of the window's launches */
    uint32_t        arena_len, arena_cap;
    tcf_key_scratch_t scratch;
    /* exec */
    tcf_wop_t       *ops;              /* decoded op of each decoded launch (cap_ev entries,
                                        * allocated when the mode acts) */
    uint32_t         nheld, exec_from; /* held events; first event not yet issued/planned */
    uint32_t         ndec;             /* decoded launches since exec_from, held or not */
} tcf_window_t;

/* The window of (current context, stream) on this thread's view: stream 0 is the legacy
 * default stream, or with ptds the thread's own. NULL when the table is full (counted). */
tcf_window_t *tcf_window_for(CUstream stream, int ptds);
/* Makes room for one event and `bytes` of parameters (w locked); returns it, its time set
 * to now, or NULL when out of memory. An idle gap closes the previous window first. */
tcf_event_t *tcf_window_append(tcf_window_t *w, uint64_t now, uint32_t bytes);
/* Fills every field of a launch event (events live in reused memory: a stale `held` would
 * issue a launch twice). */
void tcf_event_launch(tcf_event_t *e, tcf_via_t via, int held, CUresult rc, CUstream stream,
                      tcf_kernel_t *k, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                      unsigned by, unsigned bz, unsigned smem, uint32_t poff);
/* Closes w (locked): the acting mode's flush first when it kept work, then key, stats and
 * trace. bt: the boundary's backtrace (nbt frames), or NULL. */
void tcf_window_close_locked(tcf_window_t *w, const char *reason, char (*bt)[160], int nbt);
unsigned tcf_window_count(void);
tcf_window_t *tcf_window_at(unsigned i);

/* Counters of the stats, relaxed atomics: the layer above counts its launches and frees
 * here too, so the summary's totals include them. */
typedef struct {
    atomic_ullong launches, launch_errors, params_unknown, ops, allocs, frees,
                  frees_stream, windows, windows_launches, boundary_calls, oom;
    atomic_ullong dev_lo, dev_hi;      /* span of device memory seen allocated */
} tcf_counters_t;
extern tcf_counters_t tcf_ctr;

#endif
