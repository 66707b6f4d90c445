/* Which loaded object holds an address (base.h). Two users: codegen/nvrtc.c asks, for every
 * exit handler the process registers, whether the registering code is NVRTC's (a name);
 * recognize/images.c asks, for every module the process loads, which library embeds the
 * image and whether the program could have written it (segment flags, build-id). */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/base.h"
#include "base/driver.h"

tcf_driver_t tcf_drv;

void tcf_driver_set(const tcf_driver_t *drv)
{
    tcf_drv = *drv;
}

uint64_t tcf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The build-id note among one object's PT_NOTE segments, hashed; 0 when it has none. The
 * hash is part of code identities kept on disk (recognize/images.c): changing it orphans
 * every verdict cached so far. */
static uint64_t tcf_build_id(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
            const uint8_t *name = p + sizeof *nh;
            const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
            const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end || next < p)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                !memcmp(name, "GNU", 4) && nh->n_descsz > 0) {
                uint64_t h = XXH3_64bits_withSeed(desc, nh->n_descsz, 0xB1D);
                return h ? h : 1;
            }
            p = next;
        }
    }
    return 0;
}

typedef struct {
    uintptr_t     addr;
    unsigned      flags;
    int           found;
    tcf_object_t *o;
} tcf_walk_t;

static int tcf_walk_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    tcf_walk_t *w = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || w->addr < lo || w->addr - lo >= ph->p_memsz)
            continue;
        w->found = 1;
        w->o->name = info->dlpi_name ? info->dlpi_name : "";
        if (w->flags & TCF_OBJ_SEGMENT) {
            w->o->writable = (ph->p_flags & PF_W) != 0;
            w->o->build_id = tcf_build_id(info);
        }
        return 1;
    }
    return 0;
}

int tcf_object_at(const void *addr, unsigned flags, tcf_object_t *o)
{
    memset(o, 0, sizeof *o);
    o->name = "";
    if (!addr)
        return 0;
#ifdef DLFO_EH_SEGMENT_TYPE
    typedef int (*find_fn)(void *, struct dl_find_object *);
    static void *_Atomic find;  /* the function, or the address of itself: looked, absent */
    void *f = atomic_load_explicit(&find, memory_order_acquire);
    if (!f) {
        f = dlsym(RTLD_DEFAULT, "_dl_find_object");
        atomic_store_explicit(&find, f ? f : (void *)&find, memory_order_release);
        if (!f)
            f = (void *)&find;
    }
    if (!(flags & (TCF_OBJ_WALK | TCF_OBJ_SEGMENT)) && f != (void *)&find) {
        struct dl_find_object fo;
        if (((find_fn)f)((void *)(uintptr_t)addr, &fo) != 0 || !fo.dlfo_link_map)
            return 0;
        o->name = fo.dlfo_link_map->l_name ? fo.dlfo_link_map->l_name : "";
        return 1;
    }
#endif
    tcf_walk_t w = { .addr = (uintptr_t)addr, .flags = flags, .o = o };
    dl_iterate_phdr(tcf_walk_cb, &w);
    return w.found;
}
