/* The owner check behind the __cxa_atexit interposer (codegen/nvrtc.c): an exit handler
 * registered from an NVRTC library is followed by tcfuse's exit hook; any other is not.
 * The owner is found by address, both ways (_dl_find_object and the segment walk), on a
 * library named like NVRTC (build/tests/libnvrtc-tcftest.so, beside this binary), on libc,
 * on this binary, on the heap and on NULL; then, in a child process, the whole call:
 * tcf_nvrtc_exit_registered registers the hook (it runs at exit) exactly for the NVRTC
 * library's handle. */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "check.h"

static int local_data = 7;
static void *fake;
static int hook_pipe = -1;

static void *fake_sym(const char *name)
{
    return fake ? dlsym(fake, name) : NULL;
}

TEST(owner_by_address)
{
    void *(*dso_of)(void) = (void *(*)(void))fake_sym("tcf_fake_nvrtc_dso");
    int *data = fake_sym("tcf_fake_nvrtc_data");
    CHECK(dso_of && data);
    if (!dso_of || !data)
        return;
    void *heap = malloc(64);
    for (int walk = 0; walk <= 1; walk++) {
        CHECK_EQ_INT(tcf_nvrtc_owns(dso_of(), walk), 1);       /* its __dso_handle */
        CHECK_EQ_INT(tcf_nvrtc_owns(data, walk), 1);           /* its data */
        CHECK_EQ_INT(tcf_nvrtc_owns((void *)dso_of, walk), 1); /* its code */
        CHECK_EQ_INT(tcf_nvrtc_owns((void *)&printf, walk), 0);  /* libc */
        CHECK_EQ_INT(tcf_nvrtc_owns(&local_data, walk), 0);     /* this binary */
        CHECK_EQ_INT(tcf_nvrtc_owns(heap, walk), 0);            /* no library at all */
        CHECK_EQ_INT(tcf_nvrtc_owns(NULL, walk), 0);
    }
    free(heap);
}

static void hook(void)
{
    if (write(hook_pipe, "h", 1) != 1)
        _exit(3);
}

/* In a child: sets the hook, makes NVRTC count as opened (an open that fails still
 * counts: the flag is set before the library is tried), reports dso's registration and
 * exits; returns how many times the hook ran at exit. */
static int hook_runs_after(void *dso)
{
    int fd[2];
    if (pipe(fd))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        hook_pipe = fd[1];
        tcf_nvrtc_on_exit(hook);
        char err[256];
        tcf_nvrtc_open("/nonexistent/libnvrtc.so", err, sizeof err);
        tcf_nvrtc_exit_registered(dso);
        exit(0);
    }
    close(fd[1]);
    char buf[16];
    int n = 0;
    ssize_t r;
    while ((r = read(fd[0], buf, sizeof buf)) > 0)
        n += (int)r;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? n : -1;
}

TEST(registration_follows_nvrtc_only)
{
    void *(*dso_of)(void) = (void *(*)(void))fake_sym("tcf_fake_nvrtc_dso");
    if (!dso_of)
        return;
    CHECK_EQ_INT(hook_runs_after(dso_of()), 1);
    CHECK_EQ_INT(hook_runs_after(&local_data), 0);
    CHECK_EQ_INT(hook_runs_after((void *)&printf), 0);
    CHECK_EQ_INT(hook_runs_after(NULL), 0);
}

int main(void)
{
    char self[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        snprintf(path, sizeof path, "%s/libnvrtc-tcftest.so", dirname(self));
        fake = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!fake)
            fprintf(stderr, "test_nvrtc_owns: %s\n", dlerror());
    }
    RUN(owner_by_address);
    RUN(registration_follows_nvrtc_only);
    return check_main_end();
}
