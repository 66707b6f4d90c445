/* Where each kernel's code came from. Every module and library the process loads gets a
 * code identity, so that what fuse mode learns about a kernel and keeps on disk (whether
 * its decoding computes what the kernel computes) is tied to the code it was learned on,
 * not to the kernel's name alone: a PyTorch upgrade that changes a kernel under the same
 * name meets no old verdict.
 *
 * The identity of an image passed to the driver:
 *  - inside a read-only segment of a loaded ELF object (cudart's fatbins live in the
 *    library that embeds them, libtorch_cuda.so): that object's GNU build-id, or, for an
 *    object without one, its path, inode, size and modification time;
 *  - anywhere else (PTX or a cubin made in memory, or written into a program's own data):
 *    a hash of its bytes, as long as its format says it is (fatbin header, ELF headers,
 *    NUL-terminated PTX). Only images the driver accepted are looked at, so the headers
 *    are there to read;
 *  - a file (cuModuleLoad, cuLibraryLoadFromFile): its path, inode, size and modification
 *    time.
 * 0 means unknown: nothing about its kernels is kept on disk (they are checked anew in each
 * process). Loads are rare (tens per process), so none of this is on the launch path.
 */
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/base.h"
#include "recognize/recognize.h"

#define TCF_FATBIN_MAGIC  0xBA55ED50u   /* fatbin header (fatbinary_section.h) */
#define TCF_FATBINC_MAGIC 0x466243B1u   /* __fatBinC_Wrapper_t around it */
#define TCF_IMAGE_MAX     (1ull << 32)  /* a length past this is no header we understand */

/* Never 0, so that 0 can mean unknown. */
static uint64_t tcf_nonzero(uint64_t h)
{
    return h ? h : 1;
}

static uint64_t tcf_stat_id(const char *what, const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) != 0)
        return 0;
    XXH3_state_t s;
    XXH3_64bits_reset(&s);
    XXH3_64bits_update(&s, what, strlen(what));
    XXH3_64bits_update(&s, path, strlen(path) + 1);
    uint64_t f[5] = { (uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
                      (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec };
    XXH3_64bits_update(&s, f, sizeof f);
    return tcf_nonzero(XXH3_64bits_digest(&s));
}

/* The length of an image the driver would read at p, from its own headers; 0 when the
 * headers make no sense. */
static size_t tcf_image_len(const uint8_t *p)
{
    uint32_t magic;
    memcpy(&magic, p, 4);
    if (magic == TCF_FATBIN_MAGIC) {
        uint16_t hsize;
        uint64_t fsize;
        memcpy(&hsize, p + 6, 2);
        memcpy(&fsize, p + 8, 8);
        return hsize >= 16 && fsize < TCF_IMAGE_MAX ? hsize + (size_t)fsize : 0;
    }
    if (!memcmp(p, ELFMAG, SELFMAG)) {
        if (p[EI_CLASS] != ELFCLASS64)
            return 0;
        ElfW(Ehdr) eh;
        memcpy(&eh, p, sizeof eh);
        uint64_t a = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
        uint64_t b = eh.e_phoff + (uint64_t)eh.e_phnum * eh.e_phentsize;
        uint64_t len = a > b ? a : b;
        len = len > sizeof eh ? len : sizeof eh;
        return len < TCF_IMAGE_MAX ? (size_t)len : 0;
    }
    return strlen((const char *)p) + 1;  /* PTX: what the driver reads as a string */
}

uint64_t tcf_image_id(const void *image)
{
    if (!image)
        return 0;
    const uint8_t *p = image;
    uint32_t magic;
    memcpy(&magic, p, 4);
    if (magic == TCF_FATBINC_MAGIC) {  /* the wrapper: its data pointer at offset 8 */
        const void *inner;
        memcpy(&inner, p + 8, sizeof inner);
        if (!inner)
            return 0;
        p = inner;
    }
    tcf_object_t o;
    if (tcf_object_at(p, TCF_OBJ_SEGMENT, &o) && !o.writable) {
        /* Code the program cannot have written: the object's build-id, else its file (the
         * main program is named ""). Writable data is identified by its bytes, below. */
        if (o.build_id)
            return o.build_id;
        uint64_t id = tcf_stat_id("object", o.name[0] ? o.name : "/proc/self/exe");
        if (id)
            return id;
    }
    size_t len = tcf_image_len(p);
    return len ? tcf_nonzero(XXH3_64bits_withSeed(p, len, 0x1A6E)) : 0;
}

uint64_t tcf_image_file_id(const char *path)
{
    return tcf_stat_id("file", path);
}

/* --- handles ------------------------------------------------------------------------- */
/* Module and library handles -> identity: open addressing under a lock (loads and the
 * worker's questions only). A handle the driver hands out again after an unload is
 * overwritten by its new load. Full: new loads are unknown. */
#define TCF_IMG_SLOTS 8192u

typedef struct {
    uint64_t handle, id;
} tcf_img_slot_t;

static tcf_img_slot_t tcf_img[TCF_IMG_SLOTS];
static unsigned tcf_nimg;
static pthread_mutex_t tcf_img_lock = PTHREAD_MUTEX_INITIALIZER;

static tcf_img_slot_t *tcf_img_find(uint64_t handle, int insert)
{
    uint64_t h = XXH3_64bits(&handle, sizeof handle);
    for (unsigned i = 0; i < TCF_IMG_SLOTS; i++) {
        tcf_img_slot_t *s = &tcf_img[(h + i) % TCF_IMG_SLOTS];
        if (s->handle == handle)
            return s;
        if (!s->handle) {
            if (!insert || tcf_nimg >= TCF_IMG_SLOTS - 1)
                return NULL;
            tcf_nimg++;
            s->handle = handle;
            return s;
        }
    }
    return NULL;
}

void tcf_loaded(uint64_t handle, uint64_t id)
{
    if (!handle)
        return;
    pthread_mutex_lock(&tcf_img_lock);
    tcf_img_slot_t *s = tcf_img_find(handle, 1);
    if (s)
        s->id = id;
    pthread_mutex_unlock(&tcf_img_lock);
}

uint64_t tcf_loaded_id(uint64_t handle)
{
    uint64_t id = 0;
    pthread_mutex_lock(&tcf_img_lock);
    tcf_img_slot_t *s = handle ? tcf_img_find(handle, 0) : NULL;
    if (s)
        id = s->id;
    pthread_mutex_unlock(&tcf_img_lock);
    return id;
}

uint64_t tcf_kernel_code(tcf_kernel_t *k)
{
    if (atomic_load_explicit(&k->code_known, memory_order_acquire))
        return atomic_load_explicit(&k->code, memory_order_relaxed);
    uint64_t id = 0;
    if (k->kind == TCF_KIND_KERNEL && tcf_drv.kernel_get_library) {
        CUlibrary lib;
        if (tcf_drv.kernel_get_library(&lib, (CUkernel)(uintptr_t)k->handle) == CUDA_SUCCESS)
            id = tcf_loaded_id((uint64_t)(uintptr_t)lib);
    } else if (k->kind == TCF_KIND_FUNCTION && tcf_drv.func_get_module) {
        CUmodule mod;
        if (tcf_drv.func_get_module(&mod, (CUfunction)(uintptr_t)k->handle) == CUDA_SUCCESS)
            id = tcf_loaded_id((uint64_t)(uintptr_t)mod);
    }
    atomic_store_explicit(&k->code, id, memory_order_relaxed);  /* racers store the same */
    atomic_store_explicit(&k->code_known, 1, memory_order_release);
    return id;
}
