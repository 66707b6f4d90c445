/* run: `tcfuse run [options] -- CMD [ARGS...]`. Sets the TCFUSE_* variables asked for,
 * puts libtcfuse.so first in LD_PRELOAD and replaces itself with CMD, so the command's
 * pid, signals and exit status are its own. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "tools/tools.h"

/* The library next to this executable (build/tcfuse beside build/libtcfuse.so, or an
 * installed bin/ beside lib/), unless TCFUSE_LIB names one. The path must be absolute:
 * the command may change directory before it loads CUDA, and ld.so resolves relative
 * LD_PRELOAD entries against the current one. */
static int find_lib(char out[PATH_MAX]) /* realpath's contract: PATH_MAX bytes */
{
    static const char *const rel[] = { "libtcfuse.so", "../lib/libtcfuse.so" };
    const char *env = getenv("TCFUSE_LIB");
    char exe[PATH_MAX], *slash;
    ssize_t n;
    size_t i;

    if (env && *env) {
        if (!realpath(env, out) || access(out, R_OK) != 0) {
            fprintf(stderr, "tcfuse run: TCFUSE_LIB=%s: %s\n", env, strerror(errno));
            return -1;
        }
        return 0;
    }
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "tcfuse run: cannot read /proc/self/exe (%s); set TCFUSE_LIB\n",
                strerror(errno));
        return -1;
    }
    exe[n] = 0;
    if (!(slash = strrchr(exe, '/'))) slash = exe; /* the kernel gives an absolute path */
    for (i = 0; i < sizeof rel / sizeof *rel; i++) {
        char cand[PATH_MAX];
        if (snprintf(cand, sizeof cand, "%.*s/%s", (int)(slash - exe), exe, rel[i]) <
                (int)sizeof cand && realpath(cand, out) && access(out, R_OK) == 0)
            return 0;
    }
    fprintf(stderr, "tcfuse run: libtcfuse.so not found next to %s; build it (make) or set "
                    "TCFUSE_LIB to its path\n", exe);
    return -1;
}

/* LD_PRELOAD is split on spaces and colons, so the library goes first, once; whatever
 * the user preloaded stays after it. */
static int set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    char *val;
    size_t n;
    int rc;
    if (strpbrk(lib, " :")) {
        fprintf(stderr, "tcfuse run: %s: LD_PRELOAD cannot hold a path with a space or colon\n", lib);
        return -1;
    }
    if (!old || !*old) return setenv("LD_PRELOAD", lib, 1);
    n = strlen(lib);
    if (strncmp(old, lib, n) == 0 && (old[n] == 0 || old[n] == ' ' || old[n] == ':'))
        return 0; /* already first */
    val = tcf_tool_realloc(NULL, n + strlen(old) + 2);
    sprintf(val, "%s:%s", lib, old);
    rc = setenv("LD_PRELOAD", val, 1);
    free(val);
    return rc;
}

void tcf_tool_help_run(FILE *f)
{
    fprintf(f,
        "usage: tcfuse run [options] [--] CMD [ARGS...]\n"
        "\n"
        "Runs CMD with libtcfuse.so preloaded (first in LD_PRELOAD, before what was there).\n"
        "The library is found next to the tcfuse executable, or at $TCFUSE_LIB.\n"
        "\n"
        "options:\n"
        "  -m, --mode M         TCFUSE_MODE=M (off, observe, fuse, graph, full)\n"
        "  -s, --stats          TCFUSE_STATS=1: print a summary when CMD exits\n"
        "  -t, --trace FILE     TCFUSE_TRACE=FILE: write a trace (%%p: the pid)\n"
        "  -b, --backtrace      TCFUSE_BACKTRACE=1: record where each window closed\n"
        "  -c, --print-config   TCFUSE_PRINT_CONFIG=1: print the configuration at start\n"
        "  -h, --help           this text\n"
        "Any other TCFUSE_* variable in the environment is passed on (see tcfuse config).\n"
        "\n"
        "exit status: CMD's own; 125 when libtcfuse.so is missing, 126 when CMD cannot be\n"
        "run, 127 when CMD is not found, 2 for bad usage.\n");
}

int tcf_tool_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "mode", required_argument, NULL, 'm' },  { "stats", no_argument, NULL, 's' },
        { "trace", required_argument, NULL, 't' }, { "backtrace", no_argument, NULL, 'b' },
        { "print-config", no_argument, NULL, 'c' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    char lib[PATH_MAX];
    tcf_mode_t mode;
    int c;

    optind = 1, opterr = 0;
    /* '+': stop at the first word that is not an option, so CMD's own options stay its */
    while ((c = getopt_long(argc, argv, "+m:st:bch", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (tcf_parse_mode(optarg, &mode) < 0) {
                return tcf_tool_bad_usage("run", "unknown mode '%s': off, observe, fuse, graph or full",
                                          optarg);
            }
            setenv("TCFUSE_MODE", optarg, 1);
            break;
        case 's': setenv("TCFUSE_STATS", "1", 1); break;
        case 't':
            if (!*optarg) {
                return tcf_tool_bad_usage("run", "--trace needs a file name");
            }
            setenv("TCFUSE_TRACE", optarg, 1);
            break;
        case 'b': setenv("TCFUSE_BACKTRACE", "1", 1); break;
        case 'c': setenv("TCFUSE_PRINT_CONFIG", "1", 1); break;
        case 'h': tcf_tool_help_run(stdout); return TCF_EXIT_OK;
        default:
            return tcf_tool_bad_usage("run", "%s option '%s'",
                                      (optopt && strchr("mt", optopt)) ? "missing value for"
                                                                       : "unknown",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return tcf_tool_bad_usage("run", "no command given");
    if (find_lib(lib) < 0) return TCF_EXIT_NOLIB;
    if (set_preload(lib) < 0) return TCF_EXIT_NOLIB;
    execvp(argv[optind], argv + optind);
    c = errno;
    fprintf(stderr, "tcfuse run: %s: %s\n", argv[optind],
            c == ENOENT ? "command not found" : strerror(c));
    return c == ENOENT ? TCF_EXIT_NOTFOUND : TCF_EXIT_NOEXEC;
}
