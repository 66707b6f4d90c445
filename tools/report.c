/* report: `tcfuse report [--top N] [--chrome OUT.json] FILE`, argument handling. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "tools/report.h"

void tcf_tool_help_report(FILE *f)
{
    fprintf(f,
        "usage: tcfuse report [--top N] FILE\n"
        "       tcfuse report --chrome OUT.json FILE\n"
        "\n"
        "Summarizes a trace written with TCFUSE_TRACE=FILE (or tcfuse run --trace FILE):\n"
        "totals, the most launched kernels, window lengths, repeated windows (same key),\n"
        "and why windows closed, with the host call sites when the trace has backtraces\n"
        "(tcfuse run --backtrace); last, coverage by kernel family: how many launches of each\n"
        "family (GEMM, elementwise, copies and casts, reductions, ...) fuse mode decodes and\n"
        "its plans fuse, and why the rest are left as they are (tcfuse plan shows each window),\n"
        "then the kernels most often left as issued, each with the reason most of its\n"
        "launches were left under: what to teach tcfuse next.\n"
        "FILE may be - for stdin (then without the coverage tables).\n"
        "\n"
        "options:\n"
        "  -n, --top N          rows per table, the kernels left as issued too (default 10)\n"
        "  -c, --chrome OUT     write Chrome trace-event JSON to OUT instead (- for stdout);\n"
        "                       open it in ui.perfetto.dev or chrome://tracing\n"
        "  -h, --help           this text\n");
}

int tcf_tool_report(int argc, char **argv)
{
    static const struct option opts[] = {
        { "top", required_argument, NULL, 'n' }, { "chrome", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },      { NULL, 0, NULL, 0 },
    };
    const char *chrome = NULL;
    tcf_report_t r;
    long long top = 10;
    int c, rc;

    optind = 1, opterr = 0;
    while ((c = getopt_long(argc, argv, "n:c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (tcf_tool_int(optarg, 1, 1000000, &top) != 0)
                return tcf_tool_bad_usage("report", "--top wants a number from 1 up, not '%s'",
                                          optarg);
            break;
        case 'c': chrome = optarg; break;
        case 'h': tcf_tool_help_report(stdout); return TCF_EXIT_OK;
        default:
            return tcf_tool_bad_usage("report", "%s option '%s'",
                                      (optopt && strchr("nc", optopt)) ? "missing value for"
                                                                       : "unknown",
                                      argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return tcf_tool_bad_usage("report", "%s", optind >= argc ? "no trace file given"
                                                                 : "one trace file at a time");
    if (chrome) return tcf_report_chrome(argv[optind], chrome) < 0 ? TCF_EXIT_FAIL : TCF_EXIT_OK;

    rc = tcf_report_collect(&r, argv[optind]);
    if (rc == 0) {
        tcf_report_print(&r, argv[optind], stdout, (size_t)top);
        if (strcmp(argv[optind], "-") != 0) {  /* a second pass: stdin cannot be read twice */
            printf("\n");
            rc = tcf_tool_coverage(argv[optind], (size_t)top) == TCF_EXIT_OK ? 0 : -1;
        }
        if (r.st.malformed)
            fprintf(stderr, "tcfuse report: %s: %zu malformed lines skipped\n", argv[optind],
                    r.st.malformed);
    }
    tcf_report_free(&r);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tcfuse report: write failed\n");
        return TCF_EXIT_FAIL;
    }
    return rc == 0 ? TCF_EXIT_OK : TCF_EXIT_FAIL;
}
