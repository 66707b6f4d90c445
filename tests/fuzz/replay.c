/* Replays saved fuzz inputs through one target (TCF_FUZZ_TARGET, set at build time) as a
 * unit test: every file of tests/fuzz/corpus/<target>/ and tests/fuzz/regress/<target>/,
 * or of the directories given. Built with the ordinary compiler, so CI needs no clang;
 * runs under the sanitizer builds too (make asan ubsan tsan). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tests/unit/check.h"

static size_t inputs;

static void replay_dir(const char *d)
{
    DIR *dp = opendir(d);
    struct dirent *e;
    if (!dp)
        return;
    while ((e = readdir(dp))) {
        char path[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", d, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        uint8_t *buf = NULL;
        size_t n = 0, cap = 0, got;
        do {
            if (n == cap && !(buf = realloc(buf, cap = cap ? cap * 2 : 4096)))
                break;
            got = fread(buf + n, 1, cap - n, f);
            n += got;
        } while (got);
        fclose(f);
        if (!buf)
            continue;
        uint8_t *exact = malloc(n ? n : 1);   /* exactly n bytes: a read past them shows */
        memcpy(exact, buf, n);
        free(buf);
        check_test = path;
        CHECK_EQ_INT(LLVMFuzzerTestOneInput(exact, n), 0);
        free(exact);
        inputs++;
    }
    closedir(dp);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            replay_dir(argv[i]);
    } else {
        replay_dir("tests/fuzz/corpus/" TCF_FUZZ_TARGET);
        replay_dir("tests/fuzz/regress/" TCF_FUZZ_TARGET);
    }
    printf("%s: %zu saved inputs of fuzz target %s\n", program_invocation_short_name, inputs,
           TCF_FUZZ_TARGET);
    CHECK(inputs > 0);
    return check_main_end();
}
