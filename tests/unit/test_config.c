/* Unit tests of config/: tcf_config_load, tcf_log/tcf_out, help and print (the pure
 * parsers are in test_config_parse.c).
 *
 * tcf_config_load is once per process, so main runs the public load once (from several
 * threads) after setting the environment it needs; later scenarios use the internal
 * tcf_config_reload. Output is checked by reading back TCFUSE_LOG_FILE, or stderr after
 * pointing fd 2 at a file.
 */
#include "config/config.h"
#include "config/config_internal.h"
#include "tests/unit/check.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define TCF_OPT(field, kind, def, lo, hi, help) +1
static const size_t n_rows = 0
#include "config/options.def"
    ;
#undef TCF_OPT

static char tmpdir[] = "/tmp/tcf_test_config.XXXXXX";
static char text[1 << 18]; /* the last file read back */
static int saved_stderr = -1;

static const char *tmp(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static const char *slurp(const char *path)
{
    int fd = open(path, O_RDONLY);
    ssize_t n = fd < 0 ? 0 : read(fd, text, sizeof text - 1);
    text[n > 0 ? n : 0] = '\0';
    if (fd >= 0)
        close(fd);
    return text;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void stderr_to(const char *path)
{
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
}

static void stderr_back(void)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
}

static size_t opt(const char *env)
{
    for (size_t i = 0; i < tcf_config_count(); i++)
        if (strcmp(tcf_config_info(i)->env, env) == 0)
            return i;
    return (size_t)-1;
}

static void env_clear(void)
{
    for (size_t i = 0; i < tcf_config_count(); i++)
        unsetenv(tcf_config_info(i)->env);
}

/* Reloads with stderr captured; returns what was printed there. */
static const char *reload_quiet(void)
{
    stderr_to(tmp("stderr"));
    tcf_config_reload();
    stderr_back();
    return slurp(tmp("stderr"));
}

#define WHY(ok, s) ((ok) ? (void)0 : (void)fprintf(stderr, "    input: \"%s\"\n", (s)))

/* Before the config is loaded, tcf_log uses verbosity 1 and stderr, and loads nothing. */
TEST(log_before_load)
{
    CHECK(!tcf_config_is_loaded());
    stderr_to(tmp("early"));
    errno = 1234;
    tcf_log(TCF_LOG_WARN, "early %d", 7);
    int e = errno;
    tcf_log(TCF_LOG_INFO, "hidden");
    tcf_log(TCF_LOG_ERROR, "err\n");
    tcf_out("out");
    stderr_back();
    CHECK_EQ_INT(e, 1234);
    CHECK_EQ_STR(slurp(tmp("early")), "tcfuse: early 7\ntcfuse: err\ntcfuse: out\n");
    CHECK(!tcf_config_is_loaded());
}

static void *load_thread(void *arg)
{
    tcf_config_load();
    *(int *)arg = (int)tcf_cfg.mode;
    return NULL;
}

/* The one public load: eight threads race into it; all see the loaded values. */
TEST(load)
{
    char trace[512], log[512];
    snprintf(trace, sizeof trace, "%s/trace.%%p.jsonl ", tmpdir);
    snprintf(log, sizeof log, "%s/log.%ld", tmpdir, (long)getpid());
    setenv("TCFUSE_MODE", " OFF ", 1), setenv("TCFUSE_STATS", "yes", 1);
    setenv("TCFUSE_TRACE", trace, 1), setenv("TCFUSE_TRACE_LIMIT", "4 MiB", 1);
    setenv("TCFUSE_LOG_FILE", tmp("log.%p"), 1), setenv("TCFUSE_VERBOSE", "2", 1);
    setenv("TCFUSE_PRINT_CONFIG", "on", 1), setenv("TCFUSE_WINDOW_MAX", "bogus", 1);
    setenv("TCFUSE_IDLE_US", "-5", 1), setenv("TCFUSE_BACKTRACE_DEPTH", "33", 1);
    pthread_t th[8];
    int seen[8];
    stderr_to(tmp("stderr"));
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, load_thread, &seen[i]);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    stderr_back();
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(seen[i], TCF_MODE_OFF);
    CHECK_EQ_STR(slurp(tmp("stderr")), ""); /* everything went to the log file */
    CHECK(tcf_config_is_loaded());
    CHECK_EQ_INT(tcf_cfg.stats, 1);
    CHECK_EQ_STR(tcf_cfg.trace, trace); /* verbatim, trailing space and %p included */
    CHECK_EQ_INT(tcf_cfg.trace_limit, 4 << 20);
    CHECK_EQ_INT(tcf_cfg.verbose, 2);
    CHECK_EQ_INT(tcf_cfg.window_max, 256);
    CHECK_EQ_INT(tcf_cfg.idle_us, 200);
    CHECK_EQ_INT(tcf_cfg.backtrace_depth, 8);
    CHECK_EQ_INT(tcf_cfg.backtrace, 0);
    CHECK_EQ_INT(tcf_config_source(opt("TCFUSE_MODE")), TCF_SRC_ENV);
    CHECK_EQ_INT(tcf_config_source(opt("TCFUSE_WINDOW_MAX")), TCF_SRC_INVALID);
    CHECK_EQ_INT(tcf_config_source(opt("TCFUSE_BACKTRACE_DEPTH")), TCF_SRC_INVALID);
    CHECK_EQ_INT(tcf_config_source(opt("TCFUSE_BACKTRACE")), TCF_SRC_DEFAULT);
    const char *out = slurp(log);
    CHECK(strstr(out, "tcfuse: TCFUSE_WINDOW_MAX=\"bogus\" is not valid (expected an integer "
                      "in [1, 65536]); keeping the default 256\n"));
    CHECK(strstr(out, "TCFUSE_IDLE_US=\"-5\" is not valid"));
    CHECK(strstr(out, "TCFUSE_BACKTRACE_DEPTH=\"33\" is not valid"));
    CHECK_EQ_INT(count(out, "is not valid"), 3);
    CHECK(strstr(out, "tcfuse: TCFUSE_MODE=off (environment)\n"));
    CHECK(strstr(out, "tcfuse: TCFUSE_TRACE_LIMIT=4MiB (environment)\n"));
    CHECK(strstr(out, "tcfuse: TCFUSE_WINDOW_MAX=256 (invalid \"bogus\": kept default)\n"));
    CHECK(strstr(out, "tcfuse: TCFUSE_BACKTRACE=0 (default)\n"));
    for (size_t i = 0; i < tcf_config_count(); i++) {
        char want[96], warn[96]; /* one printed line each; a warning has ="value" */
        snprintf(want, sizeof want, "tcfuse: %s=", tcf_config_info(i)->env);
        snprintf(warn, sizeof warn, "tcfuse: %s=\"", tcf_config_info(i)->env);
        WHY(CHECK_EQ_INT(count(out, want) - count(out, warn), 1), want);
    }
    setenv("TCFUSE_MODE", "observe", 1);
    tcf_config_load(); /* once: the environment is not read again */
    CHECK_EQ_INT(tcf_cfg.mode, TCF_MODE_OFF);
}

TEST(reload)
{
    env_clear();
    CHECK_EQ_STR(reload_quiet(), ""); /* nothing set: nothing printed */
    for (size_t i = 0; i < tcf_config_count(); i++)
        CHECK_EQ_INT(tcf_config_source(i), TCF_SRC_DEFAULT);
    CHECK_EQ_INT(tcf_cfg.mode, TCF_MODE_OBSERVE);
    CHECK_EQ_INT(tcf_cfg.trace_limit, 256 << 20);
    CHECK_EQ_STR(tcf_cfg.trace, "");
    setenv("TCFUSE_VERBOSE", "", 1), setenv("TCFUSE_MODE", "   ", 1), setenv("TCFUSE_TRACE", "", 1);
    const char *err = reload_quiet();
    CHECK_EQ_INT(tcf_config_source(opt("TCFUSE_VERBOSE")), TCF_SRC_INVALID);
    CHECK_EQ_INT(tcf_config_source(opt("TCFUSE_MODE")), TCF_SRC_INVALID);
    CHECK_EQ_INT(tcf_config_source(opt("TCFUSE_TRACE")), TCF_SRC_ENV);
    CHECK(strstr(err, "tcfuse: TCFUSE_MODE=\"   \" is not valid (expected one of off, observe, fuse, graph, full)"));
    CHECK(strstr(err, "TCFUSE_VERBOSE=\"\" is not valid"));
    static char big[TCF_OPT_STR_MAX + 1];
    memset(big, 'a', TCF_OPT_STR_MAX - 1);
    env_clear(), setenv("TCFUSE_TRACE", big, 1);
    CHECK_EQ_STR(reload_quiet(), "");
    CHECK_EQ_INT(strlen(tcf_cfg.trace), TCF_OPT_STR_MAX - 1);
    big[TCF_OPT_STR_MAX - 1] = 'a';
    setenv("TCFUSE_TRACE", big, 1), setenv("TCFUSE_TRACE_LIMIT", "1.5M", 1);
    err = reload_quiet();
    CHECK_EQ_STR(tcf_cfg.trace, "");
    CHECK_EQ_INT(tcf_cfg.trace_limit, 256 << 20);
    CHECK(strstr(err, "TCFUSE_TRACE=\"aaaa"));
    CHECK(strstr(err, "a...\" is not valid (expected text of at most 4095 bytes)"));
    CHECK(strstr(err, "TCFUSE_TRACE_LIMIT=\"1.5M\" is not valid (expected a size in "
                      "[64KiB, 1TiB]"));
    env_clear(), setenv("TCFUSE_VERBOSE", "0", 1), setenv("TCFUSE_STATS", "maybe\x1b", 1);
    CHECK_EQ_STR(reload_quiet(), ""); /* verbose 0: errors only */
    CHECK_EQ_INT(tcf_config_source(opt("TCFUSE_STATS")), TCF_SRC_INVALID);
    setenv("TCFUSE_PRINT_CONFIG", "1", 1);
    CHECK(strstr(reload_quiet(), "tcfuse: TCFUSE_STATS=0 (invalid \"maybe?\": kept default)\n"));
}

TEST(log_output)
{
    env_clear(), setenv("TCFUSE_LOG_FILE", tmp("cap.log"), 1), setenv("TCFUSE_VERBOSE", "3", 1);
    tcf_config_reload();
    for (int i = 0; i < 1005; i++)
        tcf_log(TCF_LOG_DEBUG, "line %d", i);
    tcf_out("after cap");
    const char *s = slurp(tmp("cap.log"));
    CHECK_EQ_INT(count(s, "\n"), 1002);
    CHECK(strstr(s, "tcfuse: line 0\ntcfuse: line 1\n") == s);
    CHECK(strstr(s, "tcfuse: line 999\ntcfuse: further messages suppressed (1000 printed)\n"));
    CHECK(!strstr(s, "line 1000"));
    CHECK_EQ_INT(strcmp(s + strlen(s) - 18, "tcfuse: after cap\n"), 0);

    setenv("TCFUSE_LOG_FILE", tmp("lvl.log"), 1), setenv("TCFUSE_VERBOSE", "1", 1);
    tcf_config_reload();
    static char big[2000];
    memset(big, 'x', sizeof big - 1);
    errno = 77;
    tcf_log(TCF_LOG_INFO, "info");
    tcf_log(TCF_LOG_WARN, "warn\n");
    tcf_log(TCF_LOG_ERROR, "%s", big);
    CHECK_EQ_INT(errno, 77);
    s = slurp(tmp("lvl.log"));
    CHECK_EQ_INT(strncmp(s, "tcfuse: warn\ntcfuse: xxx", 24), 0);
    CHECK_EQ_INT(strlen(s), 13 + 1024); /* the long line is cut to 1 KiB, newline included */
    CHECK_EQ_STR(s + strlen(s) - 5, "x...\n");

    setenv("TCFUSE_LOG_FILE", tmp("no/such/dir.log"), 1);
    stderr_to(tmp("stderr"));
    tcf_config_reload();
    tcf_log(TCF_LOG_WARN, "to stderr");
    stderr_back();
    s = slurp(tmp("stderr"));
    CHECK(strstr(s, "tcfuse: cannot open TCFUSE_LOG_FILE=\"") == s);
    CHECK(strstr(s, "dir.log\" (No such file or directory); writing to stderr\n"
                    "tcfuse: to stderr\n"));
}

TEST(table_help)
{
    CHECK_EQ_INT(tcf_config_count(), n_rows);
    CHECK(tcf_config_info(n_rows) == NULL);
    CHECK_EQ_INT(tcf_config_source(n_rows), TCF_SRC_DEFAULT);
    CHECK_EQ_STR(tcf_config_info(opt("TCFUSE_MODE"))->def_text, "observe");
    CHECK_EQ_STR(tcf_config_info(opt("TCFUSE_TRACE_LIMIT"))->def_text, "256MiB");
    CHECK_EQ_STR(tcf_config_info(opt("TCFUSE_VERBOSE"))->def_text, "1");
    CHECK_EQ_STR(tcf_config_info(opt("TCFUSE_TRACE"))->def_text, "");
    CHECK_EQ_INT(tcf_config_info(opt("TCFUSE_IDLE_US"))->hi, 10000000);
    char *help = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&help, &len);
    tcf_config_help(f);
    fclose(f);
    CHECK(strstr(help, "256MiB") && strstr(help, "[64KiB, 1TiB]") && strstr(help, "off|observe"));
    long col = -1;
    for (size_t i = 0; i < n_rows; i++) {
        const tcf_opt_info_t *o = tcf_config_info(i);
        CHECK_EQ_INT(strspn(o->env, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"), strlen(o->env));
        char want[96];
        snprintf(want, sizeof want, "\n  %s ", o->env);
        const char *line = strstr(help, want), *h = line ? strstr(line, o->help) : NULL;
        WHY(CHECK(line && h), o->env);
        if (i == 0 && h)
            col = h - line;
        WHY(CHECK_EQ_INT(h ? h - line : -2, col), o->env); /* the help column is aligned */
    }
    free(help);
}

int main(void)
{
    if (!mkdtemp(tmpdir))
        return perror("mkdtemp"), 1;
    env_clear();
    RUN(log_before_load), RUN(load), RUN(reload), RUN(log_output), RUN(table_help);
    env_clear();
    tcf_config_reload(); /* closes the log file */
    DIR *d = opendir(tmpdir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            unlink(tmp(e->d_name));
    if (d)
        closedir(d);
    rmdir(tmpdir);
    return check_main_end();
}
