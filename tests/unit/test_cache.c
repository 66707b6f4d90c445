/* The disk cache: round trips, keys, and every way an entry or the directory can be bad
 * (each must read as a miss, never a load). Warnings go to a log file we inspect.
 * `test_cache put DIR KEY KIND TEXT` writes one entry instead (for tests/bats/cache.bats). */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cache/cache.h"
#include "check.h"
#include "config/config.h"
#include "config/config_internal.h"

static char top[64], dir[128], logpath[128];

static void path_of(char *out, uint64_t key) /* out: 192 bytes */
{
    snprintf(out, 192, "%s/%016llx.tcf", dir, (unsigned long long)key);
}
static int rm_one(const char *p, const struct stat *s, int f, struct FTW *w) { return remove(p); }
static void rm_rf(const char *p) { nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* Every name in d but "." and "..". */
static int names_in(const char *d)
{
    DIR *dd = opendir(d);
    struct dirent *de;
    int n = 0;
    while (dd && (de = readdir(dd)))
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    if (dd) closedir(dd);
    return n;
}

/* A fresh empty cache directory, opened. */
static void fresh(void)
{
    rm_rf(dir);
    CHECK_EQ_INT(tcf_cache_open(dir), 0);
}

static int count_in_log(const char *needle)
{
    char buf[1 << 16] = { 0 };
    FILE *f = fopen(logpath, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    int c = 0;
    for (char *p = buf; n && (p = strstr(p, needle)); p++) c++;
    return c;
}

/* get's status, checking that a hit returns want (len bytes) and a miss returns nothing. */
static int get_is(uint64_t key, tcf_cache_kind_t kind, const char *want)
{
    void *d = (void *)1;
    size_t len = 7;
    int rc = tcf_cache_get(key, kind, &d, &len);
    if (rc != 0) {
        CHECK(d == NULL && len == 0);
        return rc;
    }
    if (want && CHECK_EQ_INT(len, strlen(want)))
        CHECK_EQ_MEM(d, want, len);
    free(d);
    return rc;
}

/* Writes an entry by hand, with a checksum that fits what is written: each header check is
 * then exercised on its own, not hidden behind the checksum. */
static void raw(uint64_t name_key, const char *magic, uint32_t kind, uint32_t ver, uint64_t key,
                uint64_t lenf, const char *payload)
{
    unsigned char b[256];
    size_t plen = strlen(payload);
    memcpy(b, magic, 8);
    memcpy(b + 8, &kind, 4); /* little-endian host: the file's byte order */
    memcpy(b + 12, &ver, 4);
    memcpy(b + 16, &key, 8);
    memcpy(b + 24, &lenf, 8);
    memcpy(b + 32, payload, plen);
    uint64_t sum = XXH3_64bits(b, 32 + plen);
    memcpy(b + 32 + plen, &sum, 8);
    char p[192];
    path_of(p, name_key);
    FILE *f = fopen(p, "wb");
    fwrite(b, 1, 40 + plen, f);
    fclose(f);
}

/* Damages key's file: XORs flip into the byte at off (when flip), then truncates it to
 * trunc bytes (when trunc >= 0; longer than the file appends zeros). */
static void mangle(uint64_t key, long off, int flip, long trunc)
{
    char p[192];
    path_of(p, key);
    int fd = open(p, O_RDWR);
    if (flip) {
        unsigned char c = 0;
        CHECK_EQ_INT(pread(fd, &c, 1, off), 1);
        c ^= (unsigned char)flip;
        CHECK_EQ_INT(pwrite(fd, &c, 1, off), 1);
    }
    if (trunc >= 0) CHECK_EQ_INT(ftruncate(fd, trunc), 0);
    close(fd);
}

TEST(round_trip)
{
    fresh();
    const char bin[] = "cubin\0with\0zeros";
    CHECK_EQ_INT(tcf_cache_put(0x1234, TCF_CACHE_CUBIN, bin, sizeof bin), 0);
    void *d = NULL;
    size_t len = 0;
    CHECK_EQ_INT(tcf_cache_get(0x1234, TCF_CACHE_CUBIN, &d, &len), 0);
    CHECK_EQ_INT(len, sizeof bin);
    if (d) CHECK_EQ_MEM(d, bin, sizeof bin);
    free(d);
    struct stat st;
    char p[192];
    path_of(p, 0x1234);
    CHECK(strstr(p, "/0000000000001234.tcf"));
    CHECK_EQ_INT(stat(p, &st), 0);
    CHECK_EQ_INT(st.st_mode & 0777, 0600);
    CHECK_EQ_INT(st.st_size, 40 + sizeof bin);
    CHECK_EQ_INT(tcf_cache_put(0x1234, TCF_CACHE_CUBIN, "new", 3), 0); /* replaces */
    CHECK_EQ_INT(get_is(0x1234, TCF_CACHE_CUBIN, "new"), 0);
    CHECK_EQ_INT(tcf_cache_put(7, TCF_CACHE_VERDICT, NULL, 0), 0);   /* empty payload */
    CHECK_EQ_INT(get_is(7, TCF_CACHE_VERDICT, ""), 0);
    CHECK_EQ_INT(get_is(0xdead, TCF_CACHE_CUBIN, NULL), 1);          /* absent: a plain miss */
    CHECK_EQ_INT(tcf_cache_put(8, (tcf_cache_kind_t)9, "x", 1), -1);  /* not a kind */
}

TEST(key_sensitivity)
{
    uint64_t k = tcf_cache_key(TCF_CACHE_CUBIN, "src", "12.8", 90);
    CHECK_EQ_U64(tcf_cache_key(TCF_CACHE_CUBIN, "src", "12.8", 90), k);
    CHECK(tcf_cache_key(TCF_CACHE_VERDICT, "src", "12.8", 90) != k);
    CHECK(tcf_cache_key(TCF_CACHE_CUBIN, "src ", "12.8", 90) != k);
    CHECK(tcf_cache_key(TCF_CACHE_CUBIN, "src", "12.9", 90) != k);
    CHECK(tcf_cache_key(TCF_CACHE_CUBIN, "src", "12.8", 100) != k);
    /* fields cannot run together */
    CHECK(tcf_cache_key(TCF_CACHE_CUBIN, "ab", "c", 90) !=
          tcf_cache_key(TCF_CACHE_CUBIN, "a", "bc", 90));
    CHECK(tcf_cache_key(TCF_CACHE_CUBIN, NULL, NULL, 0) ==
          tcf_cache_key(TCF_CACHE_CUBIN, "", "", 0));
}

TEST(no_temp_files_left)
{
    fresh();
    for (int i = 0; i < 20; i++)
        CHECK_EQ_INT(tcf_cache_put((uint64_t)i, TCF_CACHE_CUBIN, "abc", 3), 0);
    CHECK_EQ_INT(names_in(dir), 20);
    CHECK_EQ_INT(tcf_cache_list(NULL, NULL), 20);
}

TEST(corrupt_entries_miss)
{
    fresh();
    const char *pl = "payload bytes";
    long end = 32 + (long)strlen(pl);
    uint64_t k = 42;
    struct { long off; int flip; long trunc; } cases[] = {
        { 35, 0x01, -1 },     /* a payload byte */
        { end + 3, 0x80, -1 }, /* the checksum */
        { 0, 0, end + 7 },    /* truncated inside the checksum */
        { 0, 0, 20 },         /* inside the header */
        { 0, 0, 0 },          /* empty */
        { 0, 0, end + 9 },    /* a byte appended */
        { 24, 0x02, -1 },     /* the length field */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_EQ_INT(tcf_cache_put(k, TCF_CACHE_CUBIN, pl, strlen(pl)), 0);
        mangle(k, cases[i].off, cases[i].flip, cases[i].trunc);
        if (!CHECK_EQ_INT(get_is(k, TCF_CACHE_CUBIN, NULL), -1))
            fprintf(stderr, "    case %zu\n", i);
    }
    raw(k, "TCFCACH2", 1, 1, k, 2, "ok");
    CHECK_EQ_INT(get_is(k, TCF_CACHE_CUBIN, NULL), -1); /* magic */
    raw(k, "TCFCACH1", 1, 2, k, 2, "ok");
    CHECK_EQ_INT(get_is(k, TCF_CACHE_CUBIN, NULL), -1); /* version */
    raw(k, "TCFCACH1", 7, 1, k, 2, "ok");
    CHECK_EQ_INT(get_is(k, TCF_CACHE_CUBIN, NULL), -1); /* unknown kind */
    raw(k, "TCFCACH1", 1, 1, k + 1, 2, "ok");
    CHECK_EQ_INT(get_is(k, TCF_CACHE_CUBIN, NULL), -1); /* a renamed entry */
    raw(k, "TCFCACH1", 1, 1, k, 2, "ok");
    CHECK_EQ_INT(get_is(k, TCF_CACHE_CUBIN, "ok"), 0);  /* the hand-made frame is right */
    CHECK_EQ_INT(get_is(k, TCF_CACHE_VERDICT, NULL), -1); /* asked for the other kind */
}

TEST(links_fifos_owners_sizes_miss)
{
    fresh();
    char p[192], q[192];
    CHECK_EQ_INT(tcf_cache_put(1, TCF_CACHE_CUBIN, "one", 3), 0);
    path_of(p, 1), path_of(q, 2);
    CHECK_EQ_INT(symlink(p, q), 0); /* a link to a good entry: still not loaded */
    CHECK_EQ_INT(get_is(2, TCF_CACHE_CUBIN, NULL), -1);
    raw(3, "TCFCACH1", 1, 1, 3, 2, "ok");
    path_of(p, 3), path_of(q, 4);
    CHECK_EQ_INT(rename(p, q), 0);
    CHECK_EQ_INT(symlink(q, p), 0); /* a link whose target's frame fits the name exactly */
    CHECK_EQ_INT(get_is(3, TCF_CACHE_CUBIN, NULL), -1);
    path_of(p, 5);
    CHECK_EQ_INT(mkfifo(p, 0600), 0); /* must not block */
    CHECK_EQ_INT(get_is(5, TCF_CACHE_CUBIN, NULL), -1);
    path_of(p, 6);
    int fd = open(p, O_CREAT | O_WRONLY, 0600);
    CHECK_EQ_INT(ftruncate(fd, 65 << 20), 0); /* sparse: refused by size, unread */
    close(fd);
    CHECK_EQ_INT(get_is(6, TCF_CACHE_CUBIN, NULL), -1);
    if (geteuid() != 0) {
        printf("test_cache: not root: skipping the entry owned by another user\n");
        return;
    }
    CHECK_EQ_INT(tcf_cache_put(7, TCF_CACHE_CUBIN, "seven", 5), 0);
    path_of(p, 7);
    CHECK_EQ_INT(chown(p, 65534, 65534), 0);
    CHECK_EQ_INT(get_is(7, TCF_CACHE_CUBIN, NULL), -1);
}

/* tcf_cache_open(d) fails, the cache is off, and the warning names why. */
static void refused(const char *d, const char *why)
{
    int before = count_in_log(why);
    CHECK_EQ_INT(tcf_cache_open(d), -1);
    CHECK(tcf_cache_dir() == NULL);
    CHECK(tcf_cache_problem() && strstr(tcf_cache_problem(), why));
    CHECK_EQ_INT(count_in_log(why), before + 1);
    CHECK_EQ_INT(tcf_cache_put(1, TCF_CACHE_CUBIN, "x", 1), -1);
    CHECK_EQ_INT(get_is(1, TCF_CACHE_CUBIN, NULL), -1);
}

TEST(bad_directories_disable)
{
    char d[192], l[192];
    snprintf(d, sizeof d, "%s/ww", top), snprintf(l, sizeof l, "%s/link", top);
    mkdir(d, 0700);
    CHECK_EQ_INT(chmod(d, 0777), 0);
    refused(d, "writable by group or others (mode 0777)");
    CHECK_EQ_INT(chmod(d, 0720), 0);
    refused(d, "writable by group or others");
    CHECK_EQ_INT(chmod(d, 0755), 0); /* readable by others is fine */
    CHECK_EQ_INT(tcf_cache_open(d), 0);
    CHECK_EQ_STR(tcf_cache_dir(), d);
    CHECK(tcf_cache_problem() == NULL);
    CHECK_EQ_INT(symlink(d, l), 0);
    refused(l, "is a symbolic link");
    snprintf(d, sizeof d, "%s/file", top);
    close(open(d, O_CREAT | O_WRONLY, 0600));
    refused(d, "is not a directory");
    snprintf(l, sizeof l, "%s/file/sub", top);
    refused(l, "cannot create");
    if (geteuid() == 0) {
        snprintf(d, sizeof d, "%s/nobody", top);
        mkdir(d, 0700);
        CHECK_EQ_INT(chown(d, 65534, 65534), 0);
        refused(d, "is owned by uid 65534, not by uid 0");
    }
    /* Good at open, world-writable since: each operation checks again, and misses. */
    fresh();
    CHECK_EQ_INT(tcf_cache_put(1, TCF_CACHE_CUBIN, "x", 1), 0);
    CHECK_EQ_INT(chmod(dir, 0777), 0);
    CHECK_EQ_INT(tcf_cache_put(2, TCF_CACHE_CUBIN, "y", 1), -1);
    CHECK_EQ_INT(get_is(1, TCF_CACHE_CUBIN, NULL), -1);
    CHECK_EQ_INT(chmod(dir, 0700), 0);
    CHECK_EQ_INT(get_is(1, TCF_CACHE_CUBIN, "x"), 0);
    /* Swapped for a link since open, even to a directory that passes every check. */
    snprintf(d, sizeof d, "%s/moved", top);
    CHECK_EQ_INT(rename(dir, d), 0);
    CHECK_EQ_INT(symlink(d, dir), 0);
    CHECK_EQ_INT(get_is(1, TCF_CACHE_CUBIN, NULL), -1);
    CHECK_EQ_INT(tcf_cache_put(2, TCF_CACHE_CUBIN, "y", 1), -1);
    CHECK_EQ_INT(names_in(d), 1);
    unlink(dir);
}

TEST(failed_write_leaves_nothing)
{
    fresh();
    char p[192];
    path_of(p, 5);
    mkdir(p, 0700);
    close(open(strcat(p, "/x"), O_CREAT | O_WRONLY, 0600)); /* rename cannot replace it */
    CHECK_EQ_INT(tcf_cache_put(5, TCF_CACHE_CUBIN, "five", 4), -1);
    CHECK_EQ_INT(names_in(dir), 1);
}

TEST(directory_resolution)
{
    char want[256], d[192];
    snprintf(d, sizeof d, "%s/a/b/c", top); /* components created 0700 */
    CHECK_EQ_INT(tcf_cache_open(d), 0);
    struct stat st;
    CHECK(stat(d, &st) == 0 && (st.st_mode & 0777) == 0700);
    snprintf(d, sizeof d, "%s/a/b", top);
    CHECK(stat(d, &st) == 0 && (st.st_mode & 0777) == 0700);
    const char *home = getenv("HOME");
    char *saved_home = home ? strdup(home) : NULL;
    setenv("TCFUSE_CACHE_DIR", top, 1), tcf_config_reload();
    CHECK_EQ_INT(tcf_cache_open(NULL), 0);
    CHECK_EQ_STR(tcf_cache_dir(), top);
    unsetenv("TCFUSE_CACHE_DIR"), tcf_config_reload();
    setenv("XDG_CACHE_HOME", top, 1);
    CHECK_EQ_INT(tcf_cache_open(NULL), 0);
    snprintf(want, sizeof want, "%s/tcfuse", top);
    CHECK_EQ_STR(tcf_cache_dir(), want);
    setenv("XDG_CACHE_HOME", "relative/xdg", 1); /* invalid per the XDG spec: ignored */
    setenv("HOME", top, 1);
    CHECK_EQ_INT(tcf_cache_open(NULL), 0);
    snprintf(want, sizeof want, "%s/.cache/tcfuse", top);
    CHECK_EQ_STR(tcf_cache_dir(), want);
    unsetenv("XDG_CACHE_HOME"), unsetenv("HOME");
    CHECK_EQ_INT(tcf_cache_open(NULL), -1);
    char cwd[256];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_EQ_INT(chdir(top), 0);
    CHECK_EQ_INT(tcf_cache_open("rel/"), 0); /* made absolute, trailing '/' dropped */
    snprintf(want, sizeof want, "%s/rel", top);
    CHECK_EQ_STR(tcf_cache_dir(), want);
    CHECK_EQ_INT(chdir(cwd), 0);
    if (saved_home) setenv("HOME", saved_home, 1);
    free(saved_home);
}

static void collect(const char *name, uint64_t key, int kind, size_t len, int ok, void *ctx)
{
    char *out = ctx;
    snprintf(out + strlen(out), 512 - strlen(out), "%llx:%d:%zu:%d ", (unsigned long long)key,
             kind, len, ok);
    CHECK(strlen(name) == 20);
}

TEST(list_and_clear)
{
    fresh();
    CHECK_EQ_INT(tcf_cache_put(0xa, TCF_CACHE_CUBIN, "abcd", 4), 0);
    CHECK_EQ_INT(tcf_cache_put(0xb, TCF_CACHE_VERDICT, "v", 1), 0);
    CHECK_EQ_INT(tcf_cache_put(0xc, TCF_CACHE_CUBIN, "zz", 2), 0);
    mangle(0xc, 33, 1, -1);
    const char *others[] = { "README", "000000000000000a.txt", "000000000000000A.tcf", "abc.tcf",
                             "000000000000000a.tcf.bak", ".tcf-tmp-not-ours" };
    char p[256], seen[512] = "";
    for (size_t i = 0; i < 6; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, others[i]);
        close(open(p, O_CREAT | O_WRONLY, 0600));
    }
    snprintf(p, sizeof p, "%s/000000000000000d.tcf", dir);
    mkdir(p, 0700); /* a directory named like an entry */
    CHECK_EQ_INT(tcf_cache_list(collect, seen), 4);
    CHECK(strstr(seen, "a:1:4:1 ") && strstr(seen, "b:2:1:1 ") && strstr(seen, "c:0:42:0 ") &&
          strstr(seen, "d:0:"));
    snprintf(p, sizeof p, "%s/.tcf-tmp.1.2.0", dir);
    close(open(p, O_CREAT | O_WRONLY, 0600));
    CHECK_EQ_INT(tcf_cache_clear(), 3);           /* the directory stays */
    CHECK_EQ_INT(access(p, F_OK), -1);            /* a leftover temporary file goes */
    for (size_t i = 0; i < 6; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, others[i]);
        CHECK_EQ_INT(access(p, F_OK), 0);
    }
    CHECK_EQ_INT(get_is(0xa, TCF_CACHE_CUBIN, NULL), 1);
}

/* Writers of one key (and readers beside them): every read is whole, the last file wins. */
static void *writer(void *arg)
{
    /* check.h's counters are not atomic: threads count their own failures. */
    long id = (long)arg, bad = 0;
    char buf[4096];
    size_t n = 1000 + 300 * (size_t)id;
    memset(buf, 'a' + id, n);
    for (int i = 0; i < 200; i++) {
        if (id % 2 && tcf_cache_put(99, TCF_CACHE_CUBIN, buf, n) != 0)
            bad++;
        void *d = NULL;
        size_t len = 0;
        int rc = tcf_cache_get(99, TCF_CACHE_CUBIN, &d, &len);
        if (rc == -1 || (rc == 0 && (len < 1000 || ((char *)d)[len - 1] != ((char *)d)[0])))
            bad++;
        free(d);
    }
    return (void *)bad;
}

TEST(concurrent_writers)
{
    fresh();
    pthread_t t[8];
    for (long i = 0; i < 8; i++) pthread_create(&t[i], NULL, writer, (void *)i);
    for (int i = 0; i < 8; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        CHECK_EQ_INT((long)bad, 0);
    }
    void *d = NULL;
    size_t len = 0;
    CHECK_EQ_INT(tcf_cache_get(99, TCF_CACHE_CUBIN, &d, &len), 0);
    CHECK(d && (len - 1000) % 300 == 0 && ((char *)d)[0] == 'a' + (int)((len - 1000) / 300));
    free(d);
    CHECK_EQ_INT(names_in(dir), 1); /* no temporary file left behind */
}

/* For cache.bats: test_cache put DIR KEY(hex) cubin|verdict TEXT */
static int put_main(char **argv)
{
    tcf_cache_kind_t kind = strcmp(argv[3], "verdict") == 0 ? TCF_CACHE_VERDICT : TCF_CACHE_CUBIN;
    if (tcf_cache_open(argv[1]) != 0) return 1;
    return tcf_cache_put(strtoull(argv[2], NULL, 16), kind, argv[4], strlen(argv[4])) ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "put") == 0)
        return put_main(argv + 1);
    umask(022);
    snprintf(top, sizeof top, "/tmp/tcf-cache-test-XXXXXX");
    if (!mkdtemp(top)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/cache", top);
    snprintf(logpath, sizeof logpath, "%s/log", top);
    setenv("TCFUSE_LOG_FILE", logpath, 1); /* the warnings, to count */
    unsetenv("TCFUSE_CACHE_DIR");
    unsetenv("TCFUSE_VERBOSE");
    tcf_config_reload();
    RUN(round_trip);
    RUN(key_sensitivity);
    RUN(no_temp_files_left);
    RUN(corrupt_entries_miss);
    RUN(links_fifos_owners_sizes_miss);
    RUN(bad_directories_disable);
    RUN(failed_write_leaves_nothing);
    RUN(directory_resolution);
    RUN(list_and_clear);
    RUN(concurrent_writers);
    check_test = "warn_once";
    CHECK_EQ_INT(count_in_log("is corrupt"), 1); /* many bad entries read, one warning */
    rm_rf(top);
    return check_main_end();
}
