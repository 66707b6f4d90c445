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
#include "capture/count.h"
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

/* An event's dec: a decoded launch (OP, REDUCE: the window's ops hold it); a launch or
 * memset exec issued ahead of the decoded work before it, shown to touch none of its bytes
 * (AHEAD: exec/ahead.c); a held free kept from hand-over until the flush (KEEP). */
enum { TCF_DEC_OP = 1, TCF_DEC_REDUCE = 2, TCF_DEC_AHEAD = 3, TCF_DEC_KEEP = 4 };

typedef struct {
    uint8_t  kind, via;
    uint8_t  held;            /* exec: not issued yet */
    uint8_t  dec;             /* exec's mark (TCF_DEC_*; 0: none) */
    int32_t  rc;
    uint64_t t;
    uint64_t stream;
    union {
        /* nattr launch attributes (cuLaunchKernelEx) follow the parameter bytes in the
         * arena, at poff + pbytes rounded up to 8 (tcf_event_attrs). */
        struct { tcf_kernel_t *k; uint32_t grid[3], block[3], smem, pbytes, poff, nattr; } l;
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
    uint32_t         nfree;            /* of nheld, frees whose block's size is known (an
                                        * allocation of that size may take the block) */
    uint32_t         ndec;             /* decoded launches since exec_from, held or not */
    uint64_t         hold_site;        /* where the held work was held from (exec/sites.c);
                                        * 0: none, or no policy */
    /* The last launch counted and not recorded (tcf_window_pass_launch): its kernel's id,
     * and nev + 1 when it came (0: none since the window opened). Written outside the lock. */
    uint32_t         pass_kid, pass_at;
    /* replay (graph mode; replay/ owns these, capture never resets them) */
    uint64_t         rseed, rh;        /* the key's seed at the window's first launch, and
                                        * the key so far while holding */
    uint64_t         repoch;           /* boundaries seen when the last window started */
    uint32_t         rord;             /* windows cut on this stream since its last boundary */
    uint8_t          rstate;           /* holding, passing, or deciding at the next launch */
    uint8_t          rcut;             /* the next launch starts a new window */
    uint8_t          rprev_graph;      /* the last window ran as a graph */
    uint8_t          rheld;            /* this window held something */
    void            *rprev;            /* the plan of the stream's last window (its time is
                                        * measured up to this window's first work) */
    uint64_t         rstart, rprev_start;  /* first work of this window, of the last one */
    uint32_t         rexplore;         /* windows seen: while keys are judged, about one in
                                        * two that begin as one of them runs as issued */
    uint8_t          rexpl;            /* this window is one of those */
    uint32_t         rvain;            /* held windows run as issued since the last replay */
    uint32_t         rskip, rback;     /* windows left to run as issued unheld, and the
                                        * length of the last such pause (replay/flush.c) */
    uint32_t         rnew, rlback;     /* windows learned in a row whose keys were new, and
                                        * the length of the last pause they caused */
    uint8_t          rquiet;           /* a paused window: its launches are counted, not
                                        * recorded or learned (replay/hold.c) */
    uint32_t         rqn;              /* launches of the quiet window so far */
    uint32_t         rcap;             /* this window's launch cap (0: tcf_window_cap) */
    uint32_t         rslow;            /* windows since the stream's last wait for the GPU */
    uint64_t         rsyncs;           /* the waits for the GPU counted when it began */
    uint32_t         rsince;           /* launches since the stream's last wait for the GPU */
    uint32_t         rper, rper_prev;  /* launches between its last waits, and the ones before
                                        * (slow end: replay/hold.c) */
    /* Set by the acting mode's flush when the window ran as one CUDA graph, so that the
     * trace marks it; reset when the window closes. */
    uint32_t         graph_nodes, graph_patched;
} tcf_window_t;

/* A launch as the application made it (a view: nothing is copied until it is appended). */
typedef struct {
    tcf_via_t           via;
    CUstream            stream;
    tcf_kernel_t       *k;
    unsigned            grid[3], block[3], smem;
    void              **params, **extra;
    const CUlaunchAttribute *attrs;   /* cuLaunchKernelEx's, or NULL */
    unsigned            nattrs;
} tcf_launch_t;

/* The most launch attributes a window keeps for one launch. */
#define TCF_ATTRS_MAX 8

/* The window of (current context, stream) on this thread's view: stream 0 is the legacy
 * default stream, or with ptds the thread's own. NULL when the table is full (counted). */
tcf_window_t *tcf_window_for(CUstream stream, int ptds);
/* Makes room for one event and `bytes` of parameters (w locked); returns it, its time set
 * to now, or NULL when out of memory. An idle gap closes the previous window first. */
tcf_event_t *tcf_window_append(tcf_window_t *w, uint64_t now, uint32_t bytes);
/* The time to give an event: the monotonic clock where something reads it (observe mode's
 * idle closes, the trace), else 0. A clock read is a fifth of observe's cost per launch
 * on the stand-in, and a system call where a virtual machine's clock has no vDSO path;
 * fuse, graph and full mode without a trace read nothing of it. */
uint64_t tcf_event_now(void);
/* cuMemFreeAsync(ptr, stream) held in w behind its held work (w->lock held): a held free
 * event appended with exec's mark dec (u.m.size: the block's size, 0 when unknown),
 * w->nheld (and with a size, unless dec is TCF_DEC_KEEP, w->nfree: an allocation may take
 * the block) and the free counters raised. NULL when no memory. */
tcf_event_t *tcf_window_hold_free(tcf_window_t *w, CUdeviceptr ptr, uint64_t size,
                                  CUstream stream, uint8_t dec);
/* Appends launch l to w (locked) with its parameter bytes copied (laid out by its kernel's
 * layout, or the `extra` buffer as is) and its attributes (at most TCF_ATTRS_MAX; more
 * are dropped: a caller that issues the launch later must refuse such launches first).
 * Counts the launch in w->nlaunch, and in the stats when the parameters could not be
 * copied (pbytes is then 0). Returns the event, or NULL when out of memory (counted).
 * Never closes w: the caller checks the launch cap. */
tcf_event_t *tcf_window_add_launch(tcf_window_t *w, const tcf_launch_t *l, int held,
                                   CUresult rc, uint64_t now);
/* A launch the acting mode will not act on, before it is issued (w not locked): returns 1
 * when it need not be recorded, only counted (tcf_capture_count once issued), and then
 * notes it as the stream's last launch (pass_kid); 0 when it must be recorded as usual
 * (a trace records every launch). Fuse mode's windows hold only what it may act on:
 * undecodable launches end held work and decoded chains before them, so nothing reads
 * them from the window, and their recording was most of fuse mode's cost per launch on
 * programs of kernels it cannot decode. */
int tcf_window_pass_launch(tcf_window_t *w, const tcf_kernel_t *k);
/* The `extra` form's parameter buffer (CU_LAUNCH_PARAM_BUFFER_POINTER) and its size
 * (*size 0 when not given); NULL when there is none. */
const void *tcf_launch_extra(void **extra, size_t *size);
/* Work exec issued itself with w locked, recorded in w with dec as its mark: a launch
 * (counted as tcf_capture_launch counts one) and a device memset. */
void tcf_capture_launch_marked(tcf_window_t *w, const tcf_launch_t *l, CUresult rc,
                               uint8_t dec);
void tcf_capture_memset_marked(tcf_window_t *w, const char *call, CUdeviceptr dst,
                               unsigned value, unsigned elem, size_t count, CUstream stream,
                               CUresult rc, uint8_t dec);
/* The byte count tcf_window_add_launch copies for l (0: unknown, or none). */
uint32_t tcf_launch_param_bytes(const tcf_launch_t *l);
/* The attributes kept with a launch event. */
static inline const CUlaunchAttribute *tcf_event_attrs(const tcf_window_t *w,
                                                        const tcf_event_t *e)
{
    return (const CUlaunchAttribute *)(const void *)(w->arena + e->u.l.poff +
                                                     ((e->u.l.pbytes + 7u) & ~7u));
}
/* The launch cap of windows (TCFUSE_WINDOW_MAX, or the acting mode's). */
uint32_t tcf_window_cap(void);
/* w's own cap: the acting mode's for this window (tcf_window_t.rcap), else the above. */
static inline uint32_t tcf_window_cap_of(const tcf_window_t *w)
{
    return w->rcap ? w->rcap : tcf_window_cap();
}
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
    /* The driver's own time in stream-ordered allocations and frees, timed only with
     * TCFUSE_STATS (where a host-bound program's time goes: the pool's slow path). */
    atomic_ullong alloc_timed, alloc_ns, alloc_slow, free_timed, free_ns;
} tcf_counters_t;
extern tcf_counters_t tcf_ctr;
/* An allocation the pool serves from its free blocks costs the driver about a
 * microsecond; one that maps memory goes to the kernel (ioctl) and costs tens. */
#define TCF_ALLOC_SLOW_NS 20000u

#endif
