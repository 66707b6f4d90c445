/* The JSON-lines trace (docs/TRACE.md). Written a window at a time under one lock, through
 * a large stdio buffer; past TCFUSE_TRACE_LIMIT bytes events are counted, not written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/internal.h"

extern char *program_invocation_short_name;

static pthread_mutex_t tcf_tlock = PTHREAD_MUTEX_INITIALIZER;
static FILE *tcf_tf;
static atomic_int tcf_ton;
static uint64_t tcf_tbytes, tcf_tdropped, tcf_tlaunches, tcf_twindows;

int tcf_trace_on(void)
{
    return atomic_load_explicit(&tcf_ton, memory_order_relaxed);
}

/* Writes through stdio and counts the bytes. */
static void tcf_tw(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void tcf_tw(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(tcf_tf, fmt, ap);
    va_end(ap);
    if (n > 0)
        tcf_tbytes += (uint64_t)n;
}

static void tcf_tw_string(const char *s)
{
    fputc('"', tcf_tf);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(tcf_tf, "\\%c", c);
        else if (c < 0x20)
            fprintf(tcf_tf, "\\u%04x", c);
        else
            fputc(c, tcf_tf);
        tcf_tbytes++;
    }
    fputc('"', tcf_tf);
    tcf_tbytes += 2;
}

int tcf_trace_open(void)
{
    if (!tcf_cfg.trace[0])
        return -1;
    char path[TCF_OPT_STR_MAX];
    if (tcf_expand_path(tcf_cfg.trace, path, sizeof path) != 0) {
        tcf_log(TCF_LOG_WARN, "TCFUSE_TRACE: path too long; not tracing");
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        tcf_log(TCF_LOG_WARN, "cannot write trace %s: %s; not tracing", path, strerror(errno));
        return -1;
    }
    tcf_tf = fdopen(fd, "w");
    if (!tcf_tf) {
        close(fd);
        return -1;
    }
    setvbuf(tcf_tf, NULL, _IOFBF, 1 << 20);
    tcf_tw("{\"tcfuse_trace\":1,\"version\":\"%s\",\"pid\":%d,\"mode\":\"%s\",\"argv0\":",
           TCF_VERSION, (int)getpid(), tcf_mode_name(tcf_cfg.mode));
    tcf_tw_string(program_invocation_short_name ? program_invocation_short_name : "");
    tcf_tw("}\n");
    atomic_store(&tcf_ton, 1);
    return 0;
}

static void tcf_tw_kernel(tcf_kernel_t *k)
{
    if (atomic_exchange(&k->traced, 1))
        return;
    static const char *const kinds[] = { "unknown", "kernel", "function" };
    tcf_tw("{\"ev\":\"kernel\",\"id\":%u,\"name\":", k->id);
    tcf_tw_string(k->name);
    tcf_tw(",\"handle\":\"0x%llx\",\"kind\":\"%s\",\"params\":[", (unsigned long long)k->handle,
           kinds[k->kind]);
    for (uint32_t i = 0; i < k->nparams; i++)
        tcf_tw("%s[%u,%u]", i ? "," : "", k->off[i], k->size[i]);
    tcf_tw("]}\n");
}

static void tcf_tw_hex(const uint8_t *p, uint32_t n)
{
    static const char digits[] = "0123456789abcdef";
    char buf[256];
    uint32_t j = 0;
    for (uint32_t i = 0; i < n; i++) {
        buf[j++] = digits[p[i] >> 4];
        buf[j++] = digits[p[i] & 15];
        if (j == sizeof buf) {
            fwrite(buf, 1, j, tcf_tf);
            j = 0;
        }
    }
    fwrite(buf, 1, j, tcf_tf);
    tcf_tbytes += 2ull * n;
}

static void tcf_tw_event(const tcf_event_t *e, int64_t win, const uint8_t *arena)
{
    unsigned long long st = (unsigned long long)e->stream;
    switch (e->kind) {
    case TCF_EV_LAUNCH: {
        const tcf_kernel_t *k = e->u.l.k;
        tcf_tlaunches++;
        tcf_tw("{\"ev\":\"launch\",\"t\":%llu,\"win\":%lld,\"k\":%u,\"via\":\"%s\","
               "\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%u,\"stream\":\"0x%llx\","
               "\"rc\":%d,\"params\":\"",
               (unsigned long long)e->t, (long long)win, k->id,
               e->via == TCF_VIA_LAUNCH_EX ? "cuLaunchKernelEx" : "cuLaunchKernel",
               e->u.l.grid[0], e->u.l.grid[1], e->u.l.grid[2], e->u.l.block[0],
               e->u.l.block[1], e->u.l.block[2], e->u.l.smem, st, e->rc);
        if (arena)
            tcf_tw_hex(arena + e->u.l.poff, e->u.l.pbytes);
        tcf_tw("\"}\n");
        break;
    }
    case TCF_EV_ALLOC:
        tcf_tw("{\"ev\":\"alloc\",\"t\":%llu,\"win\":%lld,\"call\":\"%s\",\"ptr\":\"0x%llx\","
               "\"size\":%llu,\"stream\":\"0x%llx\",\"rc\":%d}\n",
               (unsigned long long)e->t, (long long)win, e->u.m.call,
               (unsigned long long)e->u.m.ptr, (unsigned long long)e->u.m.size, st, e->rc);
        break;
    case TCF_EV_FREE:
        tcf_tw("{\"ev\":\"free\",\"t\":%llu,\"win\":%lld,\"call\":\"%s\",\"ptr\":\"0x%llx\","
               "\"stream\":\"0x%llx\",\"rc\":%d}\n",
               (unsigned long long)e->t, (long long)win, e->u.m.call,
               (unsigned long long)e->u.m.ptr, st, e->rc);
        break;
    case TCF_EV_MEMSET:
        tcf_tw("{\"ev\":\"memset\",\"t\":%llu,\"win\":%lld,\"call\":\"%s\",\"ptr\":\"0x%llx\","
               "\"value\":%llu,\"elem\":%u,\"count\":%llu,\"stream\":\"0x%llx\",\"rc\":%d}\n",
               (unsigned long long)e->t, (long long)win, e->u.op.call,
               (unsigned long long)e->u.op.dst, (unsigned long long)e->u.op.value, e->u.op.elem,
               (unsigned long long)e->u.op.count, st, e->rc);
        break;
    case TCF_EV_MEMCPY:
        tcf_tw("{\"ev\":\"memcpy\",\"t\":%llu,\"win\":%lld,\"call\":\"%s\",\"dst\":\"0x%llx\","
               "\"src\":\"0x%llx\",\"size\":%llu,\"stream\":\"0x%llx\",\"rc\":%d}\n",
               (unsigned long long)e->t, (long long)win, e->u.op.call,
               (unsigned long long)e->u.op.dst, (unsigned long long)e->u.op.src,
               (unsigned long long)e->u.op.count, st, e->rc);
        break;
    }
}

static int tcf_trace_room(uint32_t nevents)
{
    if (tcf_tbytes < (uint64_t)tcf_cfg.trace_limit)
        return 1;
    tcf_tdropped += nevents;
    return 0;
}

void tcf_trace_window(const tcf_window_t *w, uint64_t key, const char *reason,
                      char (*bt)[160], int nbt)
{
    pthread_mutex_lock(&tcf_tlock);
    if (tcf_tf && tcf_trace_room(w->nev + 1)) {
        for (uint32_t i = 0; i < w->nev; i++)
            if (w->ev[i].kind == TCF_EV_LAUNCH)
                tcf_tw_kernel(w->ev[i].u.l.k);
        for (uint32_t i = 0; i < w->nev; i++)
            tcf_tw_event(&w->ev[i], (int64_t)w->id, w->arena);
        tcf_twindows++;
        tcf_tw("{\"ev\":\"window\",\"t\":%llu,\"id\":%llu,\"ctx\":\"0x%llx\",\"stream\":\"0x%llx\","
               "\"launches\":%u,\"ops\":%u,\"key\":\"0x%016llx\",\"reason\":",
               (unsigned long long)tcf_now_ns(), (unsigned long long)w->id,
               (unsigned long long)w->ctx, (unsigned long long)w->stream, w->nlaunch, w->nops,
               (unsigned long long)key);
        tcf_tw_string(reason);
        if (w->graph_nodes)  /* run as one CUDA graph of that many nodes */
            tcf_tw(",\"replayed\":%u,\"patched\":%u", w->graph_nodes, w->graph_patched);
        if (bt && nbt > 0) {
            tcf_tw(",\"bt\":[");
            for (int i = 0; i < nbt; i++) {
                if (i)
                    tcf_tw(",");
                tcf_tw_string(bt[i]);
            }
            tcf_tw("]");
        }
        tcf_tw("}\n");
    }
    pthread_mutex_unlock(&tcf_tlock);
}

void tcf_trace_event(const tcf_event_t *e, int64_t win)
{
    pthread_mutex_lock(&tcf_tlock);
    if (tcf_tf && tcf_trace_room(1))
        tcf_tw_event(e, win, NULL);
    pthread_mutex_unlock(&tcf_tlock);
}

void tcf_trace_close(void)
{
    pthread_mutex_lock(&tcf_tlock);
    if (tcf_tf) {
        atomic_store(&tcf_ton, 0);
        tcf_tw("{\"ev\":\"end\",\"t\":%llu,\"launches\":%llu,\"windows\":%llu,\"dropped\":%llu}\n",
               (unsigned long long)tcf_now_ns(), (unsigned long long)tcf_tlaunches,
               (unsigned long long)tcf_twindows, (unsigned long long)tcf_tdropped);
        fclose(tcf_tf);
        tcf_tf = NULL;
    }
    pthread_mutex_unlock(&tcf_tlock);
}
