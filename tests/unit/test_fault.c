/* Unit tests of fault injection (base/fault.h): the TCFUSE_FAULT parser edge by edge,
 * which call of a site fails under N, N+ and every, counting from several threads, the
 * summary line, the allocation wrappers, and the option arming the sites at start.
 */
#include "base/fault.h"
#include "config/config.h"
#include "config/config_internal.h"
#include "tests/unit/check.h"

#include <pthread.h>
#include <stdlib.h>

#define WHY(ok, s) ((ok) ? (void)0 : (void)fprintf(stderr, "    input: \"%s\"\n", (s)))

TEST(parse)
{
    static const struct { const char *s; int ok, site; uint64_t nth; int from; } t[] = {
        { "", 1, -1, 0, 0 }, { "  ", 1, -1, 0, 0 }, { NULL, 1, -1, 0, 0 },
        { "alloc", 1, TCF_FAULT_ALLOC, 1, 0 }, { " alloc ", 1, TCF_FAULT_ALLOC, 1, 0 },
        { "alloc:1", 1, TCF_FAULT_ALLOC, 1, 0 }, { "alloc:17", 1, TCF_FAULT_ALLOC, 17, 0 },
        { "alloc:3+", 1, TCF_FAULT_ALLOC, 3, 1 }, { "alloc:every", 1, TCF_FAULT_ALLOC, 1, 1 },
        { "thread", 1, TCF_FAULT_THREAD, 1, 0 }, { "nvrtc_open", 1, TCF_FAULT_NVRTC_OPEN, 1, 0 },
        { "fused_launch:1000000000000", 1, TCF_FAULT_FUSED_LAUNCH, 1000000000000ull, 0 },
        { "fused_launch:1000000000001", 0, -1, 0, 0 },
        { "fused_launch:99999999999999999999999", 0, -1, 0, 0 },
        { "alloc:0", 0, -1, 0, 0 }, { "alloc:", 0, -1, 0, 0 }, { "alloc:+", 0, -1, 0, 0 },
        { "alloc:-1", 0, -1, 0, 0 }, { "alloc:1:2", 0, -1, 0, 0 }, { "alloc:x", 0, -1, 0, 0 },
        { "alloc:3++", 0, -1, 0, 0 }, { "alloc:Every", 0, -1, 0, 0 }, { "Alloc", 0, -1, 0, 0 },
        { "allocs", 0, -1, 0, 0 }, { "all", 0, -1, 0, 0 }, { "alloc,", 0, -1, 0, 0 },
        { ",alloc", 0, -1, 0, 0 }, { "alloc,,thread", 0, -1, 0, 0 },
        { "alloc,alloc:2", 0, -1, 0, 0 },
        { "alloc :2", 0, -1, 0, 0 }, { "alloc: 2", 0, -1, 0, 0 }, { ":2", 0, -1, 0, 0 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        tcf_fault_spec_t sp;
        memset(&sp, 0x5a, sizeof sp);
        char err[128] = "";
        int rc = tcf_fault_parse(t[i].s, &sp, err, sizeof err);
        int ok = CHECK_EQ_INT(rc, t[i].ok ? 0 : -1);
        if (rc == 0) {
            for (int s = 0; s < TCF_FAULT__COUNT; s++) {
                ok &= CHECK_EQ_U64(sp.nth[s], s == t[i].site ? t[i].nth : 0);
                ok &= CHECK_EQ_INT(sp.from[s], s == t[i].site ? t[i].from : 0);
            }
        } else {
            ok &= CHECK(err[0] != '\0');
            ok &= CHECK_EQ_U64(sp.nth[0], 0x5a5a5a5a5a5a5a5aull);  /* untouched */
        }
        WHY(ok, t[i].s ? t[i].s : "(null)");
    }
    tcf_fault_spec_t sp;
    char err[128];
    CHECK_EQ_INT(tcf_fault_parse("cache_read:2, cache_write:every,cache_rename:4+ ", &sp, err,
                                 sizeof err), 0);
    CHECK_EQ_U64(sp.nth[TCF_FAULT_CACHE_READ], 2);
    CHECK_EQ_INT(sp.from[TCF_FAULT_CACHE_WRITE], 1);
    CHECK_EQ_U64(sp.nth[TCF_FAULT_CACHE_RENAME], 4);
    CHECK_EQ_INT(sp.from[TCF_FAULT_CACHE_RENAME], 1);
    CHECK_EQ_INT(tcf_fault_parse("bogus", &sp, err, sizeof err), -1);
    CHECK(strstr(err, "bogus") != NULL);
    CHECK_EQ_INT(tcf_fault_parse("alloc", &sp, NULL, 0), 0);  /* no room for a reason: fine */
    for (int s = 0; s < TCF_FAULT__COUNT; s++) {  /* every name parses back to its site */
        CHECK_EQ_INT(tcf_fault_parse(tcf_fault_name(s), &sp, NULL, 0), 0);
        CHECK_EQ_U64(sp.nth[s], 1);
    }
    CHECK_EQ_STR(tcf_fault_name(-1), "?");
    CHECK_EQ_STR(tcf_fault_name(TCF_FAULT__COUNT), "?");
}

static void arm(const char *text)
{
    tcf_fault_spec_t sp;
    if (!CHECK_EQ_INT(tcf_fault_parse(text, &sp, NULL, 0), 0))
        return;
    tcf_fault_arm(&sp);
}

/* The pattern of failures over the first n calls at s, as a string of 0 and 1. */
static const char *pattern(tcf_fault_site_t s, int n)
{
    static char out[64];
    for (int i = 0; i < n; i++)
        out[i] = (char)('0' + tcf_fault(s));
    out[n] = '\0';
    return out;
}

TEST(which_calls_fail)
{
    arm("");
    CHECK_EQ_INT(atomic_load(&tcf_fault_armed), 0);
    CHECK_EQ_STR(pattern(TCF_FAULT_ALLOC, 5), "00000");
    CHECK_EQ_U64(tcf_fault_calls(TCF_FAULT_ALLOC), 0);   /* unarmed: not even counted */
    arm("alloc:3");
    CHECK_EQ_STR(pattern(TCF_FAULT_ALLOC, 6), "001000");
    CHECK_EQ_STR(pattern(TCF_FAULT_THREAD, 3), "000");    /* other sites untouched */
    CHECK_EQ_U64(tcf_fault_calls(TCF_FAULT_ALLOC), 6);
    CHECK_EQ_U64(tcf_fault_injected(TCF_FAULT_ALLOC), 1);
    CHECK_EQ_U64(tcf_fault_calls(TCF_FAULT_THREAD), 0);
    arm("alloc:3+,thread");
    CHECK_EQ_STR(pattern(TCF_FAULT_ALLOC, 6), "001111");
    CHECK_EQ_STR(pattern(TCF_FAULT_THREAD, 3), "100");
    arm("alloc:every");
    CHECK_EQ_STR(pattern(TCF_FAULT_ALLOC, 4), "1111");
    char line[256];
    CHECK_EQ_INT((int)tcf_fault_summary(line, sizeof line), (int)strlen("alloc 4 of 4 calls"));
    CHECK_EQ_STR(line, "alloc 4 of 4 calls");
    arm("cache_read:2,alloc:5");
    (void)pattern(TCF_FAULT_CACHE_READ, 3);
    tcf_fault_summary(line, sizeof line);
    CHECK_EQ_STR(line, "cache_read 1 of 3 calls, alloc 0 of 0 calls");  /* table order */
    CHECK_EQ_INT((int)tcf_fault_summary(line, 8), 7);  /* cut, terminated */
    CHECK_EQ_STR(line, "cache_r");
    tcf_fault_arm(NULL);
    CHECK_EQ_INT((int)tcf_fault_summary(line, sizeof line), 0);
    CHECK_EQ_STR(line, "");
}

static void *hammer(void *arg)
{
    int *fails = arg;
    for (int i = 0; i < 10000; i++)
        *fails += tcf_fault(TCF_FAULT_FUSED_LAUNCH);
    return NULL;
}

TEST(threads_count_every_call_once)
{
    arm("fused_launch:25000");
    pthread_t t[4];
    int fails[4] = { 0 };
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, hammer, &fails[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_INT(fails[0] + fails[1] + fails[2] + fails[3], 1);
    CHECK_EQ_U64(tcf_fault_calls(TCF_FAULT_FUSED_LAUNCH), 40000);
    tcf_fault_arm(NULL);
}

TEST(allocations)
{
    uint64_t before = tcf_alloc_failures();
    arm("alloc:2");
    void *a = tcf_malloc(16), *b = tcf_malloc(16), *c = tcf_calloc(2, 8);
    CHECK(a != NULL), CHECK(b == NULL), CHECK(c != NULL);
    CHECK_EQ_U64(tcf_alloc_failures(), before + 1);
    arm("alloc:1");
    void *r = tcf_realloc(a, 4096);  /* fails: a stays as it was */
    CHECK(r == NULL);
    memset(a, 1, 16);
    char *s = tcf_strdup("x");       /* the second call: fine */
    CHECK_EQ_STR(s, "x");
    arm("alloc:every");
    CHECK(tcf_strdup("x") == NULL), CHECK(tcf_calloc(1, 1) == NULL);
    CHECK_EQ_U64(tcf_alloc_failures(), before + 4);
    tcf_fault_arm(NULL);
    void *z = tcf_malloc(0);         /* zero bytes: still a pointer to free */
    CHECK(z != NULL);
    free(z), free(s), free(c), free(a);
}

TEST(option_arms_at_start)
{
    setenv("TCFUSE_FAULT", "thread:2", 1);
    tcf_config_reload();
    CHECK_EQ_STR(tcf_cfg.fault, "thread:2");
    CHECK_EQ_INT(atomic_load(&tcf_fault_armed), 1);
    CHECK_EQ_STR(pattern(TCF_FAULT_THREAD, 3), "010");
    setenv("TCFUSE_FAULT", "thread:2,bogus", 1);   /* invalid: warned, nothing armed */
    setenv("TCFUSE_LOG_FILE", "/dev/null", 1);
    tcf_config_reload();
    CHECK_EQ_STR(tcf_cfg.fault, "");
    CHECK_EQ_INT(atomic_load(&tcf_fault_armed), 0);
    size_t i = 0;
    while (i < tcf_config_count() && strcmp(tcf_config_info(i)->env, "TCFUSE_FAULT"))
        i++;
    CHECK_EQ_INT(tcf_config_source(i), TCF_SRC_INVALID);
    unsetenv("TCFUSE_FAULT");
    tcf_config_reload();
    CHECK_EQ_INT(atomic_load(&tcf_fault_armed), 0);
    unsetenv("TCFUSE_LOG_FILE");
}

int main(void)
{
    RUN(parse), RUN(which_calls_fail), RUN(threads_count_every_call_once), RUN(allocations),
        RUN(option_arms_at_start);
    return check_main_end();
}
