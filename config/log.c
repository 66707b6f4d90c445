/* log: tcfuse's one output channel (tcf_log, tcf_out).
 *
 * Called from hooks inside other people's processes, possibly before main, from within
 * dlsym, or from inside tcf_config_load itself. So: no heap (the line is built on the
 * stack), one write(2) per line (lines from several threads do not interleave), errno
 * left as the application had it, and tcf_config_load is never called from here: until
 * the config is loaded we use the defaults (verbosity 1, stderr).
 */
#include "config/config.h"
#include "config/config_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TCF_LOG_LINE_MAX 1024 /* longer lines are cut, ending in "..." */
#define TCF_LOG_CAP      1000 /* tcf_log lines; a runaway warning must not flood the app */
#define TCF_LOG_PREFIX   "tcfuse: "
#define TCF_FD_UNSET     (-2)

static atomic_int tcf_log_fd = TCF_FD_UNSET;
static atomic_uint tcf_log_lines;
/* A message produced while this thread is printing (a hooked call from inside vsnprintf
 * or write, a signal handler) is dropped rather than recursing. initial-exec: the
 * general TLS model may call __tls_get_addr, which can allocate on first use. */
static _Thread_local int tcf_log_busy __attribute__((tls_model("initial-exec")));

/* Writes all of buf, retrying on EINTR and after a short write. */
static void tcf_log_write(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* Formats "tcfuse: <message>\n" on the stack and writes it with one write(2). */
static void tcf_log_emit(int fd, const char *fmt, va_list ap)
{
    char line[TCF_LOG_LINE_MAX];
    const size_t pre = sizeof TCF_LOG_PREFIX - 1;
    memcpy(line, TCF_LOG_PREFIX, pre);
    /* Leaves room for the '\n' that replaces the terminating NUL. */
    int n = vsnprintf(line + pre, sizeof line - pre, fmt, ap);
    if (n < 0)
        return;
    size_t len = pre + (size_t)n;
    if (len > sizeof line - 1) {
        len = sizeof line - 1;
        memcpy(line + len - 3, "...", 3);
    } else if (n > 0 && line[len - 1] == '\n') {
        len--; /* a caller's own newline: we add one */
    }
    line[len++] = '\n';
    tcf_log_write(fd, line, len);
}

static void tcf_log_emitf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tcf_log_emitf(int fd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tcf_log_emit(fd, fmt, ap);
    va_end(ap);
}

/* The destination: stderr until the config is loaded; then TCFUSE_LOG_FILE (opened on
 * first use) or stderr. Two threads may race to open it; the loser closes its copy. */
static int tcf_log_fd_get(void)
{
    if (!tcf_config_is_loaded())
        return 2;
    int fd = atomic_load_explicit(&tcf_log_fd, memory_order_acquire);
    if (fd != TCF_FD_UNSET)
        return fd;
    char path[TCF_OPT_STR_MAX + 64];
    int err = 0;
    fd = 2;
    if (tcf_cfg.log_file[0]) {
        if (tcf_expand_path(tcf_cfg.log_file, path, sizeof path) != 0)
            err = ENAMETOOLONG;
        else if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0)
            err = errno, fd = 2;
    }
    int expected = TCF_FD_UNSET;
    if (!atomic_compare_exchange_strong(&tcf_log_fd, &expected, fd)) {
        if (fd != 2)
            close(fd);
        return expected;
    }
    if (err) {
        char msg[128];
        tcf_log_emitf(2, "cannot open TCFUSE_LOG_FILE=\"%s\" (%s); writing to stderr",
                      tcf_cfg.log_file, strerror_r(err, msg, sizeof msg));
    }
    return fd;
}

void tcf_log(tcf_level_t lvl, const char *fmt, ...)
{
    long long verbose = tcf_config_is_loaded() ? tcf_cfg.verbose : 1;
    if ((long long)lvl > verbose || tcf_log_busy)
        return;
    /* Checked before counting, so the counter cannot wrap however long the process runs. */
    if (atomic_load_explicit(&tcf_log_lines, memory_order_relaxed) > TCF_LOG_CAP)
        return;
    tcf_log_busy = 1;
    int saved = errno;
    unsigned n = atomic_fetch_add_explicit(&tcf_log_lines, 1, memory_order_relaxed);
    if (n < TCF_LOG_CAP) {
        va_list ap;
        va_start(ap, fmt);
        tcf_log_emit(tcf_log_fd_get(), fmt, ap);
        va_end(ap);
    } else if (n == TCF_LOG_CAP) {
        tcf_log_emitf(tcf_log_fd_get(), "further messages suppressed (%d printed)", TCF_LOG_CAP);
    }
    errno = saved;
    tcf_log_busy = 0;
}

void tcf_out(const char *fmt, ...)
{
    if (tcf_log_busy)
        return;
    tcf_log_busy = 1;
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    tcf_log_emit(tcf_log_fd_get(), fmt, ap);
    va_end(ap);
    errno = saved;
    tcf_log_busy = 0;
}

void tcf_log_reset(void)
{
    int fd = atomic_exchange(&tcf_log_fd, TCF_FD_UNSET);
    if (fd > 2)
        close(fd);
    atomic_store(&tcf_log_lines, 0);
}

static int tcf_digits(const char *s, char out[10])
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n > 9 || strspn(s, "0123456789") != n)
        return 0;
    memcpy(out, s, n + 1);
    return 1;
}

int tcf_rank(char rank[10], char world[10])
{
    return tcf_digits(getenv("RANK"), rank) && tcf_digits(getenv("WORLD_SIZE"), world);
}

int tcf_expand_path(const char *tmpl, char *out, size_t cap)
{
    char pid[24], rank[24], world[10];
    int pid_len = snprintf(pid, sizeof pid, "%ld", (long)getpid());
    if (!tcf_rank(rank, world))   /* a process no launcher ranked: its pid */
        snprintf(rank, sizeof rank, "pid%ld", (long)getpid());
    size_t len = 0;
    for (const char *p = tmpl; *p; p++) {
        const char *piece = p;
        size_t n = 1;
        if (p[0] == '%' && p[1] == 'p') {
            piece = pid, n = (size_t)pid_len, p++;
        } else if (p[0] == '%' && p[1] == 'r') {
            piece = rank, n = strlen(rank), p++;
        } else if (p[0] == '%' && p[1] == '%') {
            n = 1, p++; /* "%%" is a literal '%', so "%%p" can be written */
        }
        if (len + n >= cap) {
            if (cap)
                out[0] = '\0';
            return -1;
        }
        memcpy(out + len, piece, n);
        len += n;
    }
    if (cap == 0)
        return -1;
    out[len] = '\0';
    return 0;
}
