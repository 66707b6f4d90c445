/* noop [dlsym|fork]: a program that never touches CUDA.
 *   (no argument)  prints one line and exits 0
 *   dlsym          looks up libc functions through dlsym (RTLD_DEFAULT, RTLD_NEXT, a
 *                  dlopen handle) and a name nobody defines; prints whether each lookup
 *                  agrees with the linker's own binding
 *   fork           forks a child that does the same as (no argument); waits for it
 * Under LD_PRELOAD=libtcfuse.so every line must be the same and nothing else printed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *agree(void *a, void *b) { return a && a == b ? "same" : a ? "differs" : "null"; }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "dlsym") == 0) {
        void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        void *strlen_p = (void *)(size_t (*)(const char *))strlen;
        printf("RTLD_DEFAULT strlen: %s\n", agree(dlsym(RTLD_DEFAULT, "strlen"), strlen_p));
        printf("RTLD_NEXT strlen: %s\n", agree(dlsym(RTLD_NEXT, "strlen"), strlen_p));
        printf("libc strlen: %s\n", agree(libc ? dlsym(libc, "strlen") : NULL, strlen_p));
        printf("RTLD_DEFAULT no_such_symbol_xyz: %s\n",
               dlsym(RTLD_DEFAULT, "no_such_symbol_xyz") ? "found" : "null");
        printf("dlerror after miss: %s\n", dlerror() ? "set" : "null");
        return 0;
    }
    if (strcmp(mode, "fork") == 0) {
        int status = 0;
        pid_t pid;
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            printf("noop child: ok\n");
            return 0;
        }
        waitpid(pid, &status, 0);
        printf("noop parent: child exit %d\n", WEXITSTATUS(status));
        return 0;
    }
    printf("noop: ok\n");
    return 0;
}
