/* Code identity (recognize/images.c): what fuse mode keys a kernel's verdict by.
 *  - An image inside a loaded library's read-only segments is identified by the library:
 *    any two addresses in it agree (one in writable data is identified by its bytes); two copies of a library with a build-id (under other names) agree; two
 *    copies without one differ (path and inode); another library differs.
 *  - An image in plain memory is identified by its bytes, as far as its format says it
 *    goes: PTX to its NUL, a fatbin by its header's size (also behind the cudart wrapper),
 *    an ELF cubin by its headers; nonsense headers give 0 (unknown).
 *  - A file by its path, inode, size and time: a rewrite changes it; no file gives 0.
 *  - Handles: recorded, overwritten when the driver reuses one, 0 when never seen.
 *  - A kernel's code: asked of the driver once (library for a CUkernel, module for a
 *    CUfunction), 0 when the driver cannot say. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/driver.h"
#include "recognize/recognize.h"
#include "check.h"

static const char rodata_a[] = "// PTX that lives in this binary\n.version 8.0\n";
static char data_rw[64] = "// PTX a program writes into its own data\n";
static const char rodata_b[] = "// more of it\n";
static char dir[PATH_MAX];

static void *open_copy(const char *lib, const char *as)
{
    char self[PATH_MAX] = "", src[PATH_MAX * 2], dst[PATH_MAX * 2], cmd[PATH_MAX * 5];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return NULL;
    self[n] = '\0';
    snprintf(src, sizeof src, "%s/%s", dirname(self), lib);
    snprintf(dst, sizeof dst, "%s/%s", dir, as);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, dst);
    if (system(cmd) != 0)
        return NULL;
    return dlopen(dst, RTLD_NOW | RTLD_LOCAL);
}

static uint64_t id_in(void *h, const char *sym)
{
    void *p = h ? dlsym(h, sym) : NULL;
    return p ? tcf_image_id(p) : 0;
}

static uint64_t heap_id(const void *bytes, size_t len)
{
    uint8_t *p = malloc(len);
    memcpy(p, bytes, len);
    uint64_t id = tcf_image_id(p);
    free(p);
    return id;
}

TEST(inside_libraries)
{
    uint64_t self = tcf_image_id(rodata_a);
    CHECK(self != 0);
    CHECK_EQ_U64(tcf_image_id(rodata_b), self);             /* same object, other bytes */
    CHECK_EQ_U64(tcf_image_id((const void *)&check_main_end), self);
    /* A writable segment of this binary: what is there now, not the binary. */
    uint64_t rw = tcf_image_id(data_rw);
    CHECK(rw != 0 && rw != self);
    CHECK_EQ_U64(rw, heap_id(data_rw, sizeof data_rw));
    data_rw[3] ^= 1;
    CHECK(tcf_image_id(data_rw) != rw);
    uint64_t libc = tcf_image_id((const void *)&printf);
    CHECK(libc != 0 && libc != self);

    void *a = open_copy("libtcftest-id.so", "liba-id.so");
    void *b = open_copy("libtcftest-id.so", "libb-id.so");
    void *c = open_copy("libtcftest-noid.so", "libc-noid.so");
    void *d = open_copy("libtcftest-noid.so", "libd-noid.so");
    CHECK(a && b && c && d);
    CHECK(a != b && c != d);  /* four objects */
    const char *code = "tcf_fake_nvrtc_dso", *data = "tcf_fake_nvrtc_data";
    uint64_t ia = id_in(a, code), ib = id_in(b, code), ic = id_in(c, code), id = id_in(d, code);
    CHECK(ia != 0 && ic != 0 && id != 0);
    CHECK_EQ_U64(ia, ib);             /* the build-id, not the name */
    CHECK(ic != id);                  /* no build-id: path and inode */
    CHECK(ia != ic && ia != self && ia != libc);
    /* its writable data: by the bytes there, the same in every copy */
    uint64_t da = id_in(a, data), dd = id_in(d, data);
    CHECK(da != 0 && da == dd && da != ia);
}

TEST(in_memory)
{
    CHECK_EQ_U64(tcf_image_id(NULL), 0);
    const char ptx1[] = ".version 8.0\n.target sm_90\n.entry k() { ret; }\n";
    char ptx2[sizeof ptx1];
    memcpy(ptx2, ptx1, sizeof ptx1);
    uint64_t p1 = heap_id(ptx1, sizeof ptx1);
    CHECK(p1 != 0);
    CHECK_EQ_U64(heap_id(ptx2, sizeof ptx2), p1);  /* bytes, not address */
    ptx2[sizeof ptx2 - 5] ^= 1;
    CHECK(heap_id(ptx2, sizeof ptx2) != p1);
    CHECK(p1 != tcf_image_id(rodata_a));

    /* A fatbin: 16-byte header (magic, version, header size, payload size), then payload;
     * what follows it is not its. */
    uint8_t fb[64];
    memset(fb, 0xAB, sizeof fb);
    uint32_t magic = 0xBA55ED50u;
    uint16_t ver = 1, hsz = 16;
    uint64_t psz = 32;
    memcpy(fb, &magic, 4), memcpy(fb + 4, &ver, 2), memcpy(fb + 6, &hsz, 2);
    memcpy(fb + 8, &psz, 8);
    uint64_t f1 = heap_id(fb, sizeof fb);
    CHECK(f1 != 0);
    fb[60] ^= 1;                                   /* past 16 + 32 */
    CHECK_EQ_U64(heap_id(fb, sizeof fb), f1);
    fb[40] ^= 1;                                   /* inside the payload */
    uint64_t f2 = heap_id(fb, sizeof fb);
    CHECK(f2 != f1 && f2 != 0);
    /* behind cudart's wrapper: {magic, version, data, filename} */
    uint8_t *heapfb = malloc(sizeof fb);
    memcpy(heapfb, fb, sizeof fb);
    struct { uint32_t magic, version; const void *data, *name; } wrap = { 0x466243B1u, 1, heapfb, NULL };
    CHECK_EQ_U64(tcf_image_id(&wrap), tcf_image_id(heapfb));
    CHECK_EQ_U64(tcf_image_id(heapfb), f2);
    wrap.data = NULL;
    CHECK_EQ_U64(tcf_image_id(&wrap), 0);
    free(heapfb);
    psz = 1ull << 40;                              /* a size no header means */
    memcpy(fb + 8, &psz, 8);
    CHECK_EQ_U64(heap_id(fb, sizeof fb), 0);

    /* An ELF cubin: as long as its section and program headers reach. */
    uint8_t elf[512];
    memset(elf, 0x5A, sizeof elf);
    Elf64_Ehdr eh = { 0 };
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_shoff = 256, eh.e_shnum = 2, eh.e_shentsize = 64;  /* ends at 384 */
    eh.e_phoff = 64, eh.e_phnum = 1, eh.e_phentsize = 56;
    memcpy(elf, &eh, sizeof eh);
    uint64_t e1 = heap_id(elf, sizeof elf);
    CHECK(e1 != 0);
    elf[400] ^= 1;
    CHECK_EQ_U64(heap_id(elf, sizeof elf), e1);
    elf[300] ^= 1;
    CHECK(heap_id(elf, sizeof elf) != e1);
    elf[EI_CLASS] = ELFCLASS32;                    /* not what the driver loads here */
    CHECK_EQ_U64(heap_id(elf, sizeof elf), 0);
}

TEST(files)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/k.cubin", dir);
    CHECK_EQ_U64(tcf_image_file_id(NULL), 0);
    CHECK_EQ_U64(tcf_image_file_id(path), 0);      /* not there */
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("one", f);
    fclose(f);
    struct timespec t[2] = { { 1000000, 0 }, { 1000000, 0 } };
    utimensat(AT_FDCWD, path, t, 0);
    uint64_t a = tcf_image_file_id(path);
    CHECK(a != 0);
    CHECK_EQ_U64(tcf_image_file_id(path), a);
    f = fopen(path, "w");
    fputs("two", f);                               /* same size, new time */
    fclose(f);
    t[0].tv_sec = t[1].tv_sec = 2000000;
    utimensat(AT_FDCWD, path, t, 0);
    CHECK(tcf_image_file_id(path) != a);
}

TEST(handles)
{
    CHECK_EQ_U64(tcf_loaded_id(0x1000), 0);
    tcf_loaded(0x1000, 11);
    tcf_loaded(0x2000, 22);
    tcf_loaded(0, 33);                     /* no handle: nothing */
    CHECK_EQ_U64(tcf_loaded_id(0x1000), 11);
    CHECK_EQ_U64(tcf_loaded_id(0x2000), 22);
    CHECK_EQ_U64(tcf_loaded_id(0), 0);
    tcf_loaded(0x1000, 44);                /* unloaded, handed out again */
    CHECK_EQ_U64(tcf_loaded_id(0x1000), 44);
    for (uint64_t h = 1; h <= 20000; h++)          /* past the table: unknown, no harm */
        tcf_loaded(0x100000 + h * 16, h);
    CHECK_EQ_U64(tcf_loaded_id(0x100000 + 16), 1);
    CHECK_EQ_U64(tcf_loaded_id(0x100000 + 20000 * 16), 0);
    CHECK_EQ_U64(tcf_loaded_id(0x2000), 22);
}

static int lib_calls, mod_calls, fail;

static CUresult fake_kernel_get_library(CUlibrary *lib, CUkernel k)
{
    lib_calls++;
    *lib = (CUlibrary)(uintptr_t)((uintptr_t)k + 0x10);
    return fail ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

static CUresult fake_func_get_module(CUmodule *mod, CUfunction f)
{
    mod_calls++;
    *mod = (CUmodule)(uintptr_t)((uintptr_t)f + 0x20);
    return fail ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

TEST(kernel_code)
{
    tcf_drv.kernel_get_library = fake_kernel_get_library;
    tcf_drv.func_get_module = fake_func_get_module;
    tcf_loaded(0x7010, 701);   /* library of kernel 0x7000 */
    tcf_loaded(0x8020, 802);   /* module of function 0x8000 */
    tcf_kernel_t k = { .handle = 0x7000, .kind = TCF_KIND_KERNEL };
    tcf_kernel_t f = { .handle = 0x8000, .kind = TCF_KIND_FUNCTION };
    CHECK_EQ_U64(tcf_kernel_code(&k), 701);
    CHECK_EQ_U64(tcf_kernel_code(&k), 701);
    CHECK_EQ_INT(lib_calls, 1);        /* asked once */
    CHECK_EQ_U64(tcf_kernel_code(&f), 802);
    CHECK_EQ_INT(mod_calls, 1);
    tcf_kernel_t u = { .handle = 0x9000, .kind = TCF_KIND_KERNEL };  /* loaded unseen */
    CHECK_EQ_U64(tcf_kernel_code(&u), 0);
    fail = 1;
    tcf_kernel_t e = { .handle = 0x7000, .kind = TCF_KIND_KERNEL };
    CHECK_EQ_U64(tcf_kernel_code(&e), 0);
    tcf_drv.kernel_get_library = NULL;
    tcf_kernel_t n = { .handle = 0x7000, .kind = TCF_KIND_KERNEL };
    CHECK_EQ_U64(tcf_kernel_code(&n), 0);
    tcf_kernel_t x = { .handle = 0x7000, .kind = TCF_KIND_UNKNOWN };
    CHECK_EQ_U64(tcf_kernel_code(&x), 0);
}

int main(void)
{
    char tmpl[] = "/tmp/tcf-images-XXXXXX";
    if (!mkdtemp(tmpl))
        return 1;
    snprintf(dir, sizeof dir, "%s", tmpl);
    RUN(inside_libraries);
    RUN(in_memory);
    RUN(files);
    RUN(kernel_code);
    RUN(handles);  /* last: it fills the table */
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_main_end();
}
