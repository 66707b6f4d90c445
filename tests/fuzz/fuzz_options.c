/* Option values (config/parse.c): every parser, path expansion and TCFUSE_FAULT's
 * (base/fault.c), on the input split into NUL- or newline-ended strings. Bounds come from
 * the input too. */
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "config/config.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    for (char *s = buf, *e; s <= buf + size; s = e + 1) {
        e = s + strcspn(s, "\n");
        char saved = *e;
        *e = '\0';
        int b;
        long long v, lo = (long long)(unsigned char)s[0] - 64, hi = lo + (1ll << (s[0] & 62));
        tcf_mode_t m;
        char out[64];
        (void)tcf_parse_bool(s, &b);
        (void)tcf_parse_int(s, lo, hi, &v);
        (void)tcf_parse_int(s, -(1ll << 62), 1ll << 62, &v);
        (void)tcf_parse_size(s, 0, hi, &v);
        (void)tcf_parse_size(s, 0, (1ll << 62), &v);
        if (tcf_parse_mode(s, &m) == 0)
            (void)tcf_mode_name(m);
        (void)tcf_expand_path(s, out, sizeof out);
        tcf_fault_spec_t fs;
        (void)tcf_fault_parse(s, &fs, out, sizeof out);
        *e = saved;
        if (e >= buf + size)
            break;
    }
    free(buf);
    return 0;
}
