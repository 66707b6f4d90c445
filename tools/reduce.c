/* reduce: `tcfuse reduce [options] FILE`. Every reduce_kernel launch of a recorded trace
 * through the row-reduction decoder (recognize/decode_reduce.h) and, on request, the code
 * generator (codegen/reduce.h): one line per launch with what it reduces and in which
 * order (or why it was refused), the generated source, and with --emit the source, its
 * cubin and the kernel's argument bytes in a directory, for tests/gpu/reduce_check.py to
 * run beside PyTorch's own kernel. Fixed formats, so tests can match lines. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/reduce.h"
#include "recognize/decode_reduce.h"
#include "tools/tools.h"
#include "trace/read.h"

int tcf_tool_reduce(int argc, char **argv);
void tcf_tool_help_reduce(FILE *f);

#define TCF_RED_SRC_MAX (64u << 10)

typedef struct { char *name; uint32_t np, *off, *sz; } tcf_red_kernel_t;

typedef struct {
    tcf_tool_map_t kmap;                  /* kernel id -> index into k */
    tcf_red_kernel_t *k;
    size_t nk, capk;
    char **srcs;                          /* distinct sources emitted, in order: r<i> */
    size_t nsrc, capsrc;
    const char *emit;                     /* --emit DIR */
    int arch, source;
    long long only;                       /* --launch N, or -1 */
    tcf_reduce_splice_t sp;
    long long launches, seen, decoded, failed;  /* launches: the index of the next */
    uint64_t why[TCF_DECODE_NSTATUS];
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
        "  -e, --emit DIR       write each distinct kernel to DIR/rI.cu and, compiled by\n"
        "                       NVRTC (TCFUSE_NVRTC names the library), DIR/rI.cubin; the\n"
        "                       launch's line then says kernel=rI, the launch of it and\n"
        "                       args=HEX, its argument (src and dst at bytes 0 and 8)\n"
        "  -a, --arch N         compile for sm_N (default 90)\n"
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

/* The index of src among the distinct sources, emitting it (and its cubin) when new;
 * -1 when it could not be written or compiled (said on stdout). */
static long emit_kernel(tcf_red_state_t *s, long long n)
{
    for (size_t i = 0; i < s->nsrc; i++)
        if (!strcmp(s->srcs[i], s->src))
            return (long)i;
    char name[64], log[8192] = "";
    void *cubin = NULL;
    size_t len = 0;
    snprintf(name, sizeof name, "r%zu.cu", s->nsrc);
    if (write_file(s->emit, name, s->src, strlen(s->src))) {
        printf("reduce %lld: cannot write %s/%s: %s\n", n, s->emit, name, strerror(errno));
        return -1;
    }
    if (tcf_nvrtc_compile(s->src, s->arch, &cubin, &len, log, sizeof log)) {
        printf("reduce %lld: compile error in %s/%s\n", n, s->emit, name);
        for (char *line = log, *nl; *line; line = nl + 1) {
            nl = strchr(line, '\n');
            printf("    ! %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
            if (!nl)
                break;
        }
        return -1;
    }
    snprintf(name, sizeof name, "r%zu.cubin", s->nsrc);
    int bad = write_file(s->emit, name, cubin, len);
    free(cubin);
    if (bad) {
        printf("reduce %lld: cannot write %s/%s: %s\n", n, s->emit, name, strerror(errno));
        return -1;
    }
    tcf_tool_grow((void **)&s->srcs, &s->capsrc, s->nsrc + 1, sizeof *s->srcs);
    s->srcs[s->nsrc] = tcf_tool_strdup(s->src);
    return (long)s->nsrc++;
}

/* The fields of a decoded launch, key=value, on one line. */
static void print_decoded(const tcf_reduce_t *r)
{
    const tcf_reduce_cfg_t *c = &r->cfg;
    printf(" op=%s root=%u in=%s out=%s acc=%s K=%u M=%u bw=%u bh=%u vec=%u ivs=%u vt0=%u "
           "split_y=%u shift=%u grid=%u,%u,%u smem=%u factor=0x%08x odims=%u",
           tcf_reduce_op_name(r->op), r->root, tcf_decode_dtype_name(r->in_dt),
           tcf_decode_dtype_name(r->out_dt), tcf_decode_dtype_name(r->acc_dt), c->num_inputs,
           c->num_outputs, c->block_width, c->block_height, c->vectorize_input, r->ivs, r->vt0,
           r->split_y, r->shift, c->grid[0], c->grid[1], c->grid[2], c->smem, r->factor, r->odims);
    for (unsigned d = 0; d < r->odims; d++)
        printf("%s%u:%u:%u", d ? ";" : " rows=", r->osize[d], r->ostride[d][0], r->ostride[d][1]);
    printf(" src=0x%llx dst=0x%llx", (unsigned long long)r->src, (unsigned long long)r->dst);
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
    if (st != TCF_DECODE_OK) {
        char dm[160];
        printf("reduce %lld: %s grid=%u,%u,%u block=%u,%u,%u %s\n", n, tcf_decode_reason(st),
               l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
               tcf_tool_demangle(k->name, dm, sizeof dm));
        return;
    }
    s->decoded++;
    printf("reduce %lld: ok", n);
    print_decoded(&r);
    tcf_reduce_shape_t shape;
    tcf_reduce_shape_of(&r, &shape);
    if (!s->emit && !s->source) {
        printf("\n");
        return;
    }
    if (tcf_reduce_source(&shape, &s->sp, s->src, sizeof s->src) < 0) {
        printf(" source=error\n");
        s->failed++;
        return;
    }
    if (s->emit) {
        tcf_reduce_args_t a;
        uint32_t grid[3], block[3];
        fflush(stdout);
        long ki = emit_kernel(s, n);
        if (ki < 0) {
            s->failed++;
            return;
        }
        tcf_reduce_args_of(&r, &a);
        tcf_reduce_launch_dims(&shape, r.cfg.num_outputs, grid, block);
        printf(" kernel=r%ld lgrid=%u,%u,%u lblock=%u,%u,%u args=", ki, grid[0], grid[1], grid[2],
               block[0], block[1], block[2]);
        for (size_t i = 0; i < sizeof a; i++)
            printf("%02x", ((const uint8_t *)&a)[i]);
    }
    printf("\n");
    if (s->source)
        for (const char *line = s->src, *nl; *line; line = nl + 1) {
            nl = strchr(line, '\n');
            printf("    | %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
            if (!nl)
                break;
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
        { "arch", required_argument, NULL, 'a' },   { "launch", required_argument, NULL, 'n' },
        { "prologue", required_argument, NULL, O_PRO }, { "epilogue", required_argument, NULL, O_EPI },
        { "row-pass", required_argument, NULL, O_ROW }, { "helpers", required_argument, NULL, O_HELP },
        { "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
    };
    tcf_red_state_t *s = memset(tcf_tool_realloc(NULL, sizeof *s), 0, sizeof *s);
    const char **spf[] = { &s->sp.prologue, &s->sp.epilogue, &s->sp.row_pass, &s->sp.helpers };
    char *end, err[512];
    int c, rc = TCF_EXIT_USAGE;
    s->arch = 90, s->only = -1;
    optind = 1, opterr = 0;
    while ((c = getopt_long(argc, argv, "se:a:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 's': s->source = 1; break;
        case 'e': s->emit = optarg; break;
        case 'a':
        case 'n': {
            long long v = strtoll(optarg, &end, 10);
            if (*optarg == 0 || *end != 0 || v < 0 || (c == 'a' && (v < 50 || v > 1000))) {
                fprintf(stderr, "tcfuse reduce: bad value '%s' for --%s\n", optarg,
                        c == 'a' ? "arch" : "launch");
                goto out;
            }
            if (c == 'a') s->arch = (int)v;
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
                    optopt && strchr("ean", optopt) ? "missing value for" : "unknown", argv[optind - 1]);
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
    for (size_t i = 0; i < s->nsrc; i++) free(s->srcs[i]);
    for (size_t i = 0; i < 4; i++) free((void *)*spf[i]);
    free(s->k), free(s->srcs);
    tcf_tool_map_free(&s->kmap);
    free(s);
    return rc;
}
