/* Disk-cache entries (cache/entry.c): the input as the file of an entry, read back as a
 * cubin and as a verdict, and listed; a bad entry must be a miss, never a load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "tests/fuzz/fuzz.h"

static char dir[64];

static void remove_dir(void)
{
    rmdir(dir);   /* empty: each input's entry is unlinked after it is read */
}

static void visit(const char *name, uint64_t key, int kind, size_t len, int ok, void *ctx)
{
    (void)name, (void)key, (void)kind, (void)len, (void)ok, (void)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t key = 0x0123456789abcdefull;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/tcf-fuzz-cache-XXXXXX");
        if (!mkdtemp(dir) || tcf_cache_open(dir) != 0)
            return 0;
        atexit(remove_dir);
    }
    char path[128];
    snprintf(path, sizeof path, "%s/%016llx.tcf", dir, (unsigned long long)key);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    if (size)
        fwrite(data, 1, size, f);
    fclose(f);
    for (int kind = TCF_CACHE_CUBIN; kind <= TCF_CACHE_VERDICT; kind++) {
        void *p = NULL;
        size_t len = 0;
        int rc = tcf_cache_get(key, (tcf_cache_kind_t)kind, &p, &len);
        if (rc == 0 && len > size)   /* a hit can only be the payload of these very bytes */
            abort();
        free(p);
    }
    (void)tcf_cache_list(visit, NULL);
    unlink(path);
    return 0;
}
