/* cache: the directory of the disk cache, and the keys of its entries.
 *
 * The only state is the resolved directory (its path, or why it is unusable), guarded by
 * a mutex: tcf_cache_open may be called again (tests, `tcfuse cache`) while other threads
 * read. Each operation re-opens the directory with O_NOFOLLOW and checks it through the
 * descriptor, then works relative to that descriptor: the check made at open time cannot
 * be swapped for a link to someone else's directory later (the window between lstat and
 * use is what symlink attacks on cache directories live in).
 */
#include "cache/cache.h"
#include "cache/cache_internal.h"
#include "config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

enum { TCF_CACHE_UNRESOLVED = 0, TCF_CACHE_USABLE, TCF_CACHE_OFF };

static pthread_mutex_t tcf_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static int tcf_cache_state; /* TCF_CACHE_*, under tcf_cache_lock */
static char tcf_cache_path[PATH_MAX];
static char tcf_cache_why[PATH_MAX + 128];

/* Joins a and b with one '/' into out. 0, or -1 when it does not fit. */
static int tcf_cache_join(char *out, size_t cap, const char *a, const char *b)
{
    size_t la = strlen(a);
    while (la > 1 && a[la - 1] == '/')
        la--;
    int n = snprintf(out, cap, "%.*s/%s", (int)la, a, b);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* The configured or default directory into out, made absolute: a preloaded library
 * cannot count on the program keeping its working directory. 0, or -1 with why set.
 * secure_getenv, as config.c: a setuid program must not write where its caller says. */
static int tcf_cache_resolve(const char *dir, char *out, size_t cap)
{
    char rel[PATH_MAX];
    const char *xdg, *home;
    tcf_config_load();
    if (dir && dir[0]) {
        if (snprintf(rel, sizeof rel, "%s", dir) >= (int)sizeof rel)
            goto toolong;
    } else if (tcf_cfg.cache_dir[0]) {
        if (snprintf(rel, sizeof rel, "%s", tcf_cfg.cache_dir) >= (int)sizeof rel)
            goto toolong;
    } else if ((xdg = secure_getenv("XDG_CACHE_HOME")) && xdg[0] == '/') {
        /* The XDG spec: a relative XDG_CACHE_HOME is invalid and must be ignored. */
        if (tcf_cache_join(rel, sizeof rel, xdg, "tcfuse"))
            goto toolong;
    } else if ((home = secure_getenv("HOME")) && home[0]) {
        if (tcf_cache_join(rel, sizeof rel, home, ".cache/tcfuse"))
            goto toolong;
    } else {
        snprintf(tcf_cache_why, sizeof tcf_cache_why,
                 "no cache directory: TCFUSE_CACHE_DIR, XDG_CACHE_HOME and HOME are unset");
        return -1;
    }
    if (rel[0] == '/') {
        if (snprintf(out, cap, "%s", rel) >= (int)cap)
            goto toolong;
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || tcf_cache_join(out, cap, cwd, rel))
            goto toolong;
    }
    /* Trailing slashes would only make the messages and tcf_cache_dir untidy. */
    for (size_t n = strlen(out); n > 1 && out[n - 1] == '/'; n--)
        out[n - 1] = '\0';
    return 0;
toolong:
    snprintf(tcf_cache_why, sizeof tcf_cache_why,
             "the cache directory path is too long (or the working directory unknown)");
    return -1;
}

/* mkdir -p with 0700 for every component it creates. Components that exist are left as
 * they are: only the last one is ours to judge. 0, or the errno of the last mkdir. */
static int tcf_cache_mkdirs(char *p)
{
    for (char *s = p + 1; *s; s++) {
        if (*s != '/' || s[-1] == '/')
            continue;
        *s = '\0';
        (void)mkdir(p, 0700); /* EEXIST or a failure the final mkdir reports */
        *s = '/';
    }
    return mkdir(p, 0700) == 0 || errno == EEXIST ? 0 : errno;
}

/* The rules of DESIGN.md ("Never hurt the host") on an lstat/fstat result. NULL when
 * fine, else a phrase for "cache directory X <phrase>". */
static const char *tcf_cache_judge(const struct stat *st, char *buf, size_t cap)
{
    if (S_ISLNK(st->st_mode))
        return "is a symbolic link";
    if (!S_ISDIR(st->st_mode))
        return "is not a directory";
    if (st->st_uid != geteuid()) {
        snprintf(buf, cap, "is owned by uid %u, not by uid %u", (unsigned)st->st_uid,
                 (unsigned)geteuid());
        return buf;
    }
    if (st->st_mode & 022) {
        snprintf(buf, cap, "is writable by group or others (mode %04o)",
                 (unsigned)(st->st_mode & 07777));
        return buf;
    }
    return NULL;
}

/* Under the lock: resolves, creates and checks dir, setting the state. */
static int tcf_cache_open_locked(const char *dir)
{
    char path[PATH_MAX], buf[96], err[128];
    struct stat st;
    const char *bad = NULL;
    tcf_cache_state = TCF_CACHE_OFF;
    tcf_cache_path[0] = '\0';
    if (tcf_cache_resolve(dir, path, sizeof path) == 0) {
        int e = tcf_cache_mkdirs(path);
        if (lstat(path, &st) != 0) {
            snprintf(tcf_cache_why, sizeof tcf_cache_why, "cannot create cache directory %s: %s",
                     path, strerror_r(e ? e : errno, err, sizeof err));
        } else if ((bad = tcf_cache_judge(&st, buf, sizeof buf))) {
            snprintf(tcf_cache_why, sizeof tcf_cache_why, "cache directory %s %s", path, bad);
        } else {
            memcpy(tcf_cache_path, path, sizeof path);
            tcf_cache_why[0] = '\0';
            tcf_cache_state = TCF_CACHE_USABLE;
            return 0;
        }
    }
    tcf_log(TCF_LOG_WARN, "%s: disk cache off", tcf_cache_why);
    return -1;
}

int tcf_cache_open(const char *dir)
{
    pthread_mutex_lock(&tcf_cache_lock);
    int rc = tcf_cache_open_locked(dir);
    pthread_mutex_unlock(&tcf_cache_lock);
    return rc;
}

/* Opens the default directory unless something already opened one. Under the lock. */
static void tcf_cache_ensure_locked(void)
{
    if (tcf_cache_state == TCF_CACHE_UNRESOLVED)
        (void)tcf_cache_open_locked(NULL);
}

const char *tcf_cache_dir(void)
{
    pthread_mutex_lock(&tcf_cache_lock);
    tcf_cache_ensure_locked();
    const char *p = tcf_cache_state == TCF_CACHE_USABLE ? tcf_cache_path : NULL;
    pthread_mutex_unlock(&tcf_cache_lock);
    return p;
}

const char *tcf_cache_problem(void)
{
    pthread_mutex_lock(&tcf_cache_lock);
    tcf_cache_ensure_locked();
    const char *p = tcf_cache_state == TCF_CACHE_USABLE ? NULL : tcf_cache_why;
    pthread_mutex_unlock(&tcf_cache_lock);
    return p;
}

int tcf_cache_dirfd(char *path, size_t cap)
{
    char buf[96];
    struct stat st;
    pthread_mutex_lock(&tcf_cache_lock);
    tcf_cache_ensure_locked();
    int ok = tcf_cache_state == TCF_CACHE_USABLE &&
             snprintf(path, cap, "%s", tcf_cache_path) < (int)cap;
    pthread_mutex_unlock(&tcf_cache_lock);
    if (!ok)
        return -1;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    const char *bad =
        fstat(fd, &st) != 0 ? "cannot be examined" : tcf_cache_judge(&st, buf, sizeof buf);
    if (bad) {
        /* Fine at open, changed since: someone is meddling, or the user chmod'ed it. Not
         * a warning per operation (that could flood); the operation simply misses. */
        tcf_log(TCF_LOG_DEBUG, "cache directory %s %s now: skipping the cache", path, bad);
        close(fd);
        return -1;
    }
    return fd;
}

/* Feeds a length-prefixed string: "ab"+"c" and "a"+"bc" must hash differently. */
static void tcf_cache_key_str(XXH3_state_t *st, const char *s)
{
    if (!s)
        s = "";
    uint64_t n = strlen(s);
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(n >> (8 * i));
    XXH3_64bits_update(st, len, sizeof len);
    XXH3_64bits_update(st, s, (size_t)n);
}

/* Little-endian integers, so that a cache exported to another machine keeps its keys. */
static void tcf_cache_key_u32(XXH3_state_t *st, uint32_t v)
{
    unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 24) };
    XXH3_64bits_update(st, b, sizeof b);
}

uint64_t tcf_cache_key(tcf_cache_kind_t kind, const char *source, const char *nvrtc_version,
                       int arch)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    /* A domain tag: no other xxh3 of ours can collide with a cache key by construction. */
    tcf_cache_key_str(&st, "tcfuse cache key 1");
    tcf_cache_key_u32(&st, (uint32_t)kind);
    tcf_cache_key_str(&st, source);
    tcf_cache_key_str(&st, nvrtc_version);
    tcf_cache_key_u32(&st, (uint32_t)arch);
    tcf_cache_key_str(&st, TCF_VERSION);
    return XXH3_64bits_digest(&st);
}
