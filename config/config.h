/* config: the TCFUSE_* options and tcfuse's one output channel.
 *
 * Conventions: this module depends on nothing else in tcfuse and calls no CUDA code.
 * Options are read once, on first use (tcf_config_load), never on a hot path: readers
 * use the global tcf_cfg directly. Every message tcfuse prints goes through tcf_log,
 * which adds the "tcfuse: " prefix, guards against recursion and caps the volume.
 */
#ifndef TCF_CONFIG_H
#define TCF_CONFIG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    TCF_MODE_OFF = 0,
    TCF_MODE_OBSERVE,
    TCF_MODE_FUSE,
    TCF_MODE_GRAPH,
    TCF_MODE_FULL,     /* graph mode whose graphs hold fuse mode's plans */
    TCF_MODE__COUNT
} tcf_mode_t;

typedef enum { TCF_OPT_BOOL, TCF_OPT_INT, TCF_OPT_SIZE, TCF_OPT_STR, TCF_OPT_MODE,
               TCF_OPT_FAULT } tcf_opt_kind_t;

/* Where a value came from, for TCFUSE_PRINT_CONFIG. */
typedef enum { TCF_SRC_DEFAULT = 0, TCF_SRC_ENV, TCF_SRC_INVALID } tcf_src_t;

#define TCF_OPT_STR_MAX 4096

typedef struct {
#define TCF_OPT_FIELD_BOOL(f) int f;
#define TCF_OPT_FIELD_INT(f)  long long f;
#define TCF_OPT_FIELD_SIZE(f) long long f;
#define TCF_OPT_FIELD_STR(f)  char f[TCF_OPT_STR_MAX];
#define TCF_OPT_FIELD_MODE(f) tcf_mode_t f;
#define TCF_OPT_FIELD_FAULT(f) char f[TCF_OPT_STR_MAX];
#define TCF_OPT(field, kind, def, lo, hi, help) TCF_OPT_FIELD_##kind(field)
#include "config/options.def"
#undef TCF_OPT
} tcf_config_t;

/* One row of the table, for --help and printing. */
typedef struct {
    const char    *env;      /* "TCFUSE_MODE" */
    tcf_opt_kind_t kind;
    long long      lo, hi;
    const char    *def_text; /* the default, as text */
    const char    *help;
} tcf_opt_info_t;

extern tcf_config_t tcf_cfg;

/* Reads the environment into tcf_cfg, once; later calls return at once. Thread-safe.
 * Warns (once per option) about values that do not parse and keeps the default. */
void tcf_config_load(void);

/* The table, for tools: count and rows. */
size_t tcf_config_count(void);
const tcf_opt_info_t *tcf_config_info(size_t i);
tcf_src_t tcf_config_source(size_t i);

/* Writes "TCFUSE_X=value (default|environment|invalid: kept default)" lines via tcf_log. */
void tcf_config_print(void);
/* Writes the options table as help text to f. */
void tcf_config_help(FILE *f);

const char *tcf_mode_name(tcf_mode_t m);

/* Pure parsers (unit-tested). Return 0 on success, -1 when the text is not valid or is
 * outside [lo, hi]; *out is untouched on failure. Leading/trailing spaces are allowed. */
int tcf_parse_bool(const char *s, int *out);
int tcf_parse_int(const char *s, long long lo, long long hi, long long *out);
int tcf_parse_size(const char *s, long long lo, long long hi, long long *out);
int tcf_parse_mode(const char *s, tcf_mode_t *out);

/* --- output --------------------------------------------------------------------------- */
typedef enum { TCF_LOG_ERROR = 0, TCF_LOG_WARN = 1, TCF_LOG_INFO = 2, TCF_LOG_DEBUG = 3 } tcf_level_t;

/* Prints "tcfuse: <message>\n" to TCFUSE_LOG_FILE or stderr when lvl <= TCFUSE_VERBOSE.
 * Never recurses (a message printed while printing is dropped), never allocates on the
 * heap, and stops after a cap of lines (saying so once). */
void tcf_log(tcf_level_t lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, unconditionally and uncapped: for output the user asked for (stats, config). */
void tcf_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Expands "%p" in a path template to the pid and "%r" to the process's rank (tcf_rank),
 * or "pid" and the pid where it has none ("%%" is a '%'). Returns 0, or -1 if it does not
 * fit. */
int tcf_expand_path(const char *tmpl, char *out, size_t cap);

/* The rank a launcher of torch.distributed's (torchrun, torch.multiprocessing with its
 * environment) gave this process, from RANK and WORLD_SIZE: 1 and both copied (digits,
 * at most 9 each), or 0 when either is unset or not a number. */
int tcf_rank(char rank[10], char world[10]);

#define TCF_VERSION "0.1.0"

#endif
