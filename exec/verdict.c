/* Verdicts: what the disk cache keeps about a generated source beside its cubin, "ok" or
 * "no" for this NVRTC and architecture; and each decoded kernel's own check (its op alone,
 * generated, against the original), whose verdict is keyed by the op's source, the
 * kernel's name and the identity of the code it came from (recognize/images.c), so that a
 * kernel changed under the same name meets no old verdict. */
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "exec/internal.h"

/* The verdict the disk cache holds for a source (a group's, or a kernel's own check):
 * 1 verified, 0 failed, -1 none. */
int tcf_verdict_get(const char *src, int arch)
{
    void *v = NULL;
    size_t vlen = 0;
    int r = -1;
    uint64_t vk = tcf_cache_key(TCF_CACHE_VERDICT, src, tcf_nvrtc_version(), arch);
    if (tcf_cache_get(vk, TCF_CACHE_VERDICT, &v, &vlen) == 0 && vlen == 2)
        r = !memcmp(v, "ok", 2) ? 1 : !memcmp(v, "no", 2) ? 0 : -1;
    free(v);
    return r;
}

void tcf_verdict_put(const char *src, int arch, int ok)
{
    tcf_cache_put(tcf_cache_key(TCF_CACHE_VERDICT, src, tcf_nvrtc_version(), arch),
                  TCF_CACHE_VERDICT, ok ? "ok" : "no", 2);
}

int tcf_verdict_ok(const char *src, int arch)
{
    return tcf_verdict_get(src, arch) == 1;
}


/* The key of a kernel's own verdict, in vsrc: its op's generated source (in src), the
 * kernel's name, and the identity of the code it came from (images.c), so that a kernel
 * changed under the same name meets no old verdict. -1 when the op cannot be generated
 * alone; 0 when the code is unknown (then no verdict is read or kept); 1 otherwise. */
static int tcf_kernel_vsrc(const tcf_orig_t *o, tcf_kernel_t *k, tcf_fgroup_t *fg, char *src,
                           char *vsrc)
{
    if (tcf_fuser_single(&o->op, fg) != 0 || tcf_codegen_source(&fg->g, src, TCF_SRC_MAX) < 0)
        return -1;
    uint64_t code = tcf_kernel_code(k);
    snprintf(vsrc, TCF_SRC_MAX + 600, "%s\n// decodes %.500s\n// from code %016llx\n", src,
             k->name, (unsigned long long)code);
    return code != 0;
}

/* Checks one original's decoding before any group with its kernel is used: the generated
 * kernel of its op alone against the original on scratch edge values. A mismatch
 * disables the kernel for the process (its launches are never held or planned again)
 * and is reported. Verdicts, good and bad, are kept on disk (tcf_kernel_vsrc). *s is the
 * worker's stream, created here when first needed. 1 good, 0 bad, -1 could not check. */
int tcf_kernel_check(const tcf_fjob_t *job, uint32_t j, int arch, int cache, CUstream *s)
{
    const tcf_orig_t *o = &job->orig[j];
    if (o->is_red)   /* a row reduction has no kernel of its own: its group's check is its */
        return 1;
    tcf_kernel_t *k = tcf_kernel_get(o->f);
    int kv = atomic_load(&k->verdict);
    if (kv != TCF_KV_UNKNOWN)
        return kv == TCF_KV_OK;
    tcf_fjob_t *one = tcf_calloc(1, sizeof *one);
    tcf_fgroup_t *fg = tcf_malloc(sizeof *fg);
    char *src = tcf_malloc(TCF_SRC_MAX), *vsrc = tcf_malloc(TCF_SRC_MAX + 600);
    void *cubin = NULL;
    size_t clen = 0;
    int rc = -1, from_disk, keep;
    char why[200] = "";
    CUfunction fn;
    CUmodule mod = NULL;  /* the op's kernel serves this check only: unloaded after it */
    if (!one || !fg || !src || !vsrc)
        goto out;
    if ((keep = tcf_kernel_vsrc(o, k, fg, src, vsrc)) < 0) {
        snprintf(why, sizeof why, "its op cannot be generated alone");
        goto out;
    }
    if (!keep)  /* its verdict cannot be kept: checked anew in every process */
        atomic_fetch_add(&tcf_fkc.code_unknown, 1);
    keep &= cache;
    if (keep && (rc = tcf_verdict_get(vsrc, arch)) >= 0)
        goto out;
    if (tcf_cubin_for(src, arch, cache, &cubin, &clen, &from_disk) != 0 ||
        !tcf_load_mod(cubin, &fn, &mod)) {
        mod = NULL;
        snprintf(why, sizeof why, "its generated kernel would not compile or load");
        goto out;
    }
    if (!*s && tcf_drv.stream_create(s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        *s = NULL;
        snprintf(why, sizeof why, "no stream to check it on");
        goto out;
    }
    one->ctx = job->ctx, one->g = fg->g, one->args = fg->args, one->n = fg->n;
    one->norig = 1;
    one->orig[0] = *o;
    atomic_fetch_add(&tcf_fkc.kernels_checked, 1);
    int r = tcf_fuse_verify(one, fn, *s, why, sizeof why);  /* synchronizes its stream */
    rc = r == 0 ? 1 : r > 0 ? 0 : -1;
    if (keep && rc >= 0)
        tcf_verdict_put(vsrc, arch, rc);
out:
    if (mod && tcf_drv.module_unload)
        tcf_drv.module_unload(mod);
    if (rc >= 0) {
        atomic_store(&k->verdict, rc ? TCF_KV_OK : TCF_KV_BAD);
        if (!rc) {
            atomic_store(&k->fuse_state, TCF_FUSE_NEVER);
            atomic_fetch_add(&tcf_fkc.kernel_mismatch, 1);
            tcf_log(TCF_LOG_INFO, "fuse: kernel %.200s does not compute what it decodes to "
                    "(%s/%s, vec %u): never fused in this process%s%s", k->name,
                    tcf_decode_kind_name(o->op.kind), tcf_decode_dtype_name(o->op.out_dt),
                    fg->g.vec, why[0] ? ": " : " (verdict from the disk cache)", why);
        }
    } else {
        tcf_log(TCF_LOG_INFO, "fuse: kernel %.200s could not be checked: %s", k->name,
                why[0] ? why : "out of memory");
        char what[72];
        snprintf(what, sizeof what, "%s/%s alone", tcf_decode_kind_name(o->op.kind),
                 tcf_decode_dtype_name(o->op.out_dt));
        tcf_unable_note(what, why);
    }
    free(cubin);
    free(vsrc);
    free(src);
    free(fg);
    free(one);
    return rc;
}

/* Whether every original of a job is known to decode right, in this process or by a
 * verdict on disk for the same code; runs nothing. */
static int tcf_kernels_known_good(const tcf_fjob_t *job, int arch)
{
    tcf_fgroup_t *fg = NULL;
    char *src = NULL, *vsrc = NULL;
    int good = 1;
    for (uint32_t j = 0; j < job->norig && good; j++) {
        if (job->orig[j].is_red)   /* checked within its group's verdict */
            continue;
        tcf_kernel_t *k = tcf_kernel_get(job->orig[j].f);
        int kv = atomic_load(&k->verdict);
        if (kv != TCF_KV_UNKNOWN) {
            good = kv == TCF_KV_OK;
            continue;
        }
        if (!fg && (!(fg = tcf_malloc(sizeof *fg)) || !(src = tcf_malloc(TCF_SRC_MAX)) ||
                    !(vsrc = tcf_malloc(TCF_SRC_MAX + 600))))
            good = 0;
        else if (tcf_kernel_vsrc(&job->orig[j], k, fg, src, vsrc) <= 0 ||
                 tcf_verdict_get(vsrc, arch) != 1)
            good = 0;
        else
            atomic_store(&k->verdict, TCF_KV_OK);
    }
    free(vsrc);
    free(src);
    free(fg);
    return good;
}

/* The disk cache knows this source as compiled and verified, and each of its originals as
 * decoded right: load it now. Until the worker has opened NVRTC (whose version is part of
 * the key) and the cache, the worker looks. */
int tcf_from_disk(tcf_fkern_t *e, const tcf_fjob_t *job, int arch)
{
    if (!tcf_worker_disk_ready())
        return 0;
    void *cubin = NULL;
    size_t clen = 0;
    uint64_t ck = tcf_cache_key(TCF_CACHE_CUBIN, e->src, tcf_nvrtc_version(), arch);
    int ok = tcf_verdict_ok(e->src, arch) && tcf_kernels_known_good(job, arch) &&
             tcf_cache_get(ck, TCF_CACHE_CUBIN, &cubin, &clen) == 0 &&
             tcf_load_mod(cubin, &e->fn, &e->mod);
    free(cubin);
    if (ok)
        atomic_fetch_add(&tcf_fkc.disk_hits, 1);
    return ok;
}

