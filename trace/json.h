/* trace/json.h: the JSON pieces of the trace reader (internal to trace/read.c,
 * split out to keep files small; nothing else should include it).
 *
 * Everything works on spans [p, e) of one line, never reads past e, never allocates and
 * never recurses without a bound: lines come from untrusted files and are fuzzed.
 * Decoders return 0 on success and -1 when the value is malformed or of the wrong JSON
 * type; a value of type TCF_JSON_NONE (a field the line lacks) succeeds and leaves *out
 * unchanged, so callers preset defaults.
 */
#ifndef TCF_TRACE_READ_JSON_H
#define TCF_TRACE_READ_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "trace/read.h"

typedef enum {
    TCF_JSON_NONE = 0, TCF_JSON_STR, TCF_JSON_NUM, TCF_JSON_ARR, TCF_JSON_OBJ, TCF_JSON_LIT
} tcf_json_type_t;

/* A value's span: for a string the raw text between the quotes, else the whole token
 * (for arrays and objects, brackets included). */
typedef struct { tcf_json_type_t type; const char *p, *e; } tcf_json_val_t;

/* Scratch for decoded strings and arrays. With base == NULL nothing is written and
 * `used` only counts the bytes a second pass with a real base will need. */
typedef struct { unsigned char *base; size_t used; } tcf_json_arena_t;

/* Skips JSON white space; returns the first other position (or end). */
const char *tcf_trace_json_ws(const char *p, const char *end);
/* *pp at an opening quote: moves past the closing one. Escapes are checked on decoding. */
int tcf_trace_json_scan_string(const char **pp, const char *end);
/* Any value at *pp: fills *v and moves *pp past it. Containers are skipped by bracket
 * matching to a fixed depth. */
int tcf_trace_json_scan_value(const char **pp, const char *end, tcf_json_val_t *v);

/* An integer (no fraction, no exponent) that fits int64_t; uint: the same, >= 0. */
int tcf_trace_json_int(const tcf_json_val_t *v, int64_t *out);
int tcf_trace_json_uint(const tcf_json_val_t *v, uint64_t *out);
/* A string "0x" + 1..16 hex digits. */
int tcf_trace_json_hex(const tcf_json_val_t *v, uint64_t *out);
/* A string, decoded into the arena (NUL-terminated). Missing: "". */
int tcf_trace_json_str(const tcf_json_val_t *v, tcf_json_arena_t *a, const char **out);
/* An array of exactly `want` integers in [0, UINT32_MAX]. */
int tcf_trace_json_u32s(const tcf_json_val_t *v, uint32_t *out, size_t want);
/* An array of [offset, size] pairs, into the arena. */
int tcf_trace_json_pairs(const tcf_json_val_t *v, tcf_json_arena_t *a,
                         const tcf_trace_param_t **out, size_t *cnt);
/* An array of strings: a pointer table and the strings, into the arena. */
int tcf_trace_json_strs(const tcf_json_val_t *v, tcf_json_arena_t *a,
                        const char *const **out, size_t *cnt);
/* A string of hex digit pairs (an optional "0x" first), decoded to bytes in the arena. */
int tcf_trace_json_bytes(const tcf_json_val_t *v, tcf_json_arena_t *a,
                         const uint8_t **out, size_t *len);

#endif
