/* fakecuda: libraries, modules, kernels and launches (see fakecuda.c for the conventions).
 *
 * A kernel's parameter layout comes from its name ("k_i4_p8_b24": sizes 4, 8, 24, each
 * aligned to the largest power of two dividing its size, at most 16), or is given after '@'
 * ("<mangled name>@0:4,8:8,16:16", offset:size pairs; the name stops at the '@'). A launch logs each
 * parameter's bytes, read from kernelParams[i] or from the `extra` buffer at the
 * parameter's offset, so the same launch logs the same bytes in either form.
 * FAKECUDA_LAUNCH_DELAY_US=N makes every launch take N microseconds of the host.
 */
#include "tests/stub/fakecuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static fk_kern_t fk_kerns[FK_MAX_OBJ];   /* CUkernel objects */
static fk_kern_t fk_funcs[FK_MAX_OBJ];   /* CUfunction objects */
static int       fk_nkerns, fk_nfuncs, fk_nlibs, fk_nmods;

static fk_kern_t *fk_obj(uintptr_t h, uintptr_t base0, fk_kern_t *tab, const int *count)
{
    size_t n;
    if (h < base0 + 0x100 || (h - base0) % 0x100)
        return NULL;
    n = (h - base0) / 0x100;
    return n <= (size_t)__atomic_load_n(count, __ATOMIC_ACQUIRE) ? &tab[n - 1] : NULL;
}
fk_kern_t *fk_kernel(CUkernel k) { return fk_obj((uintptr_t)k, FK_KERN(0), fk_kerns, &fk_nkerns); }
fk_kern_t *fk_func(CUfunction f) { return fk_obj((uintptr_t)f, FK_FUNC(0), fk_funcs, &fk_nfuncs); }

fk_kern_t *fk_launchable(CUfunction f, const char **kind)
{
    fk_kern_t *k = fk_func(f);
    *kind = "function";
    if (!k) {
        k = fk_kernel((CUkernel)f);
        *kind = "kernel";
    }
    return k;
}

/* An explicit layout after '@' ("<mangled>@0:4,8:8,16:16": offset:size pairs) lets a real
 * kernel name from a trace keep its real layout; the name is then cut at the '@'. */
static int fk_parse_explicit(fk_kern_t *k)
{
    char *at = strchr(k->name, '@');
    if (!at)
        return 0;
    *at = '\0';
    const char *p = at + 1;
    k->nparams = 0;
    while (*p && k->nparams < FK_MAX_PARAM) {
        unsigned long off = strtoul(p, (char **)&p, 10), size;
        if (*p++ != ':')
            break;
        size = strtoul(p, (char **)&p, 10);
        k->off[k->nparams] = off;
        k->size[k->nparams] = size;
        k->nparams++;
        if (*p != ',')
            break;
        p++;
    }
    return 1;
}

static void fk_parse_layout(fk_kern_t *k)
{
    if (fk_parse_explicit(k))
        return;
    const char *p = strchr(k->name, '_');
    size_t end = 0;
    k->nparams = 0;
    while (p && k->nparams < FK_MAX_PARAM) {
        const char *piece = p + 1, *q = piece + 1;
        size_t size = 0, align = 1;
        p = strchr(piece, '_');
        if (*piece < 'a' || *piece > 'z' || *q < '0' || *q > '9')
            continue;
        while (*q >= '0' && *q <= '9' && size < 100000)
            size = size * 10 + (size_t)(*q++ - '0');
        if ((*q != '_' && *q != '\0') || size == 0 || size > 4096)
            continue;
        while (align < 16 && size % (align * 2) == 0)
            align *= 2;
        end = (end + align - 1) / align * align;
        k->off[k->nparams] = end;
        k->size[k->nparams] = size;
        k->nparams++;
        end += size;
    }
}

/* The handle of the object named `name` owned by `owner` in tab (made on first use), or
 * 0 when the table is full or the name too long. Caller holds fk_mu. */
static uintptr_t fk_make(fk_kern_t *tab, int *count, uintptr_t base0, uintptr_t owner,
                         const char *name)
{
    int i, n = *count;
    for (i = 0; i < n; i++)
        if (tab[i].owner == owner && strncmp(tab[i].name, name, strcspn(name, "@")) == 0 &&
            tab[i].name[strcspn(name, "@")] == '\0')
            return base0 + (uintptr_t)(i + 1) * 0x100;
    if (n == FK_MAX_OBJ || strlen(name) >= sizeof tab[0].name)
        return 0;
    memset(&tab[n], 0, sizeof tab[0]);
    tab[n].owner = owner;
    strcpy(tab[n].name, name);
    fk_parse_layout(&tab[n]);
    __atomic_store_n(count, n + 1, __ATOMIC_RELEASE);
    return base0 + (uintptr_t)(n + 1) * 0x100;
}

/* ---- loading ----------------------------------------------------------------------- */

CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv,
                           unsigned int njo, CUlibraryOption *lo, void **lv, unsigned int nlo)
{
    CUresult rc = fk_injected("cuLibraryLoadData");
    uintptr_t h = 0;
    if (!rc && (!lib || !code))
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_mu);
    if (!rc) {
        h = FK_LIB(++fk_nlibs);
        *lib = (CUlibrary)h;
    }
    pthread_mutex_unlock(&fk_mu);
    fk_log(0, "cuLibraryLoadData", rc, "lib=0x%lx", (unsigned long)h);
    return rc;
}

CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
    CUresult rc = fk_need_ctx(fk_injected("cuModuleLoadData"));
    uintptr_t h = 0;
    if (!rc && (!mod || !image))
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_mu);
    if (!rc) {
        h = FK_MOD(++fk_nmods);
        *mod = (CUmodule)h;
    }
    pthread_mutex_unlock(&fk_mu);
    fk_log(0, "cuModuleLoadData", rc, "module=0x%lx", (unsigned long)h);
    return rc;
}

static CUresult fk_get(const char *abi, uintptr_t *out, uintptr_t owner, uintptr_t owner0,
                       int nowners, const char *name, fk_kern_t *tab, int *count,
                       uintptr_t base0)
{
    CUresult rc = fk_injected(abi);
    uintptr_t h = 0;
    if (!rc && (!out || !name))
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_mu);
    if (!rc && (owner < owner0 + 0x100 || (owner - owner0) % 0x100 ||
                (owner - owner0) / 0x100 > (uintptr_t)nowners))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && !(h = fk_make(tab, count, base0, owner, name)))
        rc = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_unlock(&fk_mu);
    if (!rc)
        *out = h;
    fk_log(0, abi, rc, "owner=0x%lx name=%s handle=0x%lx", (unsigned long)owner,
           name ? name : "(null)", (unsigned long)h);
    return rc;
}

CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
    uintptr_t h = 0;
    CUresult rc = fk_get("cuLibraryGetKernel", k ? &h : NULL, (uintptr_t)lib, FK_LIB(0),
                         fk_nlibs, name, fk_kerns, &fk_nkerns, FK_KERN(0));
    if (!rc)
        *k = (CUkernel)h;
    return rc;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name)
{
    uintptr_t h = 0;
    CUresult rc = fk_need_ctx(CUDA_SUCCESS);
    if (rc) {
        fk_log(0, "cuModuleGetFunction", rc, "name=%s", name ? name : "(null)");
        return rc;
    }
    rc = fk_get("cuModuleGetFunction", f ? &h : NULL, (uintptr_t)mod, FK_MOD(0), fk_nmods,
                name, fk_funcs, &fk_nfuncs, FK_FUNC(0));
    if (!rc)
        *f = (CUfunction)h;
    return rc;
}

/* The CUfunction of a CUkernel in the current context: a function object of its own,
 * named like the kernel and owned by the kernel's handle. */
CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
    CUresult rc = fk_need_ctx(fk_injected("cuKernelGetFunction"));
    fk_kern_t *kern = fk_kernel(k);
    uintptr_t h = 0;
    if (!rc && !f)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && !kern)
        rc = CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fk_mu);
    if (!rc && !(h = fk_make(fk_funcs, &fk_nfuncs, FK_FUNC(0), (uintptr_t)k, kern->name)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&fk_mu);
    if (!rc)
        *f = (CUfunction)h;
    fk_log(0, "cuKernelGetFunction", rc, "kernel=0x%lx function=0x%lx",
           (unsigned long)(uintptr_t)k, (unsigned long)h);
    return rc;
}

/* ---- names and parameter layouts --------------------------------------------------- */

static CUresult fk_name(const char *abi, int self, fk_kern_t *obj, const char **name)
{
    CUresult rc = fk_injected(abi);
    if (!rc && !name)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && !obj)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc)
        *name = obj->name;
    fk_log(self, abi, rc, "name=%s", rc ? "" : obj->name);
    return rc;
}
CUresult cuKernelGetName(const char **name, CUkernel k)
{
    return fk_name("cuKernelGetName", FK_SELF(), fk_kernel(k), name);
}
CUresult cuFuncGetName(const char **name, CUfunction f)
{
    return fk_name("cuFuncGetName", FK_SELF(), fk_func(f), name);
}

static CUresult fk_param_info(const char *abi, int self, fk_kern_t *obj, size_t i,
                              size_t *off, size_t *size)
{
    CUresult rc = fk_injected(abi);
    if (!rc && !off)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && !obj)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && i >= (size_t)obj->nparams)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        *off = obj->off[i];
        if (size)
            *size = obj->size[i];
    }
    fk_log(self, abi, rc, "index=%zu offset=%zu size=%zu", i, rc ? 0 : obj->off[i],
           rc ? 0 : obj->size[i]);
    return rc;
}
CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
    return fk_param_info("cuKernelGetParamInfo", FK_SELF(), fk_kernel(k), i, off, size);
}
CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    return fk_param_info("cuFuncGetParamInfo", FK_SELF(), fk_func(f), i, off, size);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block,
                                                     size_t smem)
{
    CUresult rc = fk_injected("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    const char *kind;
    if (!rc && (!n || block <= 0 || block > 1024))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && !fk_launchable(f, &kind))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc)
        *n = 2048 / block;
    fk_log(0, "cuOccupancyMaxActiveBlocksPerMultiprocessor", rc, "block=%d smem=%zu blocks=%d",
           block, smem, block > 0 ? 2048 / block : 0);
    return rc;
}

/* ---- launches ---------------------------------------------------------------------- */

/* Writes "params=<hex>,<hex>,... form=params|extra" for a launch of k into out; returns
 * CUDA_ERROR_INVALID_VALUE when the arguments cannot carry k's parameters. */
static CUresult fk_params(const fk_kern_t *k, void **params, void **extra, char *out,
                          size_t cap)
{
    const unsigned char *buf = NULL;
    size_t bufsize = 0, o, i;
    const char *form = params ? "params" : extra ? "extra" : "none";
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    if (extra) {
        for (i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
                bufsize = *(size_t *)extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (k->nparams && (!buf || bufsize < k->off[k->nparams - 1] + k->size[k->nparams - 1]))
            return CUDA_ERROR_INVALID_VALUE;
    } else if (k->nparams && !params) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    o = (size_t)snprintf(out, cap, "params=");
    for (i = 0; i < (size_t)k->nparams && o + 2 < cap; i++) {
        const void *p = buf ? buf + k->off[i] : params[i];
        if (!p)
            return CUDA_ERROR_INVALID_VALUE;
        if (i)
            out[o++] = ',';
        fk_hex(out + o, cap - o, p, k->size[i]);
        o += strlen(out + o);
    }
    snprintf(out + o, cap - o, " form=%s", form);
    return CUDA_SUCCESS;
}

static CUresult fk_launch(const char *abi, CUfunction f, const unsigned g[3], const unsigned b[3],
                          unsigned smem, CUstream s, void **params, void **extra,
                          const char *attrs)
{
    extern int fk_fast;
    if (fk_fast)
        return CUDA_SUCCESS;
    /* FAKECUDA_LAUNCH_DELAY_US: a launch that costs the host that long (a driver whose
     * launches are dear, where a graph pays). */
    static long delay = -1;
    if (delay < 0) {
        const char *d = getenv("FAKECUDA_LAUNCH_DELAY_US");
        delay = d ? atol(d) : 0;
    }
    if (delay > 0)
        usleep((useconds_t)delay);
    CUresult rc = fk_need_ctx(fk_injected(abi));
    const char *kind = "?";
    fk_kern_t *k = fk_launchable(f, &kind);
    char pbuf[4096] = "params=?";
    CUresult prc = k ? fk_params(k, params, extra, pbuf, sizeof pbuf) : CUDA_ERROR_INVALID_HANDLE;
    if (!rc && (!fk_stream_ok(s) || !k))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2] ||
                b[0] * b[1] * b[2] > 1024))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = prc;
    fk_log(0, abi, rc, "name=%s kind=%s grid=%u,%u,%u block=%u,%u,%u smem=%u stream=0x%lx%s %s",
           k ? k->name : "?", k ? kind : "?", g[0], g[1], g[2], b[0], b[1], b[2], smem,
           (unsigned long)(uintptr_t)s, attrs, pbuf);
    return rc;
}

#define FK_LAUNCH_ARGS CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, \
    unsigned by, unsigned bz, unsigned smem, CUstream s, void **params, void **extra
CUresult cuLaunchKernel(FK_LAUNCH_ARGS)
{
    const unsigned g[3] = { gx, gy, gz }, b[3] = { bx, by, bz };
    return fk_launch("cuLaunchKernel", f, g, b, smem, s, params, extra, "");
}
CUresult cuLaunchKernel_ptsz(FK_LAUNCH_ARGS)
{
    const unsigned g[3] = { gx, gy, gz }, b[3] = { bx, by, bz };
    return fk_launch("cuLaunchKernel_ptsz", f, g, b, smem, s, params, extra, "");
}

static CUresult fk_launch_ex(const char *abi, const CUlaunchConfig *c, CUfunction f,
                             void **params, void **extra)
{
    char attrs[256];
    size_t o, i;
    if (!c) {
        CUresult rc = fk_injected(abi);
        rc = rc ? rc : CUDA_ERROR_INVALID_VALUE;
        fk_log(0, abi, rc, "config=NULL");
        return rc;
    }
    o = (size_t)snprintf(attrs, sizeof attrs, " attrs=");
    for (i = 0; i < c->numAttrs && c->attrs && o + 16 < sizeof attrs; i++)
        o += (size_t)snprintf(attrs + o, sizeof attrs - o, "%s%d", i ? "," : "",
                              (int)c->attrs[i].id);
    {
        const unsigned g[3] = { c->gridDimX, c->gridDimY, c->gridDimZ };
        const unsigned b[3] = { c->blockDimX, c->blockDimY, c->blockDimZ };
        return fk_launch(abi, f, g, b, c->sharedMemBytes, c->hStream, params, extra, attrs);
    }
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    return fk_launch_ex("cuLaunchKernelEx", c, f, params, extra);
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params,
                               void **extra)
{
    return fk_launch_ex("cuLaunchKernelEx_ptsz", c, f, params, extra);
}
