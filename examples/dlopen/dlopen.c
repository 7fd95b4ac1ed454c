/* dlopen: loads the plugin next to the executable at run time and calls it. */
#include <dlfcn.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n < 0)
        return 1;
    path[n] = 0;
    strcat(dirname(path), "/libplugin.so");
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    int (*fn)(int) = (int (*)(int))dlsym(lib, "plugin_function");
    printf("plugin says %d\n", fn(21));
    return 0;
}
