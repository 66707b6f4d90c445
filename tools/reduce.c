/* reduce: `tcfuse reduce [options] FILE`. Every reduce_kernel launch of a recorded trace
 * through the row-reduction decoder (recognize/decode_reduce.h) and, on request, the code
 * generator (codegen/reduce.h): one line per launch with what it reduces and in which
 * order (or why it was refused), the generated source, and with --emit the source, its
 * cubin and the kernel's argument bytes in a directory, for tests/gpu/reduce_check.py to
 * run beside PyTorch's own kernel. Fixed formats, so tests can match lines. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/reduce.h"
#include "recognize/decode_reduce.h"
#include "tools/tools.h"
#include "trace/read.h"

int tcf_tool_reduce(int argc, char **argv);
void tcf_tool_help_reduce(FILE *f);

#define TCF_RED_SRC_MAX (64u << 10)

typedef struct { char *name; uint32_t np, *off, *sz; } tcf_red_kernel_t;

/* One reduce_kernel launch, printed once every kernel is compiled (in parallel). */
typedef struct {
    char *text;                           /* "reduce N: ..." without the newline */
    char *tail;                           /* " kernel=rI ... args=HEX" (--emit), or NULL */
    long src;                             /* its kernel among the distinct ones; -1 none */
} tcf_red_rec_t;

/* A distinct kernel: its source and, with --emit, how its compile went. */
typedef struct {
    char *text, *log;
    int rc;
} tcf_red_src_t;

typedef struct {
    tcf_tool_map_t kmap;                  /* kernel id -> index into k */
    tcf_red_kernel_t *k;
    size_t nk, capk;
    tcf_red_src_t *srcs;                  /* distinct sources, in order of first use: rI */
    size_t nsrc, capsrc;
    tcf_red_rec_t *recs;
    size_t nrec, caprec;
    const char *emit;                     /* --emit DIR */
    int arch, source, jobs;
    long long only;                       /* --launch N, or -1 */
    tcf_reduce_splice_t sp;
    long long launches, seen, decoded, failed;  /* launches: the index of the next */
    uint64_t why[TCF_DECODE_NSTATUS];
    atomic_size_t next;                   /* the compile workers' next source */
    char src[TCF_RED_SRC_MAX];
} tcf_red_state_t;

void tcf_tool_help_reduce(FILE *f)
{
    fprintf(f,
        "usage: tcfuse reduce [options] FILE\n"
        "\n"
        "Decodes every reduce_kernel launch of a trace (TCFUSE_TRACE=FILE) as a row\n"
        "reduction: one line per launch, \"reduce N: ok\" and what it reduces in which\n"
        "order (op, dtypes, K elements into each of M outputs, block, vector width,\n"
        "pointers), or \"reduce N: REASON\" when its order cannot be reproduced; counts\n"
        "by reason at the end.\n"
        "\n"
        "options:\n"
        "  -s, --source         print the kernel generated for each decoded launch\n"
        "  -e, --emit DIR       write each distinct kernel to DIR/rI.cu (DIR is made when\n"
        "                       missing) and, compiled by NVRTC (TCFUSE_NVRTC names the\n"
        "                       library), to DIR/rI.cubin; each launch's line then says\n"
        "                       kernel=rI, lgrid and lblock (its launch) and args=HEX, its\n"
        "                       argument (src and dst at bytes 0 and 8)\n"
        "  -a, --arch N         compile for sm_N (default 90)\n"
        "  -j, --jobs N         compile on N threads (default: the CPUs, at most 16)\n"
        "  -n, --launch N       only the N-th reduce_kernel launch (from 0)\n"
        "      --prologue FILE  splice FILE's code into the kernels (codegen/reduce.h):\n"
        "      --epilogue FILE  the bodies of tcf_pro, tcf_epi, tcf_rowpass, and helper\n"
        "      --row-pass FILE  functions placed before them\n"
        "      --helpers FILE\n"
        "  -h, --help           this text\n");
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t len = 0, cap = 4096;
    char *s = tcf_tool_realloc(NULL, cap);
    for (size_t n; (n = fread(s + len, 1, cap - len - 1, f)) > 0;) {
        len += n;
        if (cap - len < 2)
            s = tcf_tool_realloc(s, cap *= 2);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(s);
        return NULL;
    }
    s[len] = '\0';
    return s;
}

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* The index of s->src among the distinct sources, added when new. */
static long source_index(tcf_red_state_t *s)
{
    for (size_t i = 0; i < s->nsrc; i++)
        if (!strcmp(s->srcs[i].text, s->src))
            return (long)i;
    tcf_tool_grow((void **)&s->srcs, &s->capsrc, s->nsrc + 1, sizeof *s->srcs);
    s->srcs[s->nsrc] = (tcf_red_src_t){ tcf_tool_strdup(s->src), NULL, 0 };
    return (long)s->nsrc++;
}

/* Writes rI.cu and, compiled, rI.cubin for each distinct source; on s->jobs threads (a
 * trace of thousands of launches has hundreds of kernels; NVRTC compiles concurrently). */
static void *compile_worker(void *arg)
{
    tcf_red_state_t *s = arg;
    for (size_t i; (i = atomic_fetch_add(&s->next, 1)) < s->nsrc;) {
        tcf_red_src_t *k = &s->srcs[i];
        char name[64], log[8192] = "";
        void *cubin = NULL;
        size_t len = 0;
        snprintf(name, sizeof name, "r%zu.cu", i);
        if (write_file(s->emit, name, k->text, strlen(k->text))) {
            snprintf(log, sizeof log, "cannot write %s/%s: %s", s->emit, name, strerror(errno));
            k->rc = -1;
        } else if (tcf_nvrtc_compile(k->text, s->arch, &cubin, &len, log, sizeof log)) {
            k->rc = -1;
        } else {
            snprintf(name, sizeof name, "r%zu.cubin", i);
            if (write_file(s->emit, name, cubin, len)) {
                snprintf(log, sizeof log, "cannot write %s/%s: %s", s->emit, name, strerror(errno));
                k->rc = -1;
            }
        }
        free(cubin);
        k->log = k->rc ? tcf_tool_strdup(log) : NULL;
    }
    return NULL;
}

static void compile_all(tcf_red_state_t *s)
{
    pthread_t th[64];
    int n = s->jobs < 1 ? 1 : s->jobs > 64 ? 64 : s->jobs, started = 0;
    atomic_store(&s->next, 0);
    for (int i = 0; i < n; i++)
        started += pthread_create(&th[started], NULL, compile_worker, s) == 0;
    if (!started)
        compile_worker(s);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* printf into a new string. */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    char *p = tcf_tool_realloc(NULL, (size_t)(n < 0 ? 0 : n) + 1);
    va_start(ap, f);
    vsnprintf(p, (size_t)(n < 0 ? 0 : n) + 1, f, ap);
    va_end(ap);
    return p;
}

/* The fields of a decoded launch, key=value, on one line. */
static char *decoded_text(long long n, const tcf_reduce_t *r)
{
    const tcf_reduce_cfg_t *c = &r->cfg;
    char rows[TCF_OP_MAX_DIMS * 40 + 8] = "";
    size_t len = 0;
    for (unsigned d = 0; d < r->odims && d < TCF_OP_MAX_DIMS; d++)
        len += (size_t)snprintf(rows + len, sizeof rows - len, "%s%u:%u:%u", d ? ";" : " rows=",
                                r->osize[d], r->ostride[d][0], r->ostride[d][1]);
    return fmt("reduce %lld: ok op=%s root=%u in=%s out=%s acc=%s K=%u M=%u bw=%u bh=%u vec=%u "
               "ivs=%u vt0=%u split_y=%u shift=%u grid=%u,%u,%u smem=%u factor=0x%08x odims=%u%s "
               "src=0x%llx dst=0x%llx", n, tcf_reduce_op_name(r->op), r->root,
               tcf_decode_dtype_name(r->in_dt), tcf_decode_dtype_name(r->out_dt),
               tcf_decode_dtype_name(r->acc_dt), c->num_inputs, c->num_outputs, c->block_width,
               c->block_height, c->vectorize_input, r->ivs, r->vt0, r->split_y, r->shift,
               c->grid[0], c->grid[1], c->grid[2], c->smem, r->factor, r->odims, rows,
               (unsigned long long)r->src, (unsigned long long)r->dst);
}

static void on_launch(tcf_red_state_t *s, const tcf_trace_launch_t *l, const tcf_red_kernel_t *k)
{
    long long n = s->launches++;
    if (s->only >= 0 && n != s->only)
        return;
    s->seen++;
    tcf_decode_launch_t d = { k->name, k->np, k->off, k->sz, l->params, (uint32_t)l->params_len,
                              { l->grid[0], l->grid[1], l->grid[2] },
                              { l->block[0], l->block[1], l->block[2] } };
    tcf_reduce_t r;
    tcf_decode_status_t st = tcf_decode_reduce(&d, &r);
    s->why[st < TCF_DECODE_NSTATUS ? st : TCF_DECODE_BAD_ARGS]++;
    tcf_tool_grow((void **)&s->recs, &s->caprec, s->nrec + 1, sizeof *s->recs);
    tcf_red_rec_t *rec = &s->recs[s->nrec++];
    *rec = (tcf_red_rec_t){ NULL, NULL, -1 };
    if (st != TCF_DECODE_OK) {
        /* where it reads and writes, when its layout is known: a caller can still tell
         * which of its reductions this launch was */
        char dm[160], ptrs[64] = "";
        tcf_decode_reduce_kernel_t rk;
        if (tcf_decode_reduce_kernel(&d, &rk) == TCF_DECODE_OK && l->params_len >= rk.span) {
            uint64_t src, dst;
            memcpy(&src, l->params + rk.src_off, 8), memcpy(&dst, l->params + rk.src_off + 8, 8);
            snprintf(ptrs, sizeof ptrs, " src=0x%llx dst=0x%llx", (unsigned long long)src,
                     (unsigned long long)dst);
        }
        rec->text = fmt("reduce %lld: %s grid=%u,%u,%u block=%u,%u,%u%s %s", n, tcf_decode_reason(st),
                        l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
                        ptrs, tcf_tool_demangle(k->name, dm, sizeof dm));
        return;
    }
    s->decoded++;
    rec->text = decoded_text(n, &r);
    if (!s->emit && !s->source)
        return;
    tcf_reduce_shape_t shape;
    tcf_reduce_shape_of(&r, &shape);
    if (tcf_reduce_source(&shape, &s->sp, s->src, sizeof s->src) < 0) {
        rec->tail = fmt(" source=error");
        s->failed++;
        return;
    }
    rec->src = source_index(s);
    if (s->emit) {
        tcf_reduce_args_t a;
        uint32_t grid[3], block[3];
        char hex[2 * sizeof a + 1];
        tcf_reduce_args_of(&r, &a);
        tcf_reduce_launch_dims(&shape, r.cfg.num_outputs, grid, block);
        for (size_t i = 0; i < sizeof a; i++)
            snprintf(hex + 2 * i, 3, "%02x", ((const uint8_t *)&a)[i]);
        rec->tail = fmt(" kernel=r%ld lgrid=%u,%u,%u lblock=%u,%u,%u args=%s", rec->src, grid[0],
                        grid[1], grid[2], block[0], block[1], block[2], hex);
    }
}

static void print_lines(const char *prefix, const char *text)
{
    for (const char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        printf("%s%.*s\n", prefix, nl ? (int)(nl - line) : (int)strlen(line), line);
        if (!nl)
            break;
    }
}

/* Every launch's line in order; a kernel that did not compile is said, with NVRTC's log,
 * at its first launch. */
static void print_records(tcf_red_state_t *s)
{
    for (size_t i = 0; i < s->nrec; i++) {
        const tcf_red_rec_t *rec = &s->recs[i];
        tcf_red_src_t *k = rec->src >= 0 ? &s->srcs[rec->src] : NULL;
        if (s->emit && k && k->rc) {
            printf("%s error=compile kernel=r%ld\n", rec->text, rec->src);
            if (k->log) {
                print_lines("    ! ", k->log);
                free(k->log), k->log = NULL;
            }
            s->failed++;
            continue;
        }
        printf("%s%s\n", rec->text, rec->tail ? rec->tail : "");
        if (s->source && k)
            print_lines("    | ", k->text);
    }
}

static int run_reduce(tcf_red_state_t *s, const char *path)
{
    tcf_trace_event_t ev;
    tcf_trace_reader_t *r = tcf_trace_read_open(path);
    int rc, created;
    if (!r) {
        fprintf(stderr, "tcfuse reduce: %s: %s\n", path, strerror(errno));
        return TCF_EXIT_FAIL;
    }
    while ((rc = tcf_trace_read_next(r, &ev)) == 1) {
        if (ev.ev == TCF_TRACE_EV_KERNEL) {
            const tcf_trace_kernel_t *k = &ev.u.kernel;
            if (strncmp(k->name, "_ZN2at6native13reduce_kernelI", 29))
                continue;                 /* PyTorch's reduce_kernel only */
            size_t *slot = tcf_tool_map_u64(&s->kmap, (uint64_t)k->id, &created);
            if (!created)
                continue;
            *slot = s->nk;
            tcf_tool_grow((void **)&s->k, &s->capk, s->nk + 1, sizeof *s->k);
            tcf_red_kernel_t *rk = &s->k[s->nk++];
            rk->name = tcf_tool_strdup(k->name);
            rk->np = (uint32_t)k->nparams;
            rk->off = tcf_tool_realloc(NULL, (k->nparams + 1) * sizeof *rk->off);
            rk->sz = tcf_tool_realloc(NULL, (k->nparams + 1) * sizeof *rk->sz);
            for (size_t i = 0; i < k->nparams; i++)
                rk->off[i] = k->params[i].offset, rk->sz[i] = k->params[i].size;
        } else if (ev.ev == TCF_TRACE_EV_LAUNCH) {
            size_t *ki = tcf_tool_map_get_u64(&s->kmap, (uint64_t)ev.u.launch.k);
            if (ki)
                on_launch(s, &ev.u.launch, &s->k[*ki]);
        }
    }
    tcf_trace_read_close(r);
    if (rc < 0) {
        fprintf(stderr, "tcfuse reduce: %s: %s\n", path, strerror(errno));
        return TCF_EXIT_FAIL;
    }
    if (s->emit)
        compile_all(s);
    print_records(s);
    printf("summary: %lld reduce_kernel launches, %lld decoded", s->seen, s->decoded);
    for (int st = 1; st < TCF_DECODE_NSTATUS; st++)
        if (s->why[st])
            printf(", %llu %s", (unsigned long long)s->why[st], tcf_decode_reason((tcf_decode_status_t)st));
    printf("\n");
    if (s->emit)
        printf("kernels: %zu distinct, written to %s (sm_%d, NVRTC %s)\n", s->nsrc, s->emit, s->arch,
               tcf_nvrtc_version());
    return s->failed ? TCF_EXIT_FAIL : TCF_EXIT_OK;
}

int tcf_tool_reduce(int argc, char **argv)
{
    enum { O_PRO = 256, O_EPI, O_ROW, O_HELP };
    static const struct option opts[] = {
        { "source", no_argument, NULL, 's' },       { "emit", required_argument, NULL, 'e' },
        { "jobs", required_argument, NULL, 'j' },
        { "arch", required_argument, NULL, 'a' },   { "launch", required_argument, NULL, 'n' },
        { "prologue", required_argument, NULL, O_PRO }, { "epilogue", required_argument, NULL, O_EPI },
        { "row-pass", required_argument, NULL, O_ROW }, { "helpers", required_argument, NULL, O_HELP },
        { "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
    };
    tcf_red_state_t *s = memset(tcf_tool_realloc(NULL, sizeof *s), 0, sizeof *s);
    const char **spf[] = { &s->sp.prologue, &s->sp.epilogue, &s->sp.row_pass, &s->sp.helpers };
    char err[512];
    int c, rc = TCF_EXIT_USAGE;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s->arch = 90, s->only = -1, s->jobs = cpus < 1 ? 1 : cpus > 16 ? 16 : (int)cpus;
    optind = 1, opterr = 0;
    while ((c = getopt_long(argc, argv, "se:a:n:j:h", opts, NULL)) != -1) {
        switch (c) {
        case 's': s->source = 1; break;
        case 'e': s->emit = optarg; break;
        case 'a':
        case 'n':
        case 'j': {
            long long v;
            if (tcf_tool_int(optarg, c == 'a' ? 50 : c == 'j' ? 1 : 0,
                             c == 'a' ? 1000 : c == 'j' ? 64 : INT64_MAX, &v) != 0) {
                fprintf(stderr, "tcfuse reduce: bad value '%s' for --%s\n", optarg,
                        c == 'a' ? "arch" : c == 'j' ? "jobs" : "launch");
                goto out;
            }
            if (c == 'a') s->arch = (int)v;
            else if (c == 'j') s->jobs = (int)v;
            else s->only = v;
            break;
        }
        case O_PRO: case O_EPI: case O_ROW: case O_HELP:
            if (!(*spf[c - O_PRO] = slurp(optarg))) {
                fprintf(stderr, "tcfuse reduce: %s: %s\n", optarg, strerror(errno));
                rc = TCF_EXIT_FAIL;
                goto out;
            }
            break;
        case 'h': tcf_tool_help_reduce(stdout); rc = TCF_EXIT_OK; goto out;
        default:
            fprintf(stderr, "tcfuse reduce: %s option '%s'\n",
                    optopt && strchr("eanj", optopt) ? "missing value for" : "unknown", argv[optind - 1]);
            tcf_tool_help_reduce(stderr);
            goto out;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "tcfuse reduce: %s\n", optind >= argc ? "no trace file given"
                                                              : "one trace file at a time");
        tcf_tool_help_reduce(stderr);
        goto out;
    }
    if (s->emit && mkdir(s->emit, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "tcfuse reduce: --emit %s: %s\n", s->emit, strerror(errno));
        rc = TCF_EXIT_FAIL;
        goto out;
    }
    if (s->emit && tcf_nvrtc_open(getenv("TCFUSE_NVRTC"), err, sizeof err) != 0) {
        fprintf(stderr, "tcfuse reduce: --emit: NVRTC unavailable: %s\n", err);
        rc = TCF_EXIT_FAIL;
        goto out;
    }
    rc = run_reduce(s, argv[optind]);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tcfuse reduce: write failed\n");
        rc = TCF_EXIT_FAIL;
    }
out:
    for (size_t i = 0; i < s->nk; i++) free(s->k[i].name), free(s->k[i].off), free(s->k[i].sz);
    for (size_t i = 0; i < s->nsrc; i++) free(s->srcs[i].text), free(s->srcs[i].log);
    for (size_t i = 0; i < s->nrec; i++) free(s->recs[i].text), free(s->recs[i].tail);
    for (size_t i = 0; i < 4; i++) free((void *)*spf[i]);
    free(s->k), free(s->srcs), free(s->recs);
    tcf_tool_map_free(&s->kmap);
    free(s);
    return rc;
}
