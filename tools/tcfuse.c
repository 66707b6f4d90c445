/* tcfuse: the command. `tcfuse run` starts a program under libtcfuse.so, `tcfuse report`
 * reads the traces it writes, `tcfuse plan` shows how their windows would be fused,
 * `tcfuse config` lists the TCFUSE_* options. Each subcommand lives in its own file; this
 * one only dispatches and holds the top-level help. */
#include <string.h>

#include "config/config.h"
#include "tools/tools.h"

/* tools/plan.c (declared here until tools.h, shared with other work, takes them) */
int tcf_tool_plan(int argc, char **argv);
void tcf_tool_help_plan(FILE *f);
/* tools/reduce.c (likewise) */
int tcf_tool_reduce(int argc, char **argv);
void tcf_tool_help_reduce(FILE *f);
/* tools/cache_cmd.c (likewise) */
int tcf_tool_cache(int argc, char **argv);
void tcf_tool_help_cache(FILE *f);

void tcf_tool_usage(FILE *f)
{
    fprintf(f,
        "usage: tcfuse <command> [args]\n"
        "\n"
        "Fuses and replays a CUDA program's kernel launches, unmodified, by preloading\n"
        "libtcfuse.so into it.\n"
        "\n"
        "commands:\n"
        "  run [options] -- CMD [ARGS...]   run CMD with tcfuse preloaded\n"
        "  report [--chrome OUT] FILE       summarize a trace (or convert it for Perfetto)\n"
        "  plan [--compile] [--window ID] [--time N] FILE\n"
        "                                   show how a trace's windows would be fused\n"
        "  reduce [--emit DIR] FILE         decode a trace's row reductions, generate their kernels\n"
        "  cache ls|clear|verify|dir        list, empty or check the compiled-kernel cache\n"
        "  config                           list the TCFUSE_* options and their defaults\n"
        "  help [command]                   this text, or a command's\n"
        "\n"
        "options: -h, --help; -V, --version\n");
}

static int help(const char *cmd)
{
    if (!cmd) tcf_tool_usage(stdout);
    else if (strcmp(cmd, "run") == 0) tcf_tool_help_run(stdout);
    else if (strcmp(cmd, "report") == 0) tcf_tool_help_report(stdout);
    else if (strcmp(cmd, "plan") == 0) tcf_tool_help_plan(stdout);
    else if (strcmp(cmd, "reduce") == 0) tcf_tool_help_reduce(stdout);
    else if (strcmp(cmd, "cache") == 0) tcf_tool_help_cache(stdout);
    else if (strcmp(cmd, "config") == 0)
        printf("usage: tcfuse config\n\nLists every TCFUSE_* environment variable tcfuse "
               "reads, with its default.\n");
    else
        return tcf_tool_bad_usage(NULL, "help: no command '%s'", cmd);
    return TCF_EXIT_OK;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (!cmd) {
        tcf_tool_usage(stderr);
        return TCF_EXIT_USAGE;
    }
    int opt = cmd[0] == '-';
    if ((strcmp(cmd, "help") == 0 || opt) && argc > 3)
        return tcf_tool_bad_usage(NULL, "%s takes one command at most", cmd);
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0)
        return help(argc > 2 ? argv[2] : NULL);
    if (strcmp(cmd, "help") == 0) return help(argc > 2 ? argv[2] : NULL);
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        if (argc > 2)
            return tcf_tool_bad_usage(NULL, "%s takes no arguments", cmd);
        printf("tcfuse %s\n", TCF_VERSION);
        return TCF_EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0) return tcf_tool_run(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0) return tcf_tool_report(argc - 1, argv + 1);
    if (strcmp(cmd, "plan") == 0) return tcf_tool_plan(argc - 1, argv + 1);
    if (strcmp(cmd, "reduce") == 0) return tcf_tool_reduce(argc - 1, argv + 1);
    if (strcmp(cmd, "cache") == 0) return tcf_tool_cache(argc - 1, argv + 1);
    if (strcmp(cmd, "config") == 0) {
        if (argc > 2)
            return tcf_tool_bad_usage("config", "takes no arguments");
        tcf_config_help(stdout);
        return fflush(stdout) == 0 ? TCF_EXIT_OK : TCF_EXIT_FAIL;
    }
    return tcf_tool_bad_usage(NULL, "unknown %s '%s'", opt ? "option" : "command", cmd);
}
