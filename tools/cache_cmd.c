/* cache_cmd: `tcfuse cache ls|clear|verify|dir`. Goes through the library's own cache
 * code (cache/cache.h), so the command finds the directory the library would
 * (TCFUSE_CACHE_DIR, else $XDG_CACHE_HOME/tcfuse, else ~/.cache/tcfuse) and judges each
 * entry by the very checks a load makes. */
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "config/config.h"
#include "tools/tools.h"

/* Declared in tools/tcfuse.c too, until tools.h (shared with other work) takes them. */
int tcf_tool_cache(int argc, char **argv);
void tcf_tool_help_cache(FILE *f);

typedef struct {
    char name[32];
    uint64_t key;
    int kind;
    size_t len;
    int ok;
} tcf_tool_entry_t;

typedef struct {
    tcf_tool_entry_t *v;
    size_t n, cap;
} tcf_tool_entries_t;

void tcf_tool_help_cache(FILE *f)
{
    fprintf(f,
        "usage: tcfuse cache ls|clear|verify|dir\n"
        "\n"
        "The disk cache of compiled kernels and verification verdicts: $TCFUSE_CACHE_DIR,\n"
        "else $XDG_CACHE_HOME/tcfuse, else ~/.cache/tcfuse.\n"
        "\n"
        "  ls       one line per entry (key, kind, bytes, ok or CORRUPT), then a total\n"
        "  clear    remove every entry; other files in the directory are left alone\n"
        "  verify   check every entry's frame and checksum; exit 1 if any is corrupt\n"
        "  dir      print the directory, or why it cannot be used (exit 1)\n");
}

static void tcf_tool_cache_collect(const char *name, uint64_t key, int kind, size_t len,
                                   int ok, void *ctx)
{
    tcf_tool_entries_t *es = ctx;
    tcf_tool_grow((void **)&es->v, &es->cap, es->n + 1, sizeof *es->v);
    tcf_tool_entry_t *e = &es->v[es->n++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->key = key;
    e->kind = kind;
    e->len = len;
    e->ok = ok;
}

static int tcf_tool_cache_cmp(const void *a, const void *b)
{
    return strcmp(((const tcf_tool_entry_t *)a)->name, ((const tcf_tool_entry_t *)b)->name);
}

static const char *tcf_tool_cache_kind(int kind)
{
    return kind == TCF_CACHE_CUBIN     ? "cubin"
         : kind == TCF_CACHE_VERDICT ? "verdict"
         : kind == TCF_CACHE_PROGRAM ? "program"
                                     : "?";
}

/* ls and verify: every entry, in name order (readdir's order would change between runs). */
static int tcf_tool_cache_scan(const char *dir, int verify)
{
    tcf_tool_entries_t es = { 0 };
    if (tcf_cache_list(tcf_tool_cache_collect, &es) < 0) {
        fprintf(stderr, "tcfuse cache: cannot read %s\n", dir);
        free(es.v);
        return TCF_EXIT_FAIL;
    }
    if (es.n)
        qsort(es.v, es.n, sizeof *es.v, tcf_tool_cache_cmp);
    unsigned long long bytes = 0;
    size_t bad = 0;
    for (size_t i = 0; i < es.n; i++) {
        const tcf_tool_entry_t *e = &es.v[i];
        bytes += e->len;
        bad += !e->ok;
        if (!verify)
            printf("%016llx  %-7s  %10zu  %s\n", (unsigned long long)e->key,
                   tcf_tool_cache_kind(e->kind), e->len, e->ok ? "ok" : "CORRUPT");
        else if (!e->ok)
            printf("CORRUPT %s/%s\n", dir, e->name);
    }
    if (verify)
        printf("verify: %zu entries, %zu corrupt\n", es.n, bad);
    else
        printf("total: %zu entries, %llu bytes, %zu corrupt\n", es.n, bytes, bad);
    free(es.v);
    if (fflush(stdout) != 0)
        return TCF_EXIT_FAIL;
    return verify && bad ? TCF_EXIT_FAIL : TCF_EXIT_OK;
}

int tcf_tool_cache(int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : NULL;
    if (sub && (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0)) {
        tcf_tool_help_cache(stdout);
        return TCF_EXIT_OK;
    }
    int known = sub && (strcmp(sub, "ls") == 0 || strcmp(sub, "clear") == 0 ||
                        strcmp(sub, "verify") == 0 || strcmp(sub, "dir") == 0);
    if (!sub) {  /* asked for nothing: the usage */
        tcf_tool_help_cache(stderr);
        return TCF_EXIT_USAGE;
    }
    if (!known)
        return tcf_tool_bad_usage("cache", "no subcommand '%s': ls, clear, verify or dir", sub);
    if (argc > 2)
        return tcf_tool_bad_usage("cache", "%s takes no arguments", sub);
    /* The command says why the directory is unusable itself, below; the library's
     * warning would say the same a second time. Errors still come through. */
    tcf_config_load();
    if (tcf_cfg.verbose > TCF_LOG_ERROR)
        tcf_cfg.verbose = TCF_LOG_ERROR;
    if (tcf_cache_open(NULL) != 0) {
        const char *why = tcf_cache_problem();
        fprintf(stderr, "tcfuse cache: %s\n", why ? why : "the cache directory is unusable");
        return TCF_EXIT_FAIL;
    }
    const char *dir = tcf_cache_dir();
    if (strcmp(sub, "dir") == 0) {
        printf("%s\n", dir);
        return fflush(stdout) == 0 ? TCF_EXIT_OK : TCF_EXIT_FAIL;
    }
    if (strcmp(sub, "clear") == 0) {
        int n = tcf_cache_clear();
        if (n < 0) {
            fprintf(stderr, "tcfuse cache: cannot clear %s\n", dir);
            return TCF_EXIT_FAIL;
        }
        printf("removed %d entr%s from %s\n", n, n == 1 ? "y" : "ies", dir);
        return fflush(stdout) == 0 ? TCF_EXIT_OK : TCF_EXIT_FAIL;
    }
    return tcf_tool_cache_scan(dir, strcmp(sub, "verify") == 0);
}
