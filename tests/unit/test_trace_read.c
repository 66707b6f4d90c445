/* Unit tests for the trace reader (trace/read.h) on hand-written lines: every
 * event type, escapes, unknown fields and events, and the malformed lines a truncated or
 * corrupt trace holds (they must be counted and skipped, never crash). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/read.h"
#include "tests/unit/check.h"

/* One reader shared by the single-line tests: its scratch is reused line after line. */
static tcf_trace_reader_t *rd;

static int parse(const char *line, tcf_trace_event_t *ev)
{
    return tcf_trace_read_line(rd, line, strlen(line), ev);
}

static int bad(const char *line)
{
    tcf_trace_event_t ev;
    return parse(line, &ev) == -1;
}

TEST(header)
{
    tcf_trace_event_t ev;
    CHECK_EQ_INT(parse("{\"tcfuse_trace\":1,\"version\":\"0.1.0\",\"pid\":4242,"
                       "\"mode\":\"observe\",\"argv0\":\"python3\"}", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_HEADER);
    CHECK_EQ_INT(ev.u.header.format, 1);
    CHECK_EQ_STR(ev.u.header.version, "0.1.0");
    CHECK_EQ_INT(ev.u.header.pid, 4242);
    CHECK_EQ_STR(ev.u.header.mode, "observe");
    CHECK_EQ_STR(ev.u.header.argv0, "python3");
    CHECK_EQ_STR(tcf_trace_ev_name(ev.ev), "header");
}

TEST(kernel)
{
    tcf_trace_event_t ev;
    CHECK_EQ_INT(parse("{\"ev\":\"kernel\",\"id\":3,\"name\":\"_Z3addPfS_i\","
                       "\"handle\":\"0x55d0c0ffee00\",\"kind\":\"kernel\","
                       "\"params\":[[0,8],[8,8],[16,4]]}", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_KERNEL);
    CHECK_EQ_INT(ev.u.kernel.id, 3);
    CHECK_EQ_STR(ev.u.kernel.name, "_Z3addPfS_i");
    CHECK_EQ_U64(ev.u.kernel.handle, 0x55d0c0ffee00ull);
    CHECK_EQ_STR(ev.u.kernel.kind, "kernel");
    CHECK_EQ_INT(ev.u.kernel.nparams, 3);
    if (ev.u.kernel.nparams == 3) {
        CHECK_EQ_INT(ev.u.kernel.params[1].offset, 8);
        CHECK_EQ_INT(ev.u.kernel.params[2].offset, 16);
        CHECK_EQ_INT(ev.u.kernel.params[2].size, 4);
    }
    /* no parameters, an unnamed handle */
    CHECK_EQ_INT(parse("{\"ev\":\"kernel\",\"id\":4,\"name\":\"\",\"handle\":\"0x1\","
                       "\"kind\":\"unknown\",\"params\":[]}", &ev), 0);
    CHECK_EQ_STR(ev.u.kernel.name, "");
    CHECK_EQ_INT(ev.u.kernel.nparams, 0);
    CHECK(ev.u.kernel.params == NULL);
}

TEST(launch)
{
    static const unsigned char want[] = { 0x00, 0x10, 0xa9, 0x4b, 0x7f, 0x00, 0x00, 0x00,
                                          0xff, 0x01 };
    tcf_trace_event_t ev;
    CHECK_EQ_INT(parse("{\"ev\":\"launch\",\"t\":1000123456789,\"win\":7,\"k\":3,"
                       "\"via\":\"cuLaunchKernelEx\",\"grid\":[4096,1,1],\"block\":[128,2,1],"
                       "\"smem\":1024,\"stream\":\"0x5a5a00\",\"rc\":0,"
                       "\"params\":\"0010a94b7f000000ff01\"}", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_LAUNCH);
    CHECK_EQ_INT(ev.u.launch.t, 1000123456789LL);
    CHECK_EQ_INT(ev.u.launch.win, 7);
    CHECK_EQ_INT(ev.u.launch.k, 3);
    CHECK_EQ_STR(ev.u.launch.via, "cuLaunchKernelEx");
    CHECK_EQ_INT(ev.u.launch.grid[0], 4096);
    CHECK_EQ_INT(ev.u.launch.block[1], 2);
    CHECK_EQ_INT(ev.u.launch.smem, 1024);
    CHECK_EQ_U64(ev.u.launch.stream, 0x5a5a00);
    CHECK_EQ_INT(ev.u.launch.params_len, sizeof want);
    if (ev.u.launch.params_len == sizeof want) CHECK_EQ_MEM(ev.u.launch.params, want, sizeof want);
    /* the params hex may carry a 0x; missing optional fields read as defaults */
    CHECK_EQ_INT(parse("{\"ev\":\"launch\",\"k\":1,\"params\":\"0xABcd\"}", &ev), 0);
    CHECK_EQ_INT(ev.u.launch.params_len, 2);
    if (ev.u.launch.params_len == 2) CHECK_EQ_INT(ev.u.launch.params[0], 0xab);
    CHECK_EQ_INT(ev.u.launch.win, -1);
    CHECK_EQ_STR(ev.u.launch.via, "");
    CHECK_EQ_INT(ev.u.launch.grid[2], 0);
}

TEST(memory_events)
{
    tcf_trace_event_t ev;
    CHECK_EQ_INT(parse("{\"ev\":\"alloc\",\"t\":5,\"win\":-1,\"call\":\"cuMemAlloc_v2\","
                       "\"ptr\":\"0x7f4ba9000000\",\"size\":1048576,\"stream\":\"0x0\","
                       "\"rc\":0}", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_ALLOC);
    CHECK_EQ_INT(ev.u.mem.win, -1);
    CHECK_EQ_STR(ev.u.mem.call, "cuMemAlloc_v2");
    CHECK_EQ_U64(ev.u.mem.ptr, 0x7f4ba9000000ull);
    CHECK_EQ_U64(ev.u.mem.size, 1048576);
    CHECK_EQ_INT(parse("{\"ev\":\"free\",\"t\":6,\"win\":2,\"call\":\"cuMemFreeAsync\","
                       "\"ptr\":\"0x7f4ba9000000\",\"stream\":\"0x10\",\"rc\":1}", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_FREE);
    CHECK_EQ_INT(ev.u.mem.rc, 1);
    CHECK_EQ_U64(ev.u.mem.stream, 0x10);
    CHECK_EQ_INT(parse("{\"ev\":\"memset\",\"t\":7,\"win\":2,\"call\":\"cuMemsetD32Async\","
                       "\"ptr\":\"0xa0\",\"value\":4294967295,\"elem\":4,\"count\":256,"
                       "\"stream\":\"0x10\",\"rc\":0}", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_MEMSET);
    CHECK_EQ_INT(ev.u.mem.value, 4294967295LL);
    CHECK_EQ_INT(ev.u.mem.elem, 4);
    CHECK_EQ_INT(ev.u.mem.count, 256);
    CHECK_EQ_INT(parse("{\"ev\":\"memcpy\",\"t\":8,\"win\":2,\"call\":\"cuMemcpyDtoDAsync_v2\","
                       "\"dst\":\"0xb0\",\"src\":\"0xc0\",\"size\":64,\"stream\":\"0x10\","
                       "\"rc\":0}", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_MEMCPY);
    CHECK_EQ_U64(ev.u.mem.ptr, 0xb0);
    CHECK_EQ_U64(ev.u.mem.src, 0xc0);
    CHECK_EQ_U64(ev.u.mem.size, 64);
}

TEST(window_and_end)
{
    tcf_trace_event_t ev;
    CHECK_EQ_INT(parse("{\"ev\":\"window\",\"t\":99,\"id\":2,\"ctx\":\"0xc1\",\"stream\":\"0x10\","
                       "\"launches\":5,\"ops\":1,\"key\":\"0xffffffffffffffff\","
                       "\"reason\":\"cuStreamSynchronize\","
                       "\"bt\":[\"libc10_cuda.so+0x1234 c10::cuda::sync\",\"python3+0x99 \"]}",
                       &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_WINDOW);
    CHECK_EQ_INT(ev.u.window.id, 2);
    CHECK_EQ_U64(ev.u.window.ctx, 0xc1);
    CHECK_EQ_INT(ev.u.window.launches, 5);
    CHECK_EQ_INT(ev.u.window.ops, 1);
    CHECK_EQ_U64(ev.u.window.key, 0xffffffffffffffffull);
    CHECK_EQ_STR(ev.u.window.reason, "cuStreamSynchronize");
    CHECK_EQ_INT(ev.u.window.nbt, 2);
    if (ev.u.window.nbt == 2) {
        CHECK_EQ_STR(ev.u.window.bt[0], "libc10_cuda.so+0x1234 c10::cuda::sync");
        CHECK_EQ_STR(ev.u.window.bt[1], "python3+0x99 ");
    }
    CHECK_EQ_INT(parse("{\"ev\":\"window\",\"id\":3,\"reason\":\"idle\"}", &ev), 0);
    CHECK_EQ_INT(ev.u.window.nbt, 0);
    CHECK(ev.u.window.bt == NULL);
    CHECK_EQ_INT(parse("{\"ev\":\"end\",\"t\":100,\"launches\":12,\"windows\":3,\"dropped\":0}",
                       &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_END);
    CHECK_EQ_INT(ev.u.end.launches, 12);
    CHECK_EQ_INT(ev.u.end.windows, 3);
}

TEST(escapes)
{
    tcf_trace_event_t ev;
    CHECK_EQ_INT(parse("{\"ev\":\"kernel\",\"id\":1,"
                       "\"name\":\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\u20ac\\ud83d\\ude00\"}", &ev), 0);
    CHECK_EQ_STR(ev.u.kernel.name, "a\"b\\c/d\n\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    /* a key written with an escape is still the key */
    CHECK_EQ_INT(parse("{\"\\u0065v\":\"window\",\"id\":9}", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_WINDOW);
    CHECK(bad("{\"ev\":\"kernel\",\"id\":1,\"name\":\"\\x41\"}"));         /* no \x in JSON */
    CHECK(bad("{\"ev\":\"kernel\",\"id\":1,\"name\":\"\\ud83d\"}"));      /* lone surrogate */
    CHECK(bad("{\"ev\":\"kernel\",\"id\":1,\"name\":\"\\ude00x\"}"));
    CHECK(bad("{\"ev\":\"kernel\",\"id\":1,\"name\":\"\\u12\"}"));        /* short \u */
    CHECK(bad("{\"ev\":\"kernel\",\"id\":1,\"name\":\"tab\there\"}"));   /* raw control */
}

TEST(unknown_fields_and_events)
{
    tcf_trace_event_t ev;
    CHECK_EQ_INT(parse(" { \"future\" : {\"a\":[1,{\"b\":\"]}\"}],\"c\":null} , \"ev\" : \"launch\" ,"
                       "\"x\":[true,false,-1.5e+3],\"k\":2,\"y\":\"\\\"}\" } \r", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_LAUNCH);
    CHECK_EQ_INT(ev.u.launch.k, 2);
    CHECK_EQ_INT(parse("{\"ev\":\"graph\",\"id\":1}", &ev), 0);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_UNKNOWN);
    /* a repeated key: the last one wins */
    CHECK_EQ_INT(parse("{\"ev\":\"window\",\"id\":1,\"id\":2}", &ev), 0);
    CHECK_EQ_INT(ev.u.window.id, 2);
}

TEST(malformed)
{
    CHECK(bad(""));
    CHECK(bad("   "));
    CHECK(bad("[]"));
    CHECK(bad("{\"id\":1}"));                                     /* no ev, no header */
    CHECK(bad("{\"ev\":3}"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1"));                     /* truncated */
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,\"via\":\"cuLaunch"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1}}"));                   /* trailing garbage */
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,}"));
    CHECK(bad("{\"ev\":\"launch\" \"k\":1}"));
    CHECK(bad("{\"ev\":\"launch\"}"));                            /* no kernel id */
    CHECK(bad("{\"ev\":\"window\",\"reason\":\"idle\"}"));        /* no window id */
    CHECK(bad("{\"ev\":\"launch\",\"k\":\"1\"}"));                /* wrong types */
    CHECK(bad("{\"ev\":\"launch\",\"k\":1.5}"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1e3}"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,\"grid\":[1,1]}"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,\"grid\":[1,1,1,1]}"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,\"grid\":[1,-1,1]}"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,\"grid\":[1,4294967296,1]}"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,\"grid\":[1,,1]}"));
    CHECK(bad("{\"ev\":\"kernel\",\"id\":1,\"params\":[[0,8],[8]]}"));
    CHECK(bad("{\"ev\":\"kernel\",\"id\":1,\"params\":[0,8]}"));
    CHECK(bad("{\"ev\":\"window\",\"id\":1,\"bt\":[\"a\",2]}"));
    CHECK(bad("{\"ev\":\"window\",\"id\":1,\"x\":[}"));           /* mismatched brackets */
    CHECK(bad("{\"ev\":\"window\",\"id\":1,\"x\":tru}"));
    CHECK(bad("{\"ev\":\"window\",\"id\":1,\"x\":-}"));
    {   /* nesting deeper than the reader skips */
        char deep[200] = "{\"ev\":\"end\",\"x\":";
        size_t n = strlen(deep);
        memset(deep + n, '[', 40), memset(deep + n + 40, ']', 40), strcpy(deep + n + 80, "}");
        CHECK(bad(deep));
    }
}

TEST(bad_hex)
{
    CHECK(bad("{\"ev\":\"window\",\"id\":1,\"key\":\"7f\"}"));          /* no 0x */
    CHECK(bad("{\"ev\":\"window\",\"id\":1,\"key\":\"0x\"}"));          /* no digits */
    CHECK(bad("{\"ev\":\"window\",\"id\":1,\"key\":\"0xg1\"}"));
    CHECK(bad("{\"ev\":\"window\",\"id\":1,\"key\":\"0x10000000000000000\"}")); /* 17 digits */
    CHECK(bad("{\"ev\":\"window\",\"id\":1,\"key\":123}"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,\"params\":\"abc\"}"));      /* odd length */
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,\"params\":\"zz\"}"));
    CHECK(bad("{\"ev\":\"launch\",\"k\":1,\"params\":\"\\u0030\\u0030\"}")); /* escaped hex */
}

TEST(huge_numbers)
{
    tcf_trace_event_t ev;
    CHECK_EQ_INT(parse("{\"ev\":\"end\",\"t\":9223372036854775807,\"launches\":-9223372036854775808}",
                       &ev), 0);
    CHECK_EQ_INT(ev.u.end.t, INT64_MAX);
    CHECK_EQ_INT(ev.u.end.launches, INT64_MIN);
    CHECK(bad("{\"ev\":\"end\",\"t\":9223372036854775808}"));
    CHECK(bad("{\"ev\":\"end\",\"t\":-9223372036854775809}"));
    CHECK(bad("{\"ev\":\"end\",\"t\":99999999999999999999999999999}"));
    CHECK(bad("{\"ev\":\"alloc\",\"size\":-1}"));
    /* an unknown field may hold any number */
    CHECK_EQ_INT(parse("{\"ev\":\"end\",\"big\":1e999,\"huge\":123456789012345678901234567890}",
                       &ev), 0);
}

/* A whole trace: blank, malformed and unknown lines are counted and skipped; a final line
 * without a newline (a trace cut short) still counts. */
TEST(reader_counts)
{
    static const char text[] =
        "{\"tcfuse_trace\":1,\"version\":\"0.1.0\",\"pid\":1,\"mode\":\"observe\",\"argv0\":\"x\"}\n"
        "\n"
        "{\"ev\":\"kernel\",\"id\":0,\"name\":\"k\",\"handle\":\"0x1\",\"kind\":\"kernel\",\"params\":[]}\n"
        "{\"ev\":\"launch\",\"t\":1,\"win\":0,\"k\":0,\"grid\":[1,1,1],\"block\":[1,1,1]\n"
        "garbage\n"
        "{\"ev\":\"hologram\"}\n"
        "{\"ev\":\"window\",\"t\":2,\"id\":0,\"reason\":\"idle\"}";
    tcf_trace_reader_t *r = tcf_trace_read_mem(text, sizeof text - 1);
    tcf_trace_event_t ev;
    tcf_trace_stats_t st;
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(tcf_trace_read_next(r, &ev), 1);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_HEADER);
    CHECK_EQ_INT(ev.line, 1);
    CHECK_EQ_INT(tcf_trace_read_next(r, &ev), 1);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_KERNEL);
    CHECK_EQ_INT(ev.line, 3);
    CHECK_EQ_INT(tcf_trace_read_next(r, &ev), 1);
    CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_WINDOW);
    CHECK_EQ_INT(ev.line, 7);
    CHECK_EQ_INT(tcf_trace_read_next(r, &ev), 0);
    CHECK_EQ_INT(tcf_trace_read_next(r, &ev), 0);
    st = tcf_trace_read_stats(r);
    CHECK_EQ_INT(st.lines, 7);
    CHECK_EQ_INT(st.events, 3);
    CHECK_EQ_INT(st.malformed, 2);
    CHECK_EQ_INT(st.unknown, 1);
    tcf_trace_read_close(r);
}

/* Lines past the cap are malformed, from a file too (the reader must not keep them). */
TEST(reader_file_long_line)
{
    char path[] = "/tmp/tcf_trace_read_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    tcf_trace_reader_t *r;
    tcf_trace_event_t ev;
    size_t i;
    CHECK(f != NULL);
    if (!f) return;
    fputs("{\"ev\":\"launch\",\"k\":1,\"pad\":\"", f);
    for (i = 0; i < TCF_TRACE_LINE_MAX; i++) putc('a', f);
    fputs("\"}\n{\"ev\":\"end\",\"t\":5}\n", f);
    fclose(f);
    r = tcf_trace_read_open(path);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_INT(tcf_trace_read_next(r, &ev), 1);
        CHECK_EQ_INT(ev.ev, TCF_TRACE_EV_END);
        CHECK_EQ_INT(ev.line, 2);
        CHECK_EQ_INT(tcf_trace_read_stats(r).malformed, 1);
        tcf_trace_read_close(r);
    }
    unlink(path);
    CHECK(tcf_trace_read_open("/nonexistent/trace.jsonl") == NULL);
}

/* Every prefix of a valid line is a truncated line: none may crash or read past it. */
TEST(every_prefix)
{
    static const char line[] =
        "{\"ev\":\"window\",\"t\":99,\"id\":2,\"key\":\"0xff\",\"reason\":\"c\\u00e9\","
        "\"bt\":[\"a b\",\"c\"],\"x\":{\"y\":[1,[2]]},\"params\":\"00ff\"}";
    size_t n, ok = 0;
    for (n = 0; n <= sizeof line - 1; n++) {
        char *copy = malloc(n ? n : 1); /* exact size, so a read past the end is caught */
        tcf_trace_event_t ev;
        if (!copy) return;
        memcpy(copy, line, n);
        ok += tcf_trace_read_line(rd, copy, n, &ev) == 0;
        free(copy);
    }
    CHECK_EQ_INT(ok, 1);
}

int main(void)
{
    rd = tcf_trace_read_mem(NULL, 0);
    RUN(header);
    RUN(kernel);
    RUN(launch);
    RUN(memory_events);
    RUN(window_and_end);
    RUN(escapes);
    RUN(unknown_fields_and_events);
    RUN(malformed);
    RUN(bad_hex);
    RUN(huge_numbers);
    RUN(reader_counts);
    RUN(reader_file_long_line);
    RUN(every_prefix);
    tcf_trace_read_close(rd);
    return check_main_end();
}
