/* fakecuda: allocations, device memsets and copies (see fakecuda.c for the conventions).
 *
 * Device memory is a bump allocator that never reuses an address, so a log line names
 * one allocation for the whole run; live allocations are tracked so that a double or
 * foreign free fails as the real driver's would (CUDA_ERROR_INVALID_VALUE).
 * cuMemcpyDtoH* fills the host buffer with bytes derived from the source address
 * (byte i = low byte of (src >> 8) + i), so a program can print what it "read". With
 * FAKECUDA_MEM=1 each allocation is backed by host memory instead (zeroed): memsets and
 * copies write it, copies read it, and cuMemcpyDtoH* returns what was stored.
 */
#include "tests/stub/fakecuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FK_MAX_ALLOC 4096

typedef struct { CUdeviceptr ptr; size_t size; unsigned char *mem; } fk_alloc_t;

static fk_alloc_t  fk_allocs[FK_MAX_ALLOC];
static int         fk_nallocs;
static CUdeviceptr fk_next = FK_DEV_BASE, fk_next_v1 = FK_DEV_V1;

int fk_devptr_ok(CUdeviceptr p, size_t bytes)
{
    int ok;
    pthread_mutex_lock(&fk_mu);
    ok = (p >= FK_DEV_BASE && p + bytes <= fk_next) ||
         (p >= FK_DEV_V1 && p + bytes <= fk_next_v1);
    pthread_mutex_unlock(&fk_mu);
    return ok;
}

static CUresult fk_alloc(CUdeviceptr *out, size_t size, int v1)
{
    CUresult rc = CUDA_SUCCESS;
    size_t rounded = (size + 255) / 256 * 256;
    if (!out || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_mu);
    if (fk_nallocs == FK_MAX_ALLOC || (v1 && fk_next_v1 + rounded > 0xffffff00ull)) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        CUdeviceptr *next = v1 ? &fk_next_v1 : &fk_next;
        *out = *next;
        *next += rounded;
        fk_allocs[fk_nallocs].ptr = *out;
        fk_allocs[fk_nallocs].size = size;
        fk_allocs[fk_nallocs].mem = fk_mem ? calloc(1, size) : NULL;
        fk_nallocs++;
    }
    pthread_mutex_unlock(&fk_mu);
    return rc;
}

static CUresult fk_free(CUdeviceptr p)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    int i;
    pthread_mutex_lock(&fk_mu);
    for (i = 0; i < fk_nallocs; i++) {
        if (fk_allocs[i].ptr == p) {
            free(fk_allocs[i].mem);
            fk_allocs[i] = fk_allocs[--fk_nallocs];
            rc = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&fk_mu);
    return rc;
}

/* FAKECUDA_MEM: the host bytes behind [p, p + n), or NULL when they are not all inside
 * one backed allocation. */
static unsigned char *fk_bytes(CUdeviceptr p, size_t n)
{
    unsigned char *m = NULL;
    if (!fk_mem)
        return NULL;
    pthread_mutex_lock(&fk_mu);
    for (int i = 0; i < fk_nallocs && !m; i++)
        if (fk_allocs[i].mem && p >= fk_allocs[i].ptr &&
            p + n <= fk_allocs[i].ptr + fk_allocs[i].size)
            m = fk_allocs[i].mem + (p - fk_allocs[i].ptr);
    pthread_mutex_unlock(&fk_mu);
    return m;
}

/* ---- synchronous allocation -------------------------------------------------------- */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    CUresult rc = fk_need_ctx(fk_injected("cuMemAlloc_v2"));
    CUdeviceptr p = 0;
    if (!rc)
        rc = fk_alloc(&p, size, 0);
    if (!rc)
        *dptr = p;
    fk_log(0, "cuMemAlloc_v2", rc, "size=%zu ptr=0x%llx", size, p);
    return rc;
}

/* The 32-bit CUDA 2.x form, still reachable through cuGetProcAddress below version 3020. */
CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int size)
{
    CUresult rc = fk_need_ctx(fk_injected("cuMemAlloc"));
    CUdeviceptr p = 0;
    if (!rc && !dptr)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = fk_alloc(&p, size, 1);
    if (!rc)
        *dptr = (CUdeviceptr_v1)p;
    fk_log(0, "cuMemAlloc", rc, "size=%u ptr=0x%llx", size, p);
    return rc;
}

static CUresult fk_free_call(const char *abi, CUdeviceptr p)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    if (!rc && p)
        rc = fk_free(p);
    fk_log(0, abi, rc, "ptr=0x%llx", p);
    return rc;
}
CUresult cuMemFree_v2(CUdeviceptr p) { return fk_free_call("cuMemFree_v2", p); }
CUresult cuMemFree(CUdeviceptr_v1 p) { return fk_free_call("cuMemFree", p); }

/* ---- stream-ordered allocation ----------------------------------------------------- */

/* FAKECUDA_ASYNC_LIMIT: bytes of stream-ordered allocations live at once; past it an
 * allocation fails with CUDA_ERROR_OUT_OF_MEMORY (0 or unset: no limit). The one pool
 * (FK_POOL) keeps its release threshold (0 at start, as the real driver's) and its high
 * watermark of bytes in use, as cuMemPoolGetAttribute reports them. */
static size_t fk_async_live, fk_async_high;
static cuuint64_t fk_pool_threshold;

static size_t fk_async_limit(void)
{
    const char *v = getenv("FAKECUDA_ASYNC_LIMIT");
    return v ? (size_t)strtoull(v, NULL, 10) : 0;
}

static size_t fk_size_of(CUdeviceptr p)
{
    size_t n = 0;
    pthread_mutex_lock(&fk_mu);
    for (int i = 0; i < fk_nallocs; i++)
        if (fk_allocs[i].ptr == p)
            n = fk_allocs[i].size;
    pthread_mutex_unlock(&fk_mu);
    return n;
}

static CUresult fk_alloc_async(const char *abi, CUdeviceptr *dptr, size_t size,
                               CUmemoryPool pool, int has_pool, CUstream s)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    CUdeviceptr p = 0;
    size_t limit = fk_async_limit();
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && has_pool && !pool)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && limit && __atomic_load_n(&fk_async_live, __ATOMIC_RELAXED) + size > limit)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (!rc)
        rc = fk_alloc(&p, size, 0);
    if (!rc) {
        size_t live = __atomic_add_fetch(&fk_async_live, size, __ATOMIC_RELAXED);
        pthread_mutex_lock(&fk_mu);
        if (live > fk_async_high)
            fk_async_high = live;
        pthread_mutex_unlock(&fk_mu);
        *dptr = p;
    }
    if (has_pool)
        fk_log(0, abi, rc, "size=%zu pool=0x%lx stream=0x%lx ptr=0x%llx", size,
               (unsigned long)(uintptr_t)pool, (unsigned long)(uintptr_t)s, p);
    else
        fk_log(0, abi, rc, "size=%zu stream=0x%lx ptr=0x%llx", size,
               (unsigned long)(uintptr_t)s, p);
    return rc;
}

CUresult cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream s)
{
    return fk_alloc_async("cuMemAllocAsync", d, n, NULL, 0, s);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream s)
{
    return fk_alloc_async("cuMemAllocAsync_ptsz", d, n, NULL, 0, s);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool pool, CUstream s)
{
    return fk_alloc_async("cuMemAllocFromPoolAsync", d, n, pool, 1, s);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool pool, CUstream s)
{
    return fk_alloc_async("cuMemAllocFromPoolAsync_ptsz", d, n, pool, 1, s);
}

static CUresult fk_free_async(const char *abi, CUdeviceptr p, CUstream s)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    size_t n = rc ? 0 : fk_size_of(p);
    if (!rc)
        rc = fk_free(p);
    if (!rc)
        __atomic_sub_fetch(&fk_async_live, n, __ATOMIC_RELAXED);
    fk_log(0, abi, rc, "ptr=0x%llx stream=0x%lx", p, (unsigned long)(uintptr_t)s);
    return rc;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    CUresult rc = fk_need_ctx(fk_injected("cuMemPoolTrimTo"));
    if (!rc && !pool)
        rc = CUDA_ERROR_INVALID_VALUE;
    fk_log(0, "cuMemPoolTrimTo", rc, "pool=0x%lx keep=%zu", (unsigned long)(uintptr_t)pool, keep);
    return rc;
}
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return fk_free_async("cuMemFreeAsync", p, s); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return fk_free_async("cuMemFreeAsync_ptsz", p, s); }

/* The device's current pool (always the default one here). */
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice d)
{
    CUresult rc = fk_injected("cuDeviceGetMemPool");
    if (!rc && !pool)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && (d < 0 || d >= fk_devices()))
        rc = CUDA_ERROR_INVALID_DEVICE;
    if (!rc)
        *pool = (CUmemoryPool)FK_POOL;
    fk_log(0, "cuDeviceGetMemPool", rc, "dev=%d pool=0x%lx", d, (unsigned long)FK_POOL);
    return rc;
}

/* The release threshold (set and read) and the used-memory watermark (read, and reset:
 * only to zero, which restarts it from what is in use now, as the real driver does). */
static CUresult fk_pool_attr(const char *abi, CUmemoryPool pool, CUmemPool_attribute a,
                             void *v, int set)
{
    CUresult rc = fk_injected(abi);
    cuuint64_t *u = v;
    if (!rc && ((uintptr_t)pool != FK_POOL || !v))
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_mu);
    if (rc) {
    } else if (a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
        if (set)
            fk_pool_threshold = *u;
        else
            *u = fk_pool_threshold;
    } else if (a == CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
        if (set && *u)
            rc = CUDA_ERROR_INVALID_VALUE;
        else if (set)
            fk_async_high = __atomic_load_n(&fk_async_live, __ATOMIC_RELAXED);
        else
            *u = fk_async_high;
    } else if (a == CU_MEMPOOL_ATTR_USED_MEM_CURRENT && !set) {
        *u = __atomic_load_n(&fk_async_live, __ATOMIC_RELAXED);
    } else {
        rc = CUDA_ERROR_NOT_SUPPORTED;
    }
    pthread_mutex_unlock(&fk_mu);
    fk_log(0, abi, rc, "pool=0x%lx attr=%d value=%llu", (unsigned long)(uintptr_t)pool, (int)a,
           v ? (unsigned long long)*u : 0ull);
    return rc;
}
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void *v)
{
    return fk_pool_attr("cuMemPoolGetAttribute", pool, a, v, 0);
}
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void *v)
{
    return fk_pool_attr("cuMemPoolSetAttribute", pool, a, v, 1);
}

/* 80 GiB of device memory; free: what stream-ordered allocations do not hold. */
CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
    CUresult rc = fk_need_ctx(fk_injected("cuMemGetInfo_v2"));
    const size_t total = 80ull << 30;
    if (!rc && (!free_b || !total_b))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        *total_b = total;
        *free_b = total - __atomic_load_n(&fk_async_live, __ATOMIC_RELAXED);
    }
    fk_log(0, "cuMemGetInfo_v2", rc, "%s", "");
    return rc;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice d)
{
    CUresult rc = fk_injected("cuDeviceGetDefaultMemPool");
    if (!rc && !pool)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && (d < 0 || d >= fk_devices()))
        rc = CUDA_ERROR_INVALID_DEVICE;
    if (!rc)
        *pool = (CUmemoryPool)FK_POOL;
    fk_log(0, "cuDeviceGetDefaultMemPool", rc, "dev=%d pool=0x%lx", d, (unsigned long)FK_POOL);
    return rc;
}

/* ---- memsets ----------------------------------------------------------------------- */

static CUresult fk_memset(const char *abi, CUdeviceptr dst, unsigned value, unsigned elem,
                          size_t n, CUstream s)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && (dst % elem || !fk_devptr_ok(dst, n * elem)))
        rc = CUDA_ERROR_INVALID_VALUE;
    unsigned char *m = rc ? NULL : fk_bytes(dst, n * elem);
    for (size_t i = 0; m && i < n; i++)
        memcpy(m + i * elem, &value, elem);  /* little-endian: the low bytes */
    fk_log(0, abi, rc, "dst=0x%llx value=%u count=%zu stream=0x%lx", dst, value, n,
           (unsigned long)(uintptr_t)s);
    return rc;
}

CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    return fk_memset("cuMemsetD8Async", d, v, 1, n, s);
}
CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    return fk_memset("cuMemsetD8Async_ptsz", d, v, 1, n, s);
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
    return fk_memset("cuMemsetD16Async", d, v, 2, n, s);
}
CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
    return fk_memset("cuMemsetD16Async_ptsz", d, v, 2, n, s);
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
    return fk_memset("cuMemsetD32Async", d, v, 4, n, s);
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
    return fk_memset("cuMemsetD32Async_ptsz", d, v, 4, n, s);
}

/* ---- copies ------------------------------------------------------------------------ */

static CUresult fk_dtod(const char *abi, CUdeviceptr dst, CUdeviceptr src, size_t n,
                        CUstream s)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && (!fk_devptr_ok(dst, n) || !fk_devptr_ok(src, n)))
        rc = CUDA_ERROR_INVALID_VALUE;
    unsigned char *md = rc ? NULL : fk_bytes(dst, n), *ms = md ? fk_bytes(src, n) : NULL;
    if (md && ms)
        memmove(md, ms, n);
    fk_log(0, abi, rc, "dst=0x%llx src=0x%llx size=%zu stream=0x%lx", dst, src, n,
           (unsigned long)(uintptr_t)s);
    return rc;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    return fk_dtod("cuMemcpyDtoDAsync_v2", d, s, n, st);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    return fk_dtod("cuMemcpyDtoDAsync_v2_ptsz", d, s, n, st);
}
/* The 32-bit CUDA 3.0 form (version 3000). */
CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 d, CUdeviceptr_v1 s, unsigned int n, CUstream st)
{
    return fk_dtod("cuMemcpyDtoDAsync", d, s, n, st);
}

static CUresult fk_htod(const char *abi, CUdeviceptr dst, const void *src, size_t n,
                        CUstream s)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    char hex[2 * 64 + 1] = "";
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && (!src || !fk_devptr_ok(dst, n)))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        fk_hex(hex, sizeof hex, src, n < 64 ? n : 64);
    unsigned char *m = rc ? NULL : fk_bytes(dst, n);
    if (m)
        memcpy(m, src, n);
    fk_log(0, abi, rc, "dst=0x%llx size=%zu stream=0x%lx data=%s", dst, n,
           (unsigned long)(uintptr_t)s, hex);
    return rc;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
    return fk_htod("cuMemcpyHtoDAsync_v2", d, h, n, s);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
    return fk_htod("cuMemcpyHtoDAsync_v2_ptsz", d, h, n, s);
}

static CUresult fk_dtoh(const char *abi, void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    size_t i;
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && (!dst || !fk_devptr_ok(src, n)))
        rc = CUDA_ERROR_INVALID_VALUE;
    unsigned char *m = rc ? NULL : fk_bytes(src, n);
    if (m)
        memcpy(dst, m, n);
    else if (!rc)
        for (i = 0; i < n; i++)
            ((unsigned char *)dst)[i] = (unsigned char)((src >> 8) + i);
    fk_log(0, abi, rc, "src=0x%llx size=%zu stream=0x%lx", src, n,
           (unsigned long)(uintptr_t)s);
    return rc;
}
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s)
{
    return fk_dtoh("cuMemcpyDtoHAsync_v2", h, d, n, s);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *h, CUdeviceptr d, size_t n, CUstream s)
{
    return fk_dtoh("cuMemcpyDtoHAsync_v2_ptsz", h, d, n, s);
}
