/* config: the TCFUSE_* options of options.def, read once into tcf_cfg.
 *
 * This runs inside other people's processes, possibly before main or from inside a dlsym
 * hook: it allocates nothing, never exits, and prints only what the user asked for (a
 * warning about a variable they set badly, or TCFUSE_PRINT_CONFIG).
 */
#include "base/fault.h"
#include "config/config.h"
#include "config/config_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TCF_OPT(field, kind, def, lo, hi, help) .field = def,
static const tcf_config_t tcf_cfg_defaults = {
#include "config/options.def"
};
/* Statically the defaults too, so a reader that runs before tcf_config_load (or during
 * it, on the loading thread) sees sane values. */
tcf_config_t tcf_cfg = {
#include "config/options.def"
};
#undef TCF_OPT

typedef struct {
    const char    *field;
    tcf_opt_kind_t kind;
    size_t         off; /* of the field in tcf_config_t */
    long long      lo, hi;
    const char    *help;
} tcf_opt_row_t;

static const tcf_opt_row_t tcf_rows[] = {
#define TCF_OPT(field, kind, def, lo, hi, help) \
    { #field, TCF_OPT_##kind, offsetof(tcf_config_t, field), (long long)(lo), (long long)(hi), \
      help },
#include "config/options.def"
#undef TCF_OPT
};
#define TCF_NOPT (sizeof tcf_rows / sizeof tcf_rows[0])

#define TCF_ENV_MAX 48
#define TCF_OPT(field, kind, def, lo, hi, help) \
    _Static_assert(sizeof("TCFUSE_" #field) <= TCF_ENV_MAX, "option name too long: " #field);
#include "config/options.def"
#undef TCF_OPT

#define TCF_BAD_MAX 64 /* how much of a bad value we keep to quote back */

/* The preprocessor cannot upper-case, so the variable names and default texts are built
 * once, at first use, under their own pthread_once (tcf_config_info may run unloaded). */
static tcf_opt_info_t tcf_infos[TCF_NOPT];
static char tcf_env_names[TCF_NOPT][TCF_ENV_MAX];
static char tcf_def_texts[TCF_NOPT][32];
static pthread_once_t tcf_table_once = PTHREAD_ONCE_INIT;

static tcf_src_t tcf_srcs[TCF_NOPT];
static char tcf_bad[TCF_NOPT][TCF_BAD_MAX];
static pthread_once_t tcf_load_once = PTHREAD_ONCE_INIT;
static atomic_int tcf_loaded;
/* Set while this thread reads the environment: a hooked call reached from in there that
 * calls tcf_config_load again must not wait on its own pthread_once (deadlock). */
static _Thread_local int tcf_loading __attribute__((tls_model("initial-exec")));

/* --- formatting ---------------------------------------------------------------------- */
/* A size in the largest unit that divides it exactly: 268435456 -> "256MiB". */
static void tcf_config_fmt_size(long long v, char *buf, size_t cap)
{
    static const char *const units[] = { "TiB", "GiB", "MiB", "KiB" };
    for (int k = 0; k < 4; k++) {
        long long unit = 1LL << (40 - 10 * k);
        if (v != 0 && v % unit == 0) {
            snprintf(buf, cap, "%lld%s", v / unit, units[k]);
            return;
        }
    }
    snprintf(buf, cap, "%lld", v);
}

/* The option's value in c as text: in buf, or the string field itself for STR. */
static const char *tcf_config_fmt_value(size_t i, const tcf_config_t *c, char *buf, size_t cap)
{
    const void *f = (const char *)c + tcf_rows[i].off;
    switch (tcf_rows[i].kind) {
    case TCF_OPT_BOOL: snprintf(buf, cap, "%d", *(const int *)f); break;
    case TCF_OPT_INT: snprintf(buf, cap, "%lld", *(const long long *)f); break;
    case TCF_OPT_SIZE: tcf_config_fmt_size(*(const long long *)f, buf, cap); break;
    case TCF_OPT_MODE: snprintf(buf, cap, "%s", tcf_mode_name(*(const tcf_mode_t *)f)); break;
    case TCF_OPT_STR:
    case TCF_OPT_FAULT: return f;
    }
    return buf;
}

/* What the option accepts: verbose for warnings, short for the help's column. */
static const char *tcf_config_fmt_form(size_t i, int brief, char *buf, size_t cap)
{
    const tcf_opt_row_t *r = &tcf_rows[i];
    char lo[32], hi[32];
    switch (r->kind) {
    case TCF_OPT_BOOL: return brief ? "bool" : "1/0, true/false, on/off or yes/no";
    case TCF_OPT_STR:
        if (brief)
            return "text";
        snprintf(buf, cap, "text of at most %d bytes", TCF_OPT_STR_MAX - 1);
        return buf;
    case TCF_OPT_INT:
        snprintf(buf, cap, brief ? "[%lld, %lld]" : "an integer in [%lld, %lld]", r->lo, r->hi);
        return buf;
    case TCF_OPT_SIZE:
        tcf_config_fmt_size(r->lo, lo, sizeof lo);
        tcf_config_fmt_size(r->hi, hi, sizeof hi);
        snprintf(buf, cap, brief ? "[%s, %s]" : "a size in [%s, %s]: bytes, or a number and "
                 "K, KiB, M, MiB, G, GiB, T or TiB", lo, hi);
        return buf;
    case TCF_OPT_FAULT: {
        size_t len = 0;
        if (brief)
            return "sites";
        for (int st = 0; st < TCF_FAULT__COUNT; st++) {
            int n = snprintf(buf + len, cap - len, "%s%s", st ? ", " : "comma-separated "
                             "site[:N|:N+|:every], the sites being ", tcf_fault_name(st));
            if (n < 0 || (size_t)n >= cap - len)
                break; /* cut short, still terminated */
            len += (size_t)n;
        }
        return buf;
    }
    case TCF_OPT_MODE: {
        size_t len = 0;
        for (int m = 0; m < TCF_MODE__COUNT; m++) {
            const char *sep = m ? (brief ? "|" : ", ") : (brief ? "" : "one of ");
            int n = snprintf(buf + len, cap - len, "%s%s", sep, tcf_mode_name((tcf_mode_t)m));
            if (n < 0 || (size_t)n >= cap - len)
                break; /* cut short, still terminated */
            len += (size_t)n;
        }
        return buf;
    }
    }
    return "?";
}

static void tcf_config_table_init(void)
{
    for (size_t i = 0; i < TCF_NOPT; i++) {
        char *env = tcf_env_names[i];
        size_t n = (size_t)snprintf(env, TCF_ENV_MAX, "TCFUSE_%s", tcf_rows[i].field);
        for (size_t k = 0; k < n; k++)
            env[k] = (env[k] >= 'a' && env[k] <= 'z') ? (char)(env[k] - 'a' + 'A') : env[k];
        tcf_infos[i] = (tcf_opt_info_t){
            .env = env, .kind = tcf_rows[i].kind, .lo = tcf_rows[i].lo, .hi = tcf_rows[i].hi,
            .def_text = tcf_config_fmt_value(i, &tcf_cfg_defaults, tcf_def_texts[i],
                                             sizeof tcf_def_texts[i]),
            .help = tcf_rows[i].help,
        };
    }
}

/* The default as shown to people: an empty string is shown as "". */
static const char *tcf_config_def_shown(size_t i)
{
    return tcf_infos[i].def_text[0] ? tcf_infos[i].def_text : "\"\"";
}

/* --- loading ------------------------------------------------------------------------- */
/* TCFUSE_FAULT's sites, parsed with its value and armed once every option is read. */
static tcf_fault_spec_t tcf_fault_spec_read;

static int tcf_config_parse_one(size_t i, const char *s)
{
    const tcf_opt_row_t *r = &tcf_rows[i];
    void *dst = (char *)&tcf_cfg + r->off;
    switch (r->kind) {
    case TCF_OPT_BOOL: return tcf_parse_bool(s, dst);
    case TCF_OPT_INT: return tcf_parse_int(s, r->lo, r->hi, dst);
    case TCF_OPT_SIZE: return tcf_parse_size(s, r->lo, r->hi, dst);
    case TCF_OPT_MODE: return tcf_parse_mode(s, dst);
    case TCF_OPT_FAULT:
    case TCF_OPT_STR: {
        size_t len = strlen(s); /* kept verbatim: a path may well end in a space */
        if (len >= TCF_OPT_STR_MAX ||
            (r->kind == TCF_OPT_FAULT && tcf_fault_parse(s, &tcf_fault_spec_read, NULL, 0)))
            return -1;
        memcpy(dst, s, len + 1);
        return 0;
    }
    }
    return -1;
}

/* Keeps a short, printable copy of a bad value to quote back to the user. */
static void tcf_config_keep_bad(size_t i, const char *s)
{
    char *d = tcf_bad[i];
    size_t n = strlen(s), keep = n < TCF_BAD_MAX ? n : TCF_BAD_MAX - 4;
    for (size_t k = 0; k < keep; k++)
        d[k] = (s[k] >= 0x20 && s[k] < 0x7f && s[k] != '"') ? s[k] : '?';
    strcpy(d + keep, n < TCF_BAD_MAX ? "" : "...");
}

static void tcf_config_read(void)
{
    char form[256];
    pthread_once(&tcf_table_once, tcf_config_table_init);
    tcf_loading = 1;
    memset(&tcf_fault_spec_read, 0, sizeof tcf_fault_spec_read);
    for (size_t i = 0; i < TCF_NOPT; i++) {
        /* secure_getenv: in a setuid program, TCFUSE_LOG_FILE must not let the invoking
         * user create files as the owner. */
        const char *s = secure_getenv(tcf_env_names[i]);
        tcf_srcs[i] = TCF_SRC_DEFAULT;
        if (!s)
            continue;
        tcf_srcs[i] = tcf_config_parse_one(i, s) ? TCF_SRC_INVALID : TCF_SRC_ENV;
        if (tcf_srcs[i] == TCF_SRC_INVALID)
            tcf_config_keep_bad(i, s);
    }
    /* Handed down before anything runs that a site could fail (base/fault.h). */
    tcf_fault_arm(&tcf_fault_spec_read);
    /* Published before the warnings, so they honour TCFUSE_LOG_FILE and TCFUSE_VERBOSE. */
    atomic_store_explicit(&tcf_loaded, 1, memory_order_release);
    for (size_t i = 0; i < TCF_NOPT; i++)
        if (tcf_srcs[i] == TCF_SRC_INVALID)
            tcf_log(TCF_LOG_WARN, "%s=\"%s\" is not valid (expected %s); keeping the default %s",
                    tcf_infos[i].env, tcf_bad[i], tcf_config_fmt_form(i, 0, form, sizeof form),
                    tcf_config_def_shown(i));
    if (tcf_cfg.print_config)
        tcf_config_print();
    tcf_loading = 0;
}

void tcf_config_load(void)
{
    if (atomic_load_explicit(&tcf_loaded, memory_order_acquire) || tcf_loading)
        return;
    pthread_once(&tcf_load_once, tcf_config_read);
}

int tcf_config_is_loaded(void)
{
    return atomic_load_explicit(&tcf_loaded, memory_order_acquire);
}

void tcf_config_reload(void)
{
    atomic_store_explicit(&tcf_loaded, 0, memory_order_release);
    memcpy(&tcf_cfg, &tcf_cfg_defaults, sizeof tcf_cfg);
    tcf_log_reset();
    tcf_config_read();
}

/* --- the table, for tools ------------------------------------------------------------ */
size_t tcf_config_count(void) { return TCF_NOPT; }

const tcf_opt_info_t *tcf_config_info(size_t i)
{
    pthread_once(&tcf_table_once, tcf_config_table_init);
    return i < TCF_NOPT ? &tcf_infos[i] : NULL;
}

tcf_src_t tcf_config_source(size_t i) { return i < TCF_NOPT ? tcf_srcs[i] : TCF_SRC_DEFAULT; }

void tcf_config_print(void)
{
    char val[48];
    pthread_once(&tcf_table_once, tcf_config_table_init);
    for (size_t i = 0; i < TCF_NOPT; i++) {
        const char *v = tcf_config_fmt_value(i, &tcf_cfg, val, sizeof val);
        if (tcf_srcs[i] == TCF_SRC_INVALID)
            tcf_out("%s=%s (invalid \"%s\": kept default)", tcf_infos[i].env, v, tcf_bad[i]);
        else
            tcf_out("%s=%s (%s)", tcf_infos[i].env, v,
                    tcf_srcs[i] == TCF_SRC_ENV ? "environment" : "default");
    }
}

void tcf_config_help(FILE *f)
{
    char form[96];
    int wn = (int)strlen("variable"), wd = (int)strlen("default"), wf = (int)strlen("accepts");
    pthread_once(&tcf_table_once, tcf_config_table_init);
    for (size_t i = 0; i < TCF_NOPT; i++) {
        int n = (int)strlen(tcf_infos[i].env), d = (int)strlen(tcf_config_def_shown(i));
        int fl = (int)strlen(tcf_config_fmt_form(i, 1, form, sizeof form));
        wn = n > wn ? n : wn;
        wd = d > wd ? d : wd;
        wf = fl > wf ? fl : wf;
    }
    fprintf(f, "  %-*s  %-*s  %-*s  %s\n", wn, "variable", wd, "default", wf, "accepts", "meaning");
    for (size_t i = 0; i < TCF_NOPT; i++) {
        fprintf(f, "  %-*s  %-*s  %-*s  %s\n", wn, tcf_infos[i].env, wd,
                tcf_config_def_shown(i), wf, tcf_config_fmt_form(i, 1, form, sizeof form),
                tcf_infos[i].help);
    }
}
