/* Private to codegen/: what gen.c uses from gen_math.c (the per-op math and the prelude). */
#ifndef TCF_CODEGEN_INTERNAL_H
#define TCF_CODEGEN_INTERNAL_H

#include "codegen/codegen.h"

/* Text appended to a fixed buffer; bad once anything did not fit (the source is then
 * refused, never cut short). One builder for gen.c, gen_reduce.c and gen_rows.c. */
typedef struct {
    char  *p;
    size_t cap, len;
    int    bad;
} tcf_codegen_sb_t;
void tcf_codegen_put(tcf_codegen_sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *tcf_codegen_prelude(void);
const char *tcf_codegen_ctype(tcf_dtype_t d);
int tcf_codegen_cvt(char *out, size_t cap, tcf_dtype_t from, tcf_dtype_t to, const char *e);
int tcf_codegen_op_check(const tcf_gop_t *op);
tcf_dtype_t tcf_codegen_arg_dt(const tcf_gop_t *op, unsigned i);
int tcf_codegen_op_func(char *out, size_t cap, const tcf_gop_t *op, unsigned k);
/* gen.c: op k's value as stored (see there); whether op k only moves bits (no barrier) */
int tcf_codegen_op_call(char *res, size_t cap, const tcf_gop_t *op, unsigned k,
                        const char *const *src, const char *sarr);
int tcf_codegen_moves(tcf_op_kind_t k);
/* What op k's value is declared with besides `const`: a fill's value may be read by
 * nobody (a later op overwrites its buffer: deterministic mode's NaN), so it is marked
 * [[maybe_unused]] where NVRTC would warn; "" for every other op. */
const char *tcf_codegen_quals(const tcf_gop_t *op);
/* gen_reduce.c: a full-row kernel's (softmax, norm) element conversions, tcf_tof (its input
 * as float) and tcf_cvt_out (a float result as PyTorch's store converts it), then sp's
 * helpers; b->bad when the output dtype has no conversion */
void tcf_fullrow_io(tcf_codegen_sb_t *b, const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp);
/* gen_softmax.c: 0 when s and sp make a softmax kernel; its body after gen_reduce.c's
 * header (the argument struct, the row, the types and block constants) */
int tcf_softmax_check(const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp);
void tcf_softmax_body(tcf_codegen_sb_t *b, const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp);
/* gen_layernorm.c: the same for a norm (LayerNorm, RMSNorm) */
int tcf_layernorm_check(const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp);
void tcf_layernorm_body(tcf_codegen_sb_t *b, const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp);
/* gen_rows.c: the source of a group with a row reduction (g->red) */
int tcf_codegen_rows_source(const tcf_group_t *g, char *buf, size_t cap);

#endif
