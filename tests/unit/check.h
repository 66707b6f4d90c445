/* check.h: a tiny assertion library for tcfuse's C unit tests.
 *
 * Conventions: include it in exactly one file per test binary. A failed check prints
 * file:line, the test, the expression and both values, then the test goes on (one run
 * shows every broken edge). main ends with `return check_main_end();`, which prints
 * "<binary>: N checks passed, M failed" and returns 0 only when nothing failed.
 *
 *   TEST(parse_bool) { CHECK_EQ_INT(f(1), 2); }
 *   int main(void) { RUN(parse_bool); return check_main_end(); }
 */
#ifndef TCF_CHECK_H
#define TCF_CHECK_H

#include <errno.h> /* program_invocation_short_name (GNU) */
#include <stdio.h>
#include <string.h>

static unsigned check_passed, check_failed;
static const char *check_test = "(none)";

/* Counts one check; on failure prints where, what, and the detail (may be NULL). */
static inline int check_report(int ok, const char *file, int line, const char *expr,
                               const char *detail)
{
    if (ok) {
        check_passed++;
        return 1;
    }
    check_failed++;
    fprintf(stderr, "%s:%d: FAIL in %s: %s\n", file, line, check_test, expr);
    if (detail)
        fprintf(stderr, "    %s\n", detail);
    fflush(stderr);
    return 0;
}

static inline int check_eq_int(long long a, long long b, const char *ea, const char *eb,
                               const char *file, int line)
{
    char expr[512], detail[128];
    snprintf(expr, sizeof expr, "%s == %s", ea, eb);
    snprintf(detail, sizeof detail, "left: %lld, right: %lld", a, b);
    return check_report(a == b, file, line, expr, detail);
}

static inline int check_eq_u64(unsigned long long a, unsigned long long b, const char *ea,
                               const char *eb, const char *file, int line)
{
    char expr[512], detail[160];
    snprintf(expr, sizeof expr, "%s == %s", ea, eb);
    snprintf(detail, sizeof detail, "left: %llu (0x%llx), right: %llu (0x%llx)", a, a, b, b);
    return check_report(a == b, file, line, expr, detail);
}

static inline int check_eq_str(const char *a, const char *b, const char *ea, const char *eb,
                               const char *file, int line)
{
    char expr[512], detail[1024];
    int ok = (a && b) ? strcmp(a, b) == 0 : a == b;
    snprintf(expr, sizeof expr, "%s == %s", ea, eb);
    snprintf(detail, sizeof detail, "left: %s%s%s, right: %s%s%s", a ? "\"" : "",
             a ? a : "NULL", a ? "\"" : "", b ? "\"" : "", b ? b : "NULL", b ? "\"" : "");
    return check_report(ok, file, line, expr, detail);
}

/* On a difference, shows the first differing offset and up to 16 bytes from there. */
static inline int check_eq_mem(const void *a, const void *b, size_t n, const char *ea,
                               const char *eb, const char *file, int line)
{
    const unsigned char *x = a, *y = b;
    char expr[512], detail[256];
    size_t i = 0;
    while (i < n && x[i] == y[i])
        i++;
    snprintf(expr, sizeof expr, "memcmp(%s, %s, %zu) == 0", ea, eb, n);
    if (i == n)
        return check_report(1, file, line, expr, NULL);
    int len = snprintf(detail, sizeof detail, "first difference at byte %zu; left:", i);
    for (size_t k = i; k < n && k < i + 16; k++)
        len += snprintf(detail + len, sizeof detail - (size_t)len, " %02x", x[k]);
    len += snprintf(detail + len, sizeof detail - (size_t)len, "; right:");
    for (size_t k = i; k < n && k < i + 16; k++)
        len += snprintf(detail + len, sizeof detail - (size_t)len, " %02x", y[k]);
    return check_report(0, file, line, expr, detail);
}

#define CHECK(cond) check_report(!!(cond), __FILE__, __LINE__, #cond, NULL)
#define CHECK_EQ_INT(a, b) check_eq_int((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_U64(a, b) \
    check_eq_u64((unsigned long long)(a), (unsigned long long)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_STR(a, b) check_eq_str((a), (b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_MEM(a, b, n) check_eq_mem((a), (b), (n), #a, #b, __FILE__, __LINE__)

#define TEST(name) static void test_##name(void)
#define RUN(name) (check_test = #name, test_##name(), check_test = "(none)")

static inline int check_main_end(void)
{
    printf("%s: %u checks passed, %u failed\n", program_invocation_short_name, check_passed,
           check_failed);
    fflush(stdout);
    return check_failed ? 1 : 0;
}

#endif
