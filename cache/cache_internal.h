/* cache internals: shared by cache/cache.c and cache/entry.c only (tests and tools use
 * cache/cache.h). */
#ifndef TCF_CACHE_INTERNAL_H
#define TCF_CACHE_INTERNAL_H

#include <stddef.h>

/* Opens the cache directory (opening the default one first if nothing did), checks it
 * again through the descriptor (a directory, ours, not writable by others) and copies its
 * path into path (cap bytes). Returns the descriptor (the caller closes it), or -1 when
 * the cache is off or the directory changed under us since tcf_cache_open. */
int tcf_cache_dirfd(char *path, size_t cap);

#endif
