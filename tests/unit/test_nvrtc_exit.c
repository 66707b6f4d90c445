/* A process may exit while tcfuse's worker thread is inside an NVRTC compile. tcfuse's
 * exit handler waits for the worker to leave the compile; if NVRTC's own exit-time
 * destructors ran first, the compile crashed or hung (seen on the H100 in 4 of 10
 * fuse-mode runs). codegen/nvrtc.c prevents it by registering the caller's exit hook again
 * after the open and after every compile; this test exits during compiles, the way fuse
 * mode does: the hook is set before NVRTC is opened (registering it once, before the open,
 * crashed 11 children of 12).
 *
 * The parent runs this binary again as a child, several times: the child sets its exit
 * hook, opens NVRTC, starts a thread compiling in a loop and returns from main while a
 * compile is under way. Every child must exit 0 within its time limit. Skipped when NVRTC
 * is not installed. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "check.h"

#define RUNS 12
#define CHILD_LIMIT_S 60

static const char *const nvrtc_fallback = "/usr/local/cuda/lib64/libnvrtc.so.13";
static const char *const src =
    "extern \"C\" __global__ void k(float *x, int n)\n"
    "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = tanhf(x[i]) * 0.5f; }\n";

static atomic_int stop, compiles, inside, failures;
static pthread_t worker;

static void *compile_loop(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        void *cubin = NULL;
        size_t len = 0;
        char log[256];
        atomic_store(&inside, 1);
        if (tcf_nvrtc_compile(src, 90, &cubin, &len, log, sizeof log) != 0 || !len)
            atomic_fetch_add(&failures, 1);
        atomic_store(&inside, 0);
        free(cubin);
        atomic_fetch_add(&compiles, 1);
    }
    return NULL;
}

static void join_worker(void)  /* what tcf_exec_stop does; registered many times */
{
    static atomic_int joined;
    atomic_store(&stop, 1);
    if (atomic_exchange(&joined, 1))
        return;
    pthread_join(worker, NULL);
    if (atomic_load(&failures))
        _exit(3);
}

static int child(unsigned delay_us)
{
    char err[512];
    tcf_nvrtc_on_exit(join_worker);
    if (tcf_nvrtc_open(NULL, err, sizeof err) && tcf_nvrtc_open(nvrtc_fallback, err, sizeof err))
        return 2;
    if (pthread_create(&worker, NULL, compile_loop, NULL))
        return 2;
    while (atomic_load(&compiles) < 1)  /* one whole compile, then exit inside another */
        usleep(1000);
    while (!atomic_load(&inside))
        usleep(100);
    usleep(delay_us);
    return 0;  /* exit() runs the handlers */
}

TEST(exit_during_compile)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    if (n <= 0)
        return;
    self[n] = '\0';
    unsigned seed = (unsigned)time(NULL);
    for (int i = 0; i < RUNS; i++) {
        char arg[32];
        snprintf(arg, sizeof arg, "%u", (unsigned)(rand_r(&seed) % 20000));
        pid_t pid = fork();
        if (pid == 0) {
            alarm(CHILD_LIMIT_S);  /* a hang at exit ends as SIGALRM */
            execl(self, self, "child", arg, (char *)NULL);
            _exit(127);
        }
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        char what[96];
        if (WIFSIGNALED(st))
            snprintf(what, sizeof what, "run %d (delay %s us): killed by signal %d", i, arg,
                     WTERMSIG(st));
        else
            snprintf(what, sizeof what, "run %d (delay %s us): exit %d", i, arg,
                     WEXITSTATUS(st));
        check_report(WIFEXITED(st) && WEXITSTATUS(st) == 0, __FILE__, __LINE__,
                     "child exits cleanly while a compile runs", what);
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "child"))
        return child((unsigned)strtoul(argv[2], NULL, 10));
    char err[512];
    if (tcf_nvrtc_open(NULL, err, sizeof err) && tcf_nvrtc_open(nvrtc_fallback, err, sizeof err)) {
        printf("test_nvrtc_exit: NVRTC not found (%s): skipped\n", err);
        return check_main_end();
    }
    RUN(exit_during_compile);
    return check_main_end();
}
