/* entry: one cache entry per file, named "<16 hex digits of the key>.tcf".
 *
 * Layout (integers little-endian, so a cache can move between machines):
 *   0  "TCFCACH1"    8 bytes
 *   8  kind          uint32 (tcf_cache_kind_t)
 *  12  version       uint32 (TCF_CACHE_FORMAT)
 *  16  key           uint64 (the file's name says it too: a renamed file is caught)
 *  24  length        uint64 (payload bytes)
 *  32  payload
 *  32+length  XXH3-64 of everything before it
 * A file is written under a temporary name and renamed, so a reader sees a whole entry or
 * none; concurrent writers of one key each rename a whole file, and the last one wins.
 */
#include "base/fault.h"
#include "cache/cache.h"
#include "cache/cache_internal.h"
#include "config/config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define TCF_CACHE_MAGIC    "TCFCACH1"
#define TCF_CACHE_FORMAT   1u
#define TCF_CACHE_HDR      32
#define TCF_CACHE_FRAME    (TCF_CACHE_HDR + 8)
#define TCF_CACHE_MAX_FILE (64u << 20) /* far above any cubin; caps what a bad file costs */
#define TCF_CACHE_TMP      ".tcf-tmp." /* prefix of temporary names: never an entry's */

/* The one exception to "no state but the directory": bad entries are reported once per
 * process, or a damaged cache would warn on every compile. */
static atomic_flag tcf_cache_warned = ATOMIC_FLAG_INIT;
/* Entries found but not used (bad, or a read that failed), and stores that failed, with
 * the directory usable: the stats' cache_read_failed and cache_write_failed. */
static atomic_ullong tcf_cache_bad_reads, tcf_cache_bad_writes;

void tcf_cache_failures(uint64_t *reads, uint64_t *writes)
{
    *reads = atomic_load(&tcf_cache_bad_reads);
    *writes = atomic_load(&tcf_cache_bad_writes);
}

static void tcf_cache_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t tcf_cache_get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void tcf_cache_name(char *out, uint64_t key)
{
    snprintf(out, 24, "%016llx.tcf", (unsigned long long)key);
}

/* 1 when name is "<16 lower-case hex>.tcf" (then *key is set), else 0. */
static int tcf_cache_is_entry(const char *name, uint64_t *key)
{
    uint64_t k = 0;
    for (int i = 0; i < 16; i++) {
        char c = name[i];
        if (c >= '0' && c <= '9') k = k << 4 | (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f') k = k << 4 | (uint64_t)(c - 'a' + 10);
        else return 0;
    }
    if (strcmp(name + 16, ".tcf") != 0)
        return 0;
    *key = k;
    return 1;
}

static int tcf_cache_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads exactly len bytes; -1 on an error or an early end of file. */
static int tcf_cache_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tcf_cache_put(uint64_t key, tcf_cache_kind_t kind, const void *data, size_t len)
{
    char dir[PATH_MAX], name[24], tmp[96];
    unsigned char hdr[TCF_CACHE_HDR], sum[8];
    if (!TCF_CACHE_KIND_VALID(kind) || (!data && len) ||
        len > TCF_CACHE_MAX_FILE - TCF_CACHE_FRAME)
        return -1;
    int dfd = tcf_cache_dirfd(dir, sizeof dir);
    if (dfd < 0)
        return -1;
    memcpy(hdr, TCF_CACHE_MAGIC, 8);
    tcf_cache_put64(hdr + 8, (uint64_t)TCF_CACHE_FORMAT << 32 | (uint32_t)kind);
    tcf_cache_put64(hdr + 16, key);
    tcf_cache_put64(hdr + 24, len);
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, hdr, sizeof hdr);
    XXH3_64bits_update(&st, data, len);
    tcf_cache_put64(sum, XXH3_64bits_digest(&st));
    tcf_cache_name(name, key);

    /* pid and thread id make the name ours alone; the attempt counter steps past a
     * leftover of a killed process whose ids were reused. */
    int fd = -1;
    long tid = syscall(SYS_gettid);
    for (int n = 0; fd < 0 && n < 16; n++) {
        snprintf(tmp, sizeof tmp, TCF_CACHE_TMP "%ld.%ld.%d", (long)getpid(), tid, n);
        fd = openat(dfd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    int rc = -1;
    if (fd >= 0) {
        int ok = !tcf_fault(TCF_FAULT_CACHE_WRITE) &&
                 tcf_cache_write_all(fd, hdr, sizeof hdr) == 0 &&
                 tcf_cache_write_all(fd, data, len) == 0 &&
                 tcf_cache_write_all(fd, sum, sizeof sum) == 0;
        ok = close(fd) == 0 && ok; /* close reports deferred write errors (NFS, quota) */
        if (ok && !tcf_fault(TCF_FAULT_CACHE_RENAME) && renameat(dfd, tmp, dfd, name) == 0)
            rc = 0;
        else
            (void)unlinkat(dfd, tmp, 0);
    }
    if (rc) {
        atomic_fetch_add(&tcf_cache_bad_writes, 1);
        tcf_log(TCF_LOG_DEBUG, "cannot store cache entry %s/%s", dir, name);
    }
    close(dfd);
    return rc;
}

/* What reading an entry found. */
typedef struct {
    int kind;          /* from the header; 0 when unread */
    uint64_t len;      /* payload bytes (the header's) */
    uint64_t fsize;    /* the file's size */
    const char *why;   /* NULL when good, else what is wrong */
    int nomem;         /* the entry may be fine: we could not hold it */
} tcf_cache_frame_t;

static int tcf_cache_bad(tcf_cache_frame_t *f, const char *why)
{
    f->why = why;
    return -1;
}

/* Checks the entry open at fd against key (and kind, unless 0) and, when data is not
 * NULL, returns its payload there (malloc'ed). 0 when good, else -1 with f->why set. */
static int tcf_cache_read(int fd, uint64_t key, int kind, void **data, tcf_cache_frame_t *f)
{
    unsigned char hdr[TCF_CACHE_HDR], sum[8];
    struct stat st;
    memset(f, 0, sizeof *f);
    if (fstat(fd, &st) != 0) return tcf_cache_bad(f, "cannot be examined");
    f->fsize = (uint64_t)st.st_size;
    if (!S_ISREG(st.st_mode)) return tcf_cache_bad(f, "not a regular file");
    if (st.st_uid != geteuid()) return tcf_cache_bad(f, "owned by another user");
    if (st.st_size < TCF_CACHE_FRAME) return tcf_cache_bad(f, "truncated");
    if (st.st_size > TCF_CACHE_MAX_FILE) return tcf_cache_bad(f, "too large");
    if (tcf_cache_read_all(fd, hdr, sizeof hdr)) return tcf_cache_bad(f, "truncated");
    if (memcmp(hdr, TCF_CACHE_MAGIC, 8) != 0) return tcf_cache_bad(f, "bad magic");
    uint64_t kv = tcf_cache_get64(hdr + 8);
    f->len = tcf_cache_get64(hdr + 24);
    if (kv >> 32 != TCF_CACHE_FORMAT) return tcf_cache_bad(f, "unknown format version");
    if (tcf_cache_get64(hdr + 16) != key) return tcf_cache_bad(f, "key does not match its name");
    if (!TCF_CACHE_KIND_VALID((uint32_t)kv))
        return tcf_cache_bad(f, "unknown kind");
    if (kind && (uint32_t)kv != (uint32_t)kind) return tcf_cache_bad(f, "wrong kind");
    if (f->len != f->fsize - TCF_CACHE_FRAME) return tcf_cache_bad(f, "length does not match size");
    unsigned char *p = tcf_malloc(f->len ? f->len : 1);
    if (!p) {
        f->nomem = 1;
        return tcf_cache_bad(f, "out of memory");
    }
    XXH3_state_t xs;
    XXH3_64bits_reset(&xs);
    XXH3_64bits_update(&xs, hdr, sizeof hdr);
    if (tcf_cache_read_all(fd, p, f->len) || tcf_cache_read_all(fd, sum, sizeof sum))
        f->why = "truncated"; /* shrunk while we read: not the entry we checked */
    else {
        XXH3_64bits_update(&xs, p, f->len);
        if (XXH3_64bits_digest(&xs) != tcf_cache_get64(sum))
            f->why = "checksum mismatch";
    }
    if (f->why || !data)
        free(p);
    else
        *data = p;
    if (f->why) return -1;
    f->kind = (int)(uint32_t)kv;
    return 0;
}

/* Opens name in dfd for reading: no links (O_NOFOLLOW), and no blocking on a FIFO someone
 * named like an entry (O_NONBLOCK; it changes nothing for regular files). */
static int tcf_cache_open_entry(int dfd, const char *name)
{
    return openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
}

int tcf_cache_get(uint64_t key, tcf_cache_kind_t kind, void **data, size_t *len)
{
    char dir[PATH_MAX], name[24];
    tcf_cache_frame_t f = { 0 };
    if (!data || !len)
        return -1;
    *data = NULL;
    *len = 0;
    int dfd = tcf_cache_dirfd(dir, sizeof dir);
    if (dfd < 0)
        return -1;
    tcf_cache_name(name, key);
    int fd = tcf_cache_open_entry(dfd, name);
    int e = errno;
    close(dfd);
    if (fd < 0 && e == ENOENT)
        return 1;
    int rc = -1;
    if (fd < 0) {
        f.why = e == ELOOP ? "a symbolic link" : "cannot be opened";
    } else if (tcf_fault(TCF_FAULT_CACHE_READ)) {
        f.why = "TCFUSE_FAULT: cache_read";
        close(fd);
    } else {
        rc = tcf_cache_read(fd, key, kind, data, &f);
        close(fd);
    }
    if (rc == 0) {
        *len = (size_t)f.len;
        return 0;
    }
    atomic_fetch_add(&tcf_cache_bad_reads, 1);
    if (!f.nomem && !atomic_flag_test_and_set(&tcf_cache_warned))
        tcf_log(TCF_LOG_WARN, "cache entry %s/%s is corrupt (%s): ignored", dir, name, f.why);
    return -1;
}

/* Calls fn for every entry-named file and removes our leftover temporary files when
 * clearing. Returns the number of entries visited (or removed), or -1. */
static int tcf_cache_walk(tcf_cache_visit_fn fn, void *ctx, int clear)
{
    char dir[PATH_MAX];
    int dfd = tcf_cache_dirfd(dir, sizeof dir);
    if (dfd < 0)
        return -1;
    int lfd = dup(dfd); /* closedir closes the descriptor it was given */
    DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
    if (!d) {
        if (lfd >= 0) close(lfd);
        close(dfd);
        return -1;
    }
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        uint64_t key;
        if (!tcf_cache_is_entry(de->d_name, &key)) {
            if (clear && strncmp(de->d_name, TCF_CACHE_TMP, sizeof TCF_CACHE_TMP - 1) == 0)
                (void)unlinkat(dfd, de->d_name, 0);
            continue;
        }
        if (clear) {
            count += unlinkat(dfd, de->d_name, 0) == 0;
            continue;
        }
        tcf_cache_frame_t f = { 0 };
        int fd = tcf_cache_open_entry(dfd, de->d_name);
        int ok = fd >= 0 && tcf_cache_read(fd, key, 0, NULL, &f) == 0;
        struct stat st;
        if (fd >= 0) close(fd);
        else if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            f.fsize = (uint64_t)st.st_size; /* a link or a file we may not open */
        if (fn) fn(de->d_name, key, ok ? f.kind : 0, (size_t)(ok ? f.len : f.fsize), ok, ctx);
        count++;
    }
    closedir(d);
    close(dfd);
    return count;
}

int tcf_cache_list(tcf_cache_visit_fn fn, void *ctx) { return tcf_cache_walk(fn, ctx, 0); }

int tcf_cache_clear(void) { return tcf_cache_walk(NULL, NULL, 1); }
