/* capture's private pieces, shared by its files. Nothing outside capture/ includes it. */
#ifndef TCF_CAPTURE_INTERNAL_H
#define TCF_CAPTURE_INTERNAL_H

#include "base/base.h"
#include "base/driver.h"
#include "base/fault.h"
#include "capture/window.h"
#include "config/config.h"

/* --- stats (stats.c) ---------------------------------------------------------------- */
void tcf_stats_init(void);
void tcf_stats_window(uint64_t key, uint32_t nlaunch, const char *reason);
void tcf_stats_print(void);
int tcf_stats_idle(void);   /* nothing launched, allocated, copied or set: a short summary */
/* The summary counts window keys: TCFUSE_STATS=1 in observe mode. */
static inline int tcf_stats_keyed(void)
{
    return tcf_cfg.stats && tcf_cfg.mode == TCF_MODE_OBSERVE;
}

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

#endif
