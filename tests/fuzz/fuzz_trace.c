/* The trace reader (trace/read.c): the input as a whole trace file, read to its end. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "trace/read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = memfd_create("tcf-fuzz-trace", 0);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    tcf_trace_reader_t *r = tcf_trace_read_open(path);
    if (r) {
        tcf_trace_event_t ev;
        size_t n = 0;
        while (tcf_trace_read_next(r, &ev) == 1 && n++ < 100000)
            ;
        (void)tcf_trace_read_stats(r);
        tcf_trace_read_close(r);
    }
    close(fd);
    return 0;
}
