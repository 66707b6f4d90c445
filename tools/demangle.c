/* demangle: a short, readable name for an Itanium-mangled kernel name, without linking a
 * demangler (libstdc++'s would drag C++ into the tool; the report only needs a label).
 *
 * What it renders: the function's qualified name and its template arguments, compactly:
 * a class type as its last component (with its own arguments), a lambda as {lambda}, a
 * local entity as <enclosing function>::<entity>, a literal as its value. What it does
 * not: substitutions (S0_ and friends) print as "_", since resolving them needs the full
 * substitution table. Parameter lists are dropped. Anything it cannot parse makes it give
 * back the name as it came; it never reads past the string and recursion is bounded. */
#include "tools/tools.h"

#include <string.h>

#define TCF_DM_DEPTH_MAX 24

typedef struct {
    const char *p, *end;
    char *o;
    size_t cap, n;
    int quiet; /* > 0: parse without writing */
    int depth;
} dm_t;

static int dm_type(dm_t *d);
static int dm_name(dm_t *d, int qualified);

static void put(dm_t *d, const char *s, size_t n)
{
    if (d->quiet) return;
    if (n > d->cap - 1 - d->n) n = d->cap - 1 - d->n; /* truncate, keep the NUL */
    memcpy(d->o + d->n, s, n);
    d->n += n;
    d->o[d->n] = 0;
}

static void puts_(dm_t *d, const char *s) { put(d, s, strlen(s)); }
static int peek(const dm_t *d, size_t i) { return (size_t)(d->end - d->p) > i ? d->p[i] : 0; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Skips S<seq-id>_ or T<n>_ (references to earlier names and template parameters). */
static int skip_to_underscore(dm_t *d)
{
    const char *u = memchr(d->p, '_', (size_t)(d->end - d->p));
    if (!u) return -1;
    d->p = u + 1;
    return 0;
}

static int source_name(dm_t *d)
{
    size_t len = 0;
    while (is_digit(peek(d, 0)) && len < 100000) len = len * 10 + (size_t)(*d->p++ - '0');
    if (len == 0 || len > (size_t)(d->end - d->p)) return -1;
    if (len > 10 && strncmp(d->p, "_GLOBAL__N", 10) == 0) puts_(d, "(anonymous namespace)");
    else put(d, d->p, len);
    d->p += len;
    return 0;
}

/* I <arg>+ E, rendered as <a, b>. A pack (J...E) renders its elements in place. */
static int dm_args(dm_t *d, int bracket)
{
    int first = 1;
    d->p++;
    if (++d->depth > TCF_DM_DEPTH_MAX) return -1;
    if (bracket) puts_(d, "<");
    while (peek(d, 0) != 'E') {
        int c = peek(d, 0);
        if (!c) return -1;
        if (!first) puts_(d, ", ");
        first = 0;
        if (c == 'L') { /* L <type> <value> E, or LZ <encoding> E */
            const char *v;
            d->p++;
            if (peek(d, 0) == 'Z' || peek(d, 0) == '_') return -1;
            if (peek(d, 0) == 'b' && (peek(d, 1) == '0' || peek(d, 1) == '1')) {
                puts_(d, peek(d, 1) == '1' ? "true" : "false");
                d->p += 2;
            } else {
                d->quiet++;
                if (dm_type(d) < 0) return -1;
                d->quiet--;
                if (peek(d, 0) == 'n') puts_(d, "-"), d->p++;
                for (v = d->p; peek(d, 0) && peek(d, 0) != 'E';) d->p++;
                put(d, v, (size_t)(d->p - v));
            }
            if (peek(d, 0) != 'E') return -1;
            d->p++;
        } else if (c == 'J') {
            if (dm_args(d, 0) < 0) return -1;
        } else if (c == 'X') {
            return -1; /* expressions: too rare in kernel names to be worth a parser */
        } else if (dm_type(d) < 0) {
            return -1;
        }
    }
    d->p++;
    d->depth--;
    if (bracket) puts_(d, ">");
    return 0;
}

/* One component of a name. */
static int dm_unqualified(dm_t *d)
{
    int c = peek(d, 0), c1 = peek(d, 1);
    if (is_digit(c)) return source_name(d);
    if (c == 'U' && c1 == 'l') { /* a lambda's closure type: Ul <params> E [<n>] _ */
        d->p += 2;
        d->quiet++;
        while (peek(d, 0) && peek(d, 0) != 'E')
            if (dm_type(d) < 0) return -1;
        d->quiet--;
        if (!peek(d, 0)) return -1;
        d->p++;
        puts_(d, "{lambda}");
        return skip_to_underscore(d);
    }
    if (c == 'U' && c1 == 't') { puts_(d, "{unnamed}"); return skip_to_underscore(d); }
    if (c == 'C' && c1 >= '1' && c1 <= '5') { puts_(d, "{ctor}"); d->p += 2; return 0; }
    if (c == 'D' && c1 >= '0' && c1 <= '5') { puts_(d, "{dtor}"); d->p += 2; return 0; }
    if (c == 'c' && c1 == 'l') { puts_(d, "operator()"); d->p += 2; return 0; }
    if (c >= 'a' && c <= 'z' && c1 >= 'a' && c1 <= 'z') { puts_(d, "operator"); d->p += 2; return 0; }
    return -1;
}

/* Z <encoding> E <entity>: a name local to a function. fn_only: write only the innermost
 * function's name (the entity of an inner Z is an operator() of an outer lambda). */
static int dm_local(dm_t *d, int fn_only)
{
    d->p++;
    if (++d->depth > TCF_DM_DEPTH_MAX) return -1;
    if (peek(d, 0) == 'Z' ? dm_local(d, 1) < 0 : dm_name(d, 0) < 0) return -1;
    d->quiet++;
    while (peek(d, 0) && peek(d, 0) != 'E') /* the enclosing function's parameters */
        if (dm_type(d) < 0) return -1;
    d->quiet--;
    if (!peek(d, 0)) return -1;
    d->p++;
    if (fn_only) d->quiet++;
    puts_(d, "::");
    if (peek(d, 0) == 's') d->p++, puts_(d, "{string}");
    else if (dm_name(d, 0) < 0) return -1;
    if (fn_only) d->quiet--;
    d->depth--;
    return 0;
}

/* A name: N...E nested, St..., a local name, or one component; each followed by optional
 * template arguments. qualified: a::b::c, else only the last component. */
static int dm_name(dm_t *d, int qualified)
{
    size_t mark = d->n;
    int first = 1;
    if (peek(d, 0) == 'Z') return dm_local(d, 0);
    if (peek(d, 0) != 'N') {
        if (peek(d, 0) == 'S' && peek(d, 1) == 't') d->p += 2, puts_(d, qualified ? "std::" : "");
        if (dm_unqualified(d) < 0) return -1;
        return peek(d, 0) == 'I' ? dm_args(d, 1) : 0;
    }
    for (d->p++; strchr("rVKRO", peek(d, 0)) && peek(d, 0); d->p++) {} /* cv- and ref- */
    while (peek(d, 0) != 'E') {
        int c = peek(d, 0);
        if (!c) return -1;
        if (c == 'I') { if (dm_args(d, 1) < 0) return -1; continue; }
        /* Only the last component, unless it is an operator: sum_functor::operator() */
        if (!qualified && !(c >= 'a' && c <= 'z')) { if (!d->quiet) d->n = mark, d->o[mark] = 0; }
        else if (!first) puts_(d, "::");
        first = 0;
        if (c == 'S' && peek(d, 1) == 't') d->p += 2, puts_(d, "std");
        else if (c == 'S' || c == 'T') { puts_(d, "_"); if (skip_to_underscore(d) < 0) return -1; }
        else if (dm_unqualified(d) < 0) return -1;
    }
    d->p++;
    return 0;
}

static int dm_type(dm_t *d)
{
    static const char codes[] = "vbcahstijlmxynofdegz";
    static const char *const names[] = {
        "void", "bool", "char", "signed char", "unsigned char", "short", "unsigned short",
        "int", "unsigned", "long", "unsigned long", "long long", "unsigned long long",
        "__int128", "unsigned __int128", "float", "double", "long double", "__float128", "...",
    };
    const char *hit;
    int c = peek(d, 0), c1 = peek(d, 1), rc;
    if (!c) return -1;
    if (++d->depth > TCF_DM_DEPTH_MAX) return -1;
    if ((hit = strchr(codes, c)) != NULL) {
        puts_(d, names[hit - codes]);
        d->p++;
        rc = 0;
    } else if (c == 'P' || c == 'R' || c == 'O') {
        d->p++;
        rc = dm_type(d);
        puts_(d, c == 'P' ? "*" : c == 'R' ? "&" : "&&");
    } else if (c == 'K' || c == 'V') {
        d->p++;
        puts_(d, c == 'K' ? "const " : "volatile ");
        rc = dm_type(d);
    } else if (c == 'D' && (c1 == 'n' || c1 == 'h' || c1 == 'a' || c1 == 'c')) {
        puts_(d, c1 == 'n' ? "nullptr_t" : c1 == 'h' ? "half" : "auto");
        d->p += 2;
        rc = 0;
    } else if (c == 'D' && c1 == 'p') { /* a pack expansion */
        d->p += 2;
        rc = dm_type(d);
        puts_(d, "...");
    } else if ((c == 'S' && c1 != 't') || c == 'T') {
        puts_(d, c == 'T' ? "T" : "_");
        rc = skip_to_underscore(d);
        if (rc == 0 && peek(d, 0) == 'I') rc = dm_args(d, 1);
    } else if (c == 'N' || c == 'Z' || is_digit(c) || c == 'S' || c == 'U') {
        rc = dm_name(d, 0);
    } else {
        rc = -1; /* function, array and member-pointer types: not in kernel arguments */
    }
    d->depth--;
    return rc;
}

const char *tcf_tool_demangle(const char *name, char *out, size_t cap)
{
    dm_t d = { name, name + strlen(name), out, cap, 0, 0, 0 };
    if (cap == 0) return "";
    out[0] = 0;
    if (strncmp(name, "_Z", 2) == 0) {
        d.p += 2;
        if (peek(&d, 0) == 'L') d.p++; /* internal linkage */
        if (dm_name(&d, 1) == 0 && d.n > 0) return out;
    }
    d.quiet = 0, d.n = 0;
    put(&d, name, strlen(name));
    return out;
}
