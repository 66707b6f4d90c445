/* Private to codegen/: what gen.c uses from gen_math.c (the per-op math and the prelude). */
#ifndef TCF_CODEGEN_INTERNAL_H
#define TCF_CODEGEN_INTERNAL_H

#include "codegen/codegen.h"

const char *tcf_codegen_prelude(void);
const char *tcf_codegen_ctype(tcf_dtype_t d);
int tcf_codegen_cvt(char *out, size_t cap, tcf_dtype_t from, tcf_dtype_t to, const char *e);
int tcf_codegen_op_check(const tcf_gop_t *op);
tcf_dtype_t tcf_codegen_arg_dt(const tcf_gop_t *op, unsigned i);
int tcf_codegen_op_func(char *out, size_t cap, const tcf_gop_t *op, unsigned k);

#endif
