/* codegen_cli: generated kernels for tests/gpu/verify_ops.py, without Python bindings.
 *
 *   codegen_cli [--arch N] [--nvrtc PATH] OUTDIR < SPECS
 *
 * Reads groups from stdin, one block each:
 *   group NAME vec V
 *   buf DT                                   (one line per buffer, in order)
 *   op KIND t=DT r=DT o=DT [sarg=none|self|other|a|b] [mode=N]
 *          in=SRC:DT[,SRC:DT...] out=bN|- [sc=IDX:DT[,IDX:DT]]   (SRC: bN buffer, oN op)
 *   end
 * DT: f32 f16 bf16 bool; KIND: the names of codegen/op.h (ADD, CMP_SCALAR, ...).
 * Writes OUTDIR/NAME.cu (the source) and OUTDIR/NAME.cubin (NVRTC, sm_ARCH), and prints
 * "NAME ok" or "NAME fail: REASON" per group, then "nvrtc VERSION". Exit 0 unless the
 * input could not be read or NVRTC could not be opened.
 *
 * Build: cc -std=c11 -D_GNU_SOURCE -I. -I/usr/local/cuda/include tests/gpu/codegen_cli.c \
 *        build/libtcfuse.a -ldl -lpthread -o /tmp/codegen_cli */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

static const char *const kinds[] = {
#define CLI_NAME_(id) #id,
    TCF_OP_KINDS(CLI_NAME_)
#undef CLI_NAME_
};

static int dt_of(const char *s, tcf_dtype_t *d)
{
    static const char *const names[] = { "none", "f32", "f16", "bf16", "bool" };
    for (int i = 1; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *d = (tcf_dtype_t)i;
            return 0;
        }
    return -1;
}

/* "b3" -> 3, "o2" -> TCF_SRC_OP | 2 */
static int src_of(const char *s, uint8_t *v)
{
    char *end;
    long n = strtol(s + 1, &end, 10);
    if (*end || n < 0 || n > 127 || (s[0] != 'b' && s[0] != 'o'))
        return -1;
    *v = (uint8_t)(s[0] == 'o' ? TCF_SRC_OP | n : n);
    return 0;
}

/* "SRC:DT,SRC:DT" or "IDX:DT,...": up to 3 pairs; the count or -1. */
static int pairs(char *s, uint8_t *idx, tcf_dtype_t *dt, int scalar)
{
    int n = 0;
    char *save = NULL;
    for (char *p = strtok_r(s, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(p, ':');
        if (!colon || n == 3)
            return -1;
        *colon = '\0';
        if (scalar)
            idx[n] = (uint8_t)atoi(p);
        else if (src_of(p, &idx[n]))
            return -1;
        if (dt_of(colon + 1, &dt[n]))
            return -1;
        n++;
    }
    return n;
}

static int parse_op(char *line, tcf_gop_t *o)
{
    char *save = NULL, *tok = strtok_r(line, " \t\n", &save);
    int nk = (int)(sizeof kinds / sizeof kinds[0]), k;
    memset(o, 0, sizeof *o);
    o->out_buf = TCF_NO_STORE;
    tok = strtok_r(NULL, " \t\n", &save);
    for (k = 0; tok && k < nk && strcmp(tok, kinds[k]); k++)
        ;
    if (!tok || k == nk)
        return -1;
    o->kind = (tcf_op_kind_t)k;
    while ((tok = strtok_r(NULL, " \t\n", &save)) != NULL) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return -1;
        *eq++ = '\0';
        int bad = 0, n;
        if (!strcmp(tok, "t"))
            bad = dt_of(eq, &o->compute_dt);
        else if (!strcmp(tok, "r"))
            bad = dt_of(eq, &o->res_dt);
        else if (!strcmp(tok, "o"))
            bad = dt_of(eq, &o->out_dt);
        else if (!strcmp(tok, "mode"))
            o->mode = (uint8_t)atoi(eq);
        else if (!strcmp(tok, "sarg"))
            o->sarg = !strcmp(eq, "self") ? TCF_SARG_SELF : !strcmp(eq, "other") ? TCF_SARG_OTHER
                    : !strcmp(eq, "a") ? TCF_SARG_A : !strcmp(eq, "b") ? TCF_SARG_B : TCF_SARG_NONE;
        else if (!strcmp(tok, "in")) {
            n = !strcmp(eq, "-") ? 0 : pairs(eq, o->in_src, o->in_dt, 0);   /* -: a fill's */
            bad = n < 0 || (n == 0 && strcmp(eq, "-"));
            o->nin = (uint8_t)(bad ? 0 : n);
        } else if (!strcmp(tok, "sc")) {
            n = pairs(eq, o->scalar_arg, o->scalar_dt, 1);
            bad = n < 0 || n > 2;
            o->nscalar = (uint8_t)(bad ? 0 : n);
        }
        else if (!strcmp(tok, "out"))
            bad = strcmp(eq, "-") && src_of(eq, &o->out_buf);
        else
            bad = 1;
        if (bad)
            return -1;
    }
    return 0;
}

static int emit(const char *dir, const char *name, const tcf_group_t *g, int arch)
{
    static char src[1 << 20];
    char path[4096], log[16384];
    void *cubin = NULL;
    size_t len = 0;
    int n = tcf_codegen_source(g, src, sizeof src);
    if (n < 0) {
        printf("%s fail: tcf_codegen_source refused the group\n", name);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s.cu", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fwrite(src, 1, (size_t)n, f);
        fclose(f);
    }
    if (tcf_nvrtc_compile(src, arch, &cubin, &len, log, sizeof log)) {
        printf("%s fail: nvrtc: %s\n", name, strtok(log, "\n") ? log : "?");
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s.cubin", dir, name);
    f = fopen(path, "wb");
    int ok = f && fwrite(cubin, 1, len, f) == len;
    if (f)
        fclose(f);
    free(cubin);
    printf(ok ? "%s ok\n" : "%s fail: cannot write the cubin\n", name);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *nvrtc = NULL;
    int arch = 90;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--arch") && i + 1 < argc)
            arch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--nvrtc") && i + 1 < argc)
            nvrtc = argv[++i];
        else
            dir = argv[i];
    }
    char err[1024], line[4096], name[256] = "";
    if (!dir) {
        fprintf(stderr, "usage: codegen_cli [--arch N] [--nvrtc PATH] OUTDIR < SPECS\n");
        return 2;
    }
    if (tcf_nvrtc_open(nvrtc ? nvrtc : getenv("TCFUSE_NVRTC"), err, sizeof err)) {
        fprintf(stderr, "codegen_cli: %s\n", err);
        return 3;
    }
    tcf_group_t g;
    int bad = 0;
    memset(&g, 0, sizeof g);
    while (fgets(line, sizeof line, stdin)) {
        unsigned vec;
        tcf_dtype_t d;
        char word[64];
        if (sscanf(line, "group %255s vec %u", name, &vec) == 2) {
            memset(&g, 0, sizeof g);
            g.vec = (uint8_t)vec, g.nscalars = TCF_GROUP_MAX_SCALARS, bad = 0;
        } else if (sscanf(line, "buf %63s", word) == 1) {
            if (g.nbufs >= TCF_GROUP_MAX_BUFS || dt_of(word, &d))
                bad = 1;
            else
                g.buf_dt[g.nbufs++] = d;
        } else if (!strncmp(line, "op ", 3)) {
            if (g.nops >= TCF_GROUP_MAX_OPS || parse_op(line, &g.ops[g.nops]))
                bad = 1;
            else
                g.nops++;
        } else if (!strncmp(line, "end", 3)) {
            if (bad)
                printf("%s fail: unparsed spec\n", name);
            else
                emit(dir, name, &g, arch);
            fflush(stdout);
        }
    }
    printf("nvrtc %s\n", tcf_nvrtc_version());
    return 0;
}
