/* cache: the disk cache of compiled kernels and verification verdicts.
 *
 * Entries live under $TCFUSE_CACHE_DIR, else $XDG_CACHE_HOME/tcfuse, else ~/.cache/tcfuse.
 * The directory is created 0700 and must be owned by the user and not writable by group
 * or others; otherwise the cache is off (one warning). Each entry is one file named by the
 * hex of its 64-bit key, written to a temporary name and renamed, read with O_NOFOLLOW,
 * and framed by a header (magic, kind, format version, key, payload length) and an XXH3
 * checksum of header and payload (layout: cache/entry.c): a file that fails any check is a
 * miss (and a warning, once per process), never a load. Keys are computed by callers from
 * everything the payload depends on (tcf_cache_key: the generated source, the NVRTC
 * version, the architecture, tcfuse's version, and a kind tag so cubins and verdicts never
 * collide).
 * No allocation is kept; thread-safe (no shared state beyond the directory path and the
 * warned-once flag). Never aborts; prints only through tcf_log.
 */
#ifndef TCF_CACHE_H
#define TCF_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* PROGRAM: what a program's last run learned about it (exec/reserve.c: its pool's peak). */
typedef enum { TCF_CACHE_CUBIN = 1, TCF_CACHE_VERDICT = 2, TCF_CACHE_PROGRAM = 3 } tcf_cache_kind_t;
#define TCF_CACHE_KIND_VALID(k) ((k) >= TCF_CACHE_CUBIN && (k) <= TCF_CACHE_PROGRAM)

/* Resolves and prepares the directory (creating it 0700). 0 when usable, -1 when not
 * (the reason goes to tcf_log once). dir may be NULL for the default rules above. */
int tcf_cache_open(const char *dir);
/* The directory in use, or NULL when the cache is off. Valid until the next
 * tcf_cache_open. Like put and get, opens the default directory on first use. */
const char *tcf_cache_dir(void);
/* Why the cache is off (the text of the warning), or NULL when it is usable: for
 * `tcfuse cache dir`, which must say why even under TCFUSE_VERBOSE=0. */
const char *tcf_cache_problem(void);

uint64_t tcf_cache_key(tcf_cache_kind_t kind, const char *source, const char *nvrtc_version,
                       int arch);

/* Stores a payload under key, atomically. 0 or -1 (also when the cache is off). */
int tcf_cache_put(uint64_t key, tcf_cache_kind_t kind, const void *data, size_t len);
/* Loads key's payload into a malloc'ed buffer (*data; caller frees). 0 on a hit; 1 on a
 * miss (absent); -1 on a bad entry (wrong owner, a link, short, bad checksum, ...), which is
 * also a miss, and when the cache is off. */
int tcf_cache_get(uint64_t key, tcf_cache_kind_t kind, void **data, size_t *len);

/* Entries found but not used (a bad entry, a read that failed) and stores that failed,
 * while the directory was usable, since the process started: the stats' fallbacks. */
void tcf_cache_failures(uint64_t *reads, uint64_t *writes);

/* For `tcfuse cache`: visits every entry (valid or not). verify_ok is 1 when the entry's
 * frame and checksum are good; then kind and len are the header's (len: the payload's
 * bytes), else kind is 0 and len the file's size. Returns the number visited, or -1. */
typedef void (*tcf_cache_visit_fn)(const char *name, uint64_t key, int kind, size_t len,
                                   int verify_ok, void *ctx);
int tcf_cache_list(tcf_cache_visit_fn fn, void *ctx);
/* Removes every entry (only files that look like entries, and temporary files a killed
 * writer left). Returns the number of entries removed, or -1. */
int tcf_cache_clear(void);

#endif
