/* Unit tests of config/'s pure parsers (tcf_parse_*) and of tcf_expand_path: every
 * accepted spelling, whitespace, emptiness, bounds (inclusive) and overflow edges.
 * Each table row is one input; a failing row prints the input after the check.
 */
#include "config/config.h"
#include "tests/unit/check.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#define WHY(ok, s) ((ok) ? (void)0 : (void)fprintf(stderr, "    input: \"%s\"\n", (s)))

TEST(parse_bool)
{
    static const struct { const char *s; int ok, v; } t[] = {
        { "1", 1, 1 }, { "0", 1, 0 }, { "true", 1, 1 }, { "TRUE", 1, 1 }, { "True", 1, 1 },
        { "false", 1, 0 }, { "FaLsE", 1, 0 }, { "on", 1, 1 }, { "ON", 1, 1 }, { "off", 1, 0 },
        { "Off", 1, 0 }, { "yes", 1, 1 }, { "YES", 1, 1 }, { "no", 1, 0 }, { "No", 1, 0 },
        { " on", 1, 1 }, { "off\t", 1, 0 }, { "\t yes \n", 1, 1 },
        { "", 0, 0 }, { "  ", 0, 0 }, { "2", 0, 0 }, { "-1", 0, 0 }, { "01", 0, 0 },
        { "tru", 0, 0 }, { "onn", 0, 0 }, { "o n", 0, 0 }, { "y", 0, 0 }, { "enable", 0, 0 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int v = 42, rc = tcf_parse_bool(t[i].s, &v);
        WHY(CHECK_EQ_INT(rc, t[i].ok ? 0 : -1) & CHECK_EQ_INT(v, t[i].ok ? t[i].v : 42), t[i].s);
    }
    int v = 42;
    CHECK_EQ_INT(tcf_parse_bool(NULL, &v), -1);
}

TEST(parse_int)
{
    static const struct { const char *s; long long lo, hi; int ok; long long v; } t[] = {
        { "0", 0, 3, 1, 0 }, { "3", 0, 3, 1, 3 }, { "-1", 0, 3, 0, 0 }, { "4", 0, 3, 0, 0 },
        { " 42 ", LLONG_MIN, LLONG_MAX, 1, 42 }, { "+7", 0, 9, 1, 7 }, { "007", 0, 9, 1, 7 },
        { "-5", -5, 5, 1, -5 }, { "-6", -5, 5, 0, 0 }, { "\t-0\n", 0, 0, 1, 0 },
        { "9223372036854775807", LLONG_MIN, LLONG_MAX, 1, LLONG_MAX },
        { "9223372036854775808", LLONG_MIN, LLONG_MAX, 0, 0 },
        { "-9223372036854775808", LLONG_MIN, LLONG_MAX, 1, LLONG_MIN },
        { "-9223372036854775809", LLONG_MIN, LLONG_MAX, 0, 0 },
        { "18446744073709551616", LLONG_MIN, LLONG_MAX, 0, 0 },
        { "99999999999999999999999", LLONG_MIN, LLONG_MAX, 0, 0 },
        { "", 0, 9, 0, 0 }, { " ", 0, 9, 0, 0 }, { "-", 0, 9, 0, 0 }, { "+", 0, 9, 0, 0 },
        { "1x", 0, 9, 0, 0 }, { "0x10", 0, 99, 0, 0 }, { "1 2", 0, 99, 0, 0 },
        { "- 1", -9, 9, 0, 0 }, { "1.0", 0, 9, 0, 0 }, { "1e3", 0, 9999, 0, 0 },
        { "--1", -9, 9, 0, 0 }, { "4K", 0, 9999, 0, 0 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        long long v = 42;
        int rc = tcf_parse_int(t[i].s, t[i].lo, t[i].hi, &v);
        WHY(CHECK_EQ_INT(rc, t[i].ok ? 0 : -1) & CHECK_EQ_INT(v, t[i].ok ? t[i].v : 42), t[i].s);
    }
}

TEST(parse_size)
{
    const long long K = 1024, M = K * K, G = M * K, T = G * K, MAX = LLONG_MAX;
    const struct { const char *s; long long lo, hi; int ok; long long v; } t[] = {
        { "4096", 0, MAX, 1, 4096 }, { "0", 0, MAX, 1, 0 }, { "4K", 0, MAX, 1, 4 * K },
        { "4k", 0, MAX, 1, 4 * K }, { "4KiB", 0, MAX, 1, 4 * K }, { "4kib", 0, MAX, 1, 4 * K },
        { "4M", 0, MAX, 1, 4 * M }, { "4m", 0, MAX, 1, 4 * M }, { "4MiB", 0, MAX, 1, 4 * M },
        { "4 MiB", 0, MAX, 1, 4 * M }, { "4 m", 0, MAX, 1, 4 * M }, { "1G", 0, MAX, 1, G },
        { "1GiB", 0, MAX, 1, G }, { "2gib", 0, MAX, 1, 2 * G }, { "1T", 0, MAX, 1, T },
        { "3TiB", 0, MAX, 1, 3 * T }, { " 4MiB\t", 0, MAX, 1, 4 * M }, { "4 ", 0, MAX, 1, 4 },
        { "9223372036854775807", 0, MAX, 1, MAX }, { "9223372036854775808", 0, MAX, 0, 0 },
        { "8388607T", 0, MAX, 1, 8388607 * T }, { "8388608T", 0, MAX, 0, 0 },
        { "9007199254740991K", 0, MAX, 1, 9007199254740991 * K },
        { "9007199254740992K", 0, MAX, 0, 0 },
        { "99999999999999999999K", 0, MAX, 0, 0 },
        { "64K", 64 * K, T, 1, 64 * K }, { "65535", 64 * K, T, 0, 0 }, { "1TiB", 64 * K, T, 1, T },
        { "1099511627777", 64 * K, T, 0, 0 },
        { "", 0, MAX, 0, 0 }, { " ", 0, MAX, 0, 0 }, { "-1", -9, MAX, 0, 0 },
        { "-4K", -T, MAX, 0, 0 }, { "+4K", 0, MAX, 0, 0 }, { "1.5M", 0, MAX, 0, 0 },
        { "4  MiB", 0, MAX, 0, 0 }, { "4\tMiB", 0, MAX, 0, 0 }, { "4MB", 0, MAX, 0, 0 },
        { "4KB", 0, MAX, 0, 0 }, { "4B", 0, MAX, 0, 0 }, { "4Mi", 0, MAX, 0, 0 },
        { "4MiBx", 0, MAX, 0, 0 }, { "4X", 0, MAX, 0, 0 }, { "M", 0, MAX, 0, 0 },
        { "4 M iB", 0, MAX, 0, 0 }, { "4P", 0, MAX, 0, 0 }, { "0x10", 0, MAX, 0, 0 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        long long v = 42;
        int rc = tcf_parse_size(t[i].s, t[i].lo, t[i].hi, &v);
        WHY(CHECK_EQ_INT(rc, t[i].ok ? 0 : -1) & CHECK_EQ_INT(v, t[i].ok ? t[i].v : 42), t[i].s);
    }
}

TEST(parse_mode)
{
    static const struct { const char *s; int ok; tcf_mode_t v; } t[] = {
        { "off", 1, TCF_MODE_OFF }, { "OFF", 1, TCF_MODE_OFF }, { "observe", 1, TCF_MODE_OBSERVE },
        { "ObSeRvE", 1, TCF_MODE_OBSERVE }, { " observe\n", 1, TCF_MODE_OBSERVE },
        { "", 0, 0 }, { " ", 0, 0 }, { "fuse", 1, TCF_MODE_FUSE }, { "FUSE ", 1, TCF_MODE_FUSE }, { "fused", 0, 0 }, { "graph", 1, TCF_MODE_GRAPH }, { "Graph", 1, TCF_MODE_GRAPH }, { "graphs", 0, 0 }, { "full", 1, TCF_MODE_FULL }, { "FULL", 1, TCF_MODE_FULL }, { "fully", 0, 0 }, { "0", 0, 0 }, { "1", 0, 0 },
        { "observ", 0, 0 }, { "off observe", 0, 0 }, { "offf", 0, 0 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        tcf_mode_t v = (tcf_mode_t)42;
        int rc = tcf_parse_mode(t[i].s, &v);
        int want = t[i].ok ? (int)t[i].v : 42;
        WHY(CHECK_EQ_INT(rc, t[i].ok ? 0 : -1) & CHECK_EQ_INT(v, want), t[i].s);
    }
    CHECK_EQ_STR(tcf_mode_name(TCF_MODE_OFF), "off");
    CHECK_EQ_STR(tcf_mode_name(TCF_MODE_OBSERVE), "observe");
    CHECK_EQ_STR(tcf_mode_name((tcf_mode_t)99), "?");
}

TEST(expand_path)
{
    char pid[32], want[128], out[128];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    snprintf(want, sizeof want, "/tmp/x.%s.log", pid);
    CHECK_EQ_INT(tcf_expand_path("/tmp/x.%p.log", out, sizeof out), 0);
    CHECK_EQ_STR(out, want);
    snprintf(want, sizeof want, "%s%s", pid, pid);
    CHECK_EQ_INT(tcf_expand_path("%p%p", out, sizeof out), 0);
    CHECK_EQ_STR(out, want);
    CHECK_EQ_INT(tcf_expand_path("a%%p %x %", out, sizeof out), 0);
    CHECK_EQ_STR(out, "a%p %x %");
    CHECK_EQ_INT(tcf_expand_path("", out, sizeof out), 0);
    CHECK_EQ_STR(out, "");
    CHECK_EQ_INT(tcf_expand_path("abcd", out, 5), 0); /* exactly fits */
    CHECK_EQ_STR(out, "abcd");
    CHECK_EQ_INT(tcf_expand_path("abcde", out, 5), -1);
    CHECK_EQ_STR(out, "");
    CHECK_EQ_INT(tcf_expand_path("%p", out, strlen(pid)), -1);
    CHECK_EQ_INT(tcf_expand_path("", out, 0), -1);
    /* %r: the rank torchrun gave the process, else "pid" and the pid */
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    snprintf(want, sizeof want, "/tmp/t.pid%s.jsonl", pid);
    CHECK_EQ_INT(tcf_expand_path("/tmp/t.%r.jsonl", out, sizeof out), 0);
    CHECK_EQ_STR(out, want);
    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "8", 1);
    CHECK_EQ_INT(tcf_expand_path("/tmp/t.%r.%p.jsonl", out, sizeof out), 0);
    snprintf(want, sizeof want, "/tmp/t.3.%s.jsonl", pid);
    CHECK_EQ_STR(out, want);
    CHECK_EQ_INT(tcf_expand_path("%%r", out, sizeof out), 0);
    CHECK_EQ_STR(out, "%r");
    char r[10], w[10];
    CHECK_EQ_INT(tcf_rank(r, w), 1);
    CHECK_EQ_STR(r, "3");
    CHECK_EQ_STR(w, "8");
    setenv("RANK", "3x", 1);   /* not a number: no rank */
    CHECK_EQ_INT(tcf_rank(r, w), 0);
    setenv("RANK", "1234567890", 1);   /* ten digits: no rank */
    CHECK_EQ_INT(tcf_rank(r, w), 0);
    setenv("RANK", "2", 1);
    unsetenv("WORLD_SIZE");
    CHECK_EQ_INT(tcf_rank(r, w), 0);
    unsetenv("RANK");
}

int main(void)
{
    RUN(parse_bool), RUN(parse_int), RUN(parse_size), RUN(parse_mode), RUN(expand_path);
    return check_main_end();
}
