/* dlopen: loads shared libraries at run time, as programs built of
 * plugins, Python extensions or CUDA do, and calls into them.
 *
 *   dlopen                 loads libplugin.so and calls plugin_function
 *   dlopen [-c] [-w] K [LIB...]
 *                          first loads the K generated libraries
 *                          dlopen-libs/libgen-0000.so ... (make examples
 *                          generates DLOPEN_LIBS of them) and calls
 *                          gen_function in each, then loads each LIB
 *                          given, then libplugin.so as above; with -c it
 *                          closes each generated library after the call,
 *                          so that no more than one is loaded at a time;
 *                          with -w it says "waiting in PID" and waits for
 *                          a SIGUSR1 before it loads libplugin.so, so that
 *                          a debugger can be told something while the
 *                          program runs and before that load
 *
 * Libraries are looked up next to the executable. Before the call into
 * libplugin.so the program calls loaded(), a function of its own: a
 * breakpoint there is a stop after every load. */
#include <dlfcn.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void *load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(1);
    }
    return lib;
}

static void *symbol(void *lib, const char *name)
{
    void *fn = dlsym(lib, name);
    if (!fn) {
        fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
        exit(1);
    }
    return fn;
}

/* Called once everything is loaded, before any call into a library. */
void __attribute__((noinline)) loaded(int libraries)
{
    printf("%d loads done\n", libraries);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    char path[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n < 0)
        return 1;
    dir[n] = 0;
    dirname(dir);

    int arg = 1, close = 0, wait = 0;
    for (; arg < argc && argv[arg][0] == '-'; arg++) {
        if (strcmp(argv[arg], "-c") == 0)
            close = 1;
        else if (strcmp(argv[arg], "-w") == 0)
            wait = 1;
        else {
            fprintf(stderr, "usage: dlopen [-c] [-w] [K [LIB...]]\n");
            return 2;
        }
    }
    /* Blocked and taken by sigwait, the signal is never delivered: a
     * debugger does not stop the program for it. */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    int k = arg < argc ? atoi(argv[arg++]) : 0, count = 0, sum = 0;
    for (int i = 0; i < k; i++, count++) {
        snprintf(path, sizeof path, "%s/dlopen-libs/libgen-%04d.so", dir, i);
        void *lib = load(path);
        int (*gen)(int) = (int (*)(int))symbol(lib, "gen_function");
        sum += gen(0);
        if (close)
            dlclose(lib);
    }
    if (k > 0)
        printf("%d generated libraries said %d\n", k, sum);
    for (; arg < argc; arg++, count++)
        load(argv[arg]);
    if (wait) {
        int sig;
        printf("waiting in %d\n", (int)getpid());
        fflush(stdout);
        sigwait(&usr1, &sig);
    }
    snprintf(path, sizeof path, "%s/libplugin.so", dir);
    void *plugin = load(path);
    count++;

    loaded(count);
    int (*fn)(int) = (int (*)(int))symbol(plugin, "plugin_function");
    printf("plugin says %d\n", fn(21));
    return 0;
}
