/* tools: the `tcfuse` command's pieces. One file per subcommand or helper; this header
 * declares what they share. The command is a normal program (it owns its process): it may
 * exit on out-of-memory, unlike the preloaded library.
 */
#ifndef TCF_TOOLS_H
#define TCF_TOOLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes, as env(1) and timeout(1) use them for a command they could not start. */
enum {
    TCF_EXIT_OK = 0,
    TCF_EXIT_FAIL = 1,      /* the subcommand failed (a trace that cannot be read) */
    TCF_EXIT_USAGE = 2,     /* bad arguments */
    TCF_EXIT_NOLIB = 125,   /* libtcfuse.so not found */
    TCF_EXIT_NOEXEC = 126,  /* the command exists but cannot be run */
    TCF_EXIT_NOTFOUND = 127 /* the command does not exist */
};

/* Subcommands: take the arguments after the subcommand's name (argv[0] is the name),
 * return the exit code. tcf_tool_run returns only when the command could not start. */
int tcf_tool_run(int argc, char **argv);
int tcf_tool_report(int argc, char **argv);
/* The coverage table of a trace alone (plan.c; `tcfuse report` ends with it): per kernel
 * family, launches, decoded, fused, and why the rest were not decoded. */
int tcf_tool_coverage(const char *path, size_t top);

/* Bad arguments: one line on stderr, "tcfuse CMD: <what> (tcfuse help CMD)" (CMD NULL:
 * "tcfuse: <what> (tcfuse --help)"), and returns TCF_EXIT_USAGE. */
int tcf_tool_bad_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An option's value as a decimal integer from lo to hi: 0 and *out set, or -1 (empty,
 * trailing characters, out of range). */
int tcf_tool_int(const char *s, long long lo, long long hi, long long *out);

/* Help texts, to f. */
void tcf_tool_usage(FILE *f);
void tcf_tool_help_run(FILE *f);
void tcf_tool_help_report(FILE *f);

/* Writes a readable short form of a (mangled) kernel name into out (cap bytes,
 * truncated, NUL-terminated) and returns out: "_ZN2at6native3addIfEEvT_" reads
 * "at::native::add<float>". A name it cannot parse comes back unchanged. */
const char *tcf_tool_demangle(const char *name, char *out, size_t cap);

/* realloc that exits with a message when memory runs out. */
void *tcf_tool_realloc(void *p, size_t n);
/* Grows *p (an array of elem-byte items, *cap of them) to hold at least need items. */
void tcf_tool_grow(void **p, size_t *cap, size_t need, size_t elem);
char *tcf_tool_strdup(const char *s);

/* A hash map from a 64-bit key or a string to a size_t (an index into the caller's
 * array). Zero-initialize it; free with tcf_tool_map_free. */
typedef struct {
    struct tcf_tool_map_slot *slots;
    size_t cap, len;
} tcf_tool_map_t;

/* The value slot for key, created (zero) if absent: *created says which. The pointer is
 * valid until the next insertion. Strings are copied. */
size_t *tcf_tool_map_u64(tcf_tool_map_t *m, uint64_t key, int *created);
size_t *tcf_tool_map_str(tcf_tool_map_t *m, const char *key, int *created);
/* The value slot for key, or NULL. */
size_t *tcf_tool_map_get_u64(const tcf_tool_map_t *m, uint64_t key);
void tcf_tool_map_free(tcf_tool_map_t *m);

#endif
