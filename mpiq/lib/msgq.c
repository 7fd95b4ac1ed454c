/* sdm-msgq: a rank's message queues through its MPI's own message-queue
 * library, for a job that sdm attached to (where no interposition
 * library records the rank's operations).
 *
 *     sdm-msgq LIBRARY RANK PID
 *
 * The library (Open MPI's libompi_dbg_msgq.so, named in MPIR_dll_name)
 * is C that reads the MPI library's structures through callbacks into a
 * debugger; it runs here, in a process of its own, so that a library
 * that reads a running rank's lists while they change can crash or loop
 * without taking the rank's server with it (the server ends this process
 * at its deadline). It reads the process's memory itself, without a
 * ptrace stop (process_vm_readv, else /proc/PID/mem); a symbol or a type
 * is a question to the server, which knows the process's objects and the
 * MPI library's types: one line on standard output, one answer line on
 * standard input.
 *
 *   sym NAME          -> ADDRESS (hex) | -        a symbol of the process
 *   type NAME         -> ID SIZE | -              a type of the MPI library
 *   field ID NAME     -> OFFSET | -               a member of that type
 *
 * The library asks the same for every rank: before it starts, the helper
 * reads what the server answered earlier helpers, "type NAME ID SIZE" and
 * "field ID NAME OFFSET" lines (-1: none), and the symbols they asked for
 * answered for this process, "sym NAME ADDRESS" (- for none), up to a
 * line "go", and asks only the rest.
 *
 * What the library finds is printed as it comes, for the server to
 * read (mpiq/dll.go):
 *
 *   version TEXT, note TEXT, log TEXT
 *   comm ID LOCAL_RANK SIZE NAME      then: group WORLD_RANK...
 *   op CLASS STATUS PEER TAG_WILD TAG LENGTH ACTUAL_PEER ACTUAL_TAG ACTUAL_LENGTH
 *   error TEXT                        (and exit status 1)
 *   end
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <unistd.h>

#include "mqs.h"

/* The library's entry points, found by name. */
static struct {
    void (*setup_basic_callbacks)(const mqs_basic_callbacks *);
    char *(*version_string)(void);
    int (*version_compatibility)(void);
    char *(*dll_error_string)(int);
    int (*setup_image)(mqs_image *, const mqs_image_callbacks *);
    int (*image_has_queues)(mqs_image *, char **);
    int (*setup_process)(mqs_process *, const mqs_process_callbacks *);
    int (*process_has_queues)(mqs_process *, char **);
    int (*update_communicator_list)(mqs_process *);
    int (*setup_communicator_iterator)(mqs_process *);
    int (*get_communicator)(mqs_process *, mqs_communicator *);
    int (*get_comm_group)(mqs_process *, int *);
    int (*next_communicator)(mqs_process *);
    int (*setup_operation_iterator)(mqs_process *, int);
    int (*next_operation)(mqs_process *, mqs_pending_operation *);
} dll;

/* The image and process are one each: their handles are these bytes'
 * addresses, and the library's information hangs here. */
static char image_handle, process_handle;
static mqs_image_info *image_info;
static mqs_process_info *process_info;
static int rank;
static pid_t pid;
static int mem = -1; /* /proc/PID/mem, opened where process_vm_readv fails */

/* The debugger's own error, below the library's codes. */
enum { err_read = 50 };

static char *line;
static size_t line_cap;

/* ask sends a question and reads its answer into line; it returns NULL
 * when the answer is "-" or the server has gone. */
static const char *ask(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    vprintf(format, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    ssize_t n = getline(&line, &line_cap, stdin);
    if (n <= 0)
        exit(1); /* the server went: nothing to answer to */
    if (line[n - 1] == '\n')
        line[n - 1] = 0;
    if (line[0] == '-')
        return NULL;
    return line;
}

/* say prints one result line; text is made one line. */
static void say(const char *kind, const char *text)
{
    printf("%s ", kind);
    for (const char *p = text; p && *p; p++)
        putchar(*p == '\n' || *p == '\r' ? ' ' : *p);
    putchar('\n');
    fflush(stdout);
}

static void fail(const char *what, int code)
{
    char buf[512];
    const char *why = code >= mqs_first_user_code && dll.dll_error_string ? dll.dll_error_string(code) : NULL;
    if (code == err_read)
        why = "a read of the process's memory failed";
    snprintf(buf, sizeof buf, "%s: %s (code %d)", what, why ? why : "no information", code);
    say("error", buf);
    exit(1);
}

static void dprints(const char *text) { say("log", text); }

static char *errorstring(int code)
{
    switch (code) {
    case err_read:
        return "a read of the process's memory failed";
    }
    return "unknown error";
}

static void put_image_info(mqs_image *image, mqs_image_info *info) { (void)image; image_info = info; }
static mqs_image_info *get_image_info(mqs_image *image) { (void)image; return image_info; }
static void put_process_info(mqs_process *p, mqs_process_info *info) { (void)p; process_info = info; }
static mqs_process_info *get_process_info(mqs_process *p) { (void)p; return process_info; }

/* The target is this machine's kind: x86-64 or another LP64 Linux. */
static void get_type_sizes(mqs_process *p, mqs_target_type_sizes *s)
{
    (void)p;
    s->short_size = sizeof(short);
    s->int_size = sizeof(int);
    s->long_size = sizeof(long);
    s->long_long_size = sizeof(long long);
    s->pointer_size = sizeof(void *);
    s->bool_size = 1;
    s->size_t_size = sizeof(size_t);
}

/* known are the answers read before the start: types, members and this
 * process's symbols (a value of -1: none). A name too long for them is
 * asked as if unknown. */
#define KNOWN 4096
enum { K_TYPE, K_FIELD, K_SYM };
static struct {
    int kind;
    int id;
    char name[128];
    long value;        /* a type's size, a field's offset, -1 for none */
    mqs_taddr_t addr;  /* a symbol's */
} known[KNOWN];
static int nknown;

static void read_known(void)
{
    while (getline(&line, &line_cap, stdin) > 0 && strncmp(line, "go", 2) != 0) {
        if (nknown == KNOWN)
            continue;
        char name[128], addr[32];
        int id = 0;
        long v = 0;
        if (sscanf(line, "type %127s %d %ld", name, &id, &v) == 3)
            known[nknown].kind = K_TYPE;
        else if (sscanf(line, "field %d %127s %ld", &id, name, &v) == 3)
            known[nknown].kind = K_FIELD;
        else if (sscanf(line, "sym %127s %31s", name, addr) == 2) {
            known[nknown].kind = K_SYM;
            v = addr[0] == '-' ? -1 : 0;
            known[nknown].addr = strtoul(addr, NULL, 16);
        } else
            continue;
        known[nknown].id = id;
        known[nknown].value = v;
        snprintf(known[nknown].name, sizeof known[nknown].name, "%s", name);
        nknown++;
    }
}

/* lookup finds a known answer of a kind: its index, -1 where none is
 * known. */
static int lookup(int kind, int id, const char *name)
{
    for (int i = 0; i < nknown; i++)
        if (known[i].kind == kind && (kind != K_FIELD || known[i].id == id) && strcmp(known[i].name, name) == 0)
            return i;
    return -1;
}

static int find_symbol(mqs_image *image, char *name, mqs_taddr_t *addr)
{
    (void)image;
    mqs_taddr_t found;
    int k = lookup(K_SYM, 0, name);
    if (k >= 0) {
        if (known[k].value < 0)
            return mqs_no_information;
        found = known[k].addr;
    } else {
        const char *a = ask("sym %s", name);
        if (!a)
            return mqs_no_information;
        found = strtoul(a, NULL, 16);
    }
    if (addr) /* Open MPI's library asks whether a function is there with none */
        *addr = found;
    return mqs_ok;
}

static int find_function(mqs_image *image, char *name, int lang, mqs_taddr_t *addr)
{
    (void)lang;
    return find_symbol(image, name, addr);
}

/* A type's handle is its server-side number plus one, and its size is
 * kept beside it. */
#define TYPES 256
static int type_sizes[TYPES];

static mqs_type *find_type(mqs_image *image, char *name, int lang)
{
    (void)image;
    (void)lang;
    int id, size, k = lookup(K_TYPE, 0, name);
    if (k >= 0) {
        if (known[k].value < 0)
            return NULL;
        id = known[k].id;
        size = (int)known[k].value;
    } else {
        const char *a = ask("type %s", name);
        if (!a || sscanf(a, "%d %d", &id, &size) != 2)
            return NULL;
    }
    if (id < 0 || id >= TYPES)
        return NULL;
    type_sizes[id] = size;
    return (mqs_type *)(long)(id + 1);
}

static int field_offset(mqs_type *type, char *name)
{
    int id = (int)((long)type - 1), k = lookup(K_FIELD, id, name);
    if (k >= 0)
        return (int)known[k].value;
    const char *a = ask("field %d %s", id, name);
    return a ? atoi(a) : -1;
}

static int type_size(mqs_type *type)
{
    long id = (long)type - 1;
    return id >= 0 && id < TYPES ? type_sizes[id] : 0;
}

static int global_rank(mqs_process *p) { (void)p; return rank; }
static mqs_image *get_image(mqs_process *p) { (void)p; return (mqs_image *)&image_handle; }

static int fetch_data(mqs_process *p, mqs_taddr_t addr, int size, void *buf)
{
    (void)p;
    if (size < 0)
        return err_read;
    if (size == 0)
        return mqs_ok;
    struct iovec local = {buf, (size_t)size}, remote = {(void *)addr, (size_t)size};
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == size)
        return mqs_ok;
    if (mem < 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
        mem = open(path, O_RDONLY | O_CLOEXEC);
    }
    if (mem >= 0 && pread(mem, buf, size, (off_t)addr) == size)
        return mqs_ok;
    return err_read;
}

static void target_to_host(mqs_process *p, const void *in, void *out, int size)
{
    (void)p;
    memcpy(out, in, size);
}

static void *need(void *lib, const char *name)
{
    void *f = dlsym(lib, name);
    if (!f) {
        char buf[256];
        snprintf(buf, sizeof buf, "the library has no %s", name);
        say("error", buf);
        exit(1);
    }
    return f;
}

static void load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        say("error", dlerror());
        exit(1);
    }
    *(void **)&dll.setup_basic_callbacks = need(lib, "mqs_setup_basic_callbacks");
    *(void **)&dll.version_string = need(lib, "mqs_version_string");
    *(void **)&dll.version_compatibility = need(lib, "mqs_version_compatibility");
    *(void **)&dll.dll_error_string = need(lib, "mqs_dll_error_string");
    *(void **)&dll.setup_image = need(lib, "mqs_setup_image");
    *(void **)&dll.image_has_queues = need(lib, "mqs_image_has_queues");
    *(void **)&dll.setup_process = need(lib, "mqs_setup_process");
    *(void **)&dll.process_has_queues = need(lib, "mqs_process_has_queues");
    *(void **)&dll.update_communicator_list = need(lib, "mqs_update_communicator_list");
    *(void **)&dll.setup_communicator_iterator = need(lib, "mqs_setup_communicator_iterator");
    *(void **)&dll.get_communicator = need(lib, "mqs_get_communicator");
    *(void **)&dll.get_comm_group = need(lib, "mqs_get_comm_group");
    *(void **)&dll.next_communicator = need(lib, "mqs_next_communicator");
    *(void **)&dll.setup_operation_iterator = need(lib, "mqs_setup_operation_iterator");
    *(void **)&dll.next_operation = need(lib, "mqs_next_operation");
}

/* operations prints a communicator's operations of one class. A list
 * read while the rank changes it may not end: it is cut. */
static void operations(mqs_process *p, int class)
{
    if (dll.setup_operation_iterator(p, class) != mqs_ok)
        return;
    mqs_pending_operation op;
    for (int n = 0; n < 100000; n++) {
        memset(&op, 0, sizeof op);
        if (dll.next_operation(p, &op) != mqs_ok)
            return;
        printf("op %d %d %ld %d %ld %ld %ld %ld %ld\n", class, op.status, op.desired_global_rank, op.tag_wild,
               op.desired_tag, op.desired_length, op.actual_global_rank, op.actual_tag, op.actual_length);
    }
}

static void communicator(mqs_process *p)
{
    mqs_communicator c;
    memset(&c, 0, sizeof c);
    if (dll.get_communicator(p, &c) != mqs_ok)
        return;
    c.name[sizeof c.name - 1] = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%lu %ld %ld %s", c.unique_id, c.local_rank, c.size, c.name);
    say("comm", buf);
    if (c.size > 0 && c.size <= 1 << 22) {
        int *group = calloc(c.size, sizeof *group);
        if (group && dll.get_comm_group(p, group) == mqs_ok) {
            printf("group");
            for (long i = 0; i < c.size; i++)
                printf(" %d", group[i]);
            putchar('\n');
        }
        free(group);
    }
    operations(p, mqs_pending_sends);
    operations(p, mqs_pending_receives);
    operations(p, mqs_unexpected_messages);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: sdm-msgq LIBRARY RANK PID (run by sdm's servers, not by hand)\n");
        return 2;
    }
    rank = atoi(argv[2]);
    pid = (pid_t)atoi(argv[3]);
    read_known();
    load(argv[1]);
    static const mqs_basic_callbacks basic = {malloc, free, dprints, errorstring,
                                              put_image_info, get_image_info, put_process_info, get_process_info};
    static const mqs_image_callbacks image = {get_type_sizes, find_function, find_symbol, find_type, field_offset, type_size};
    static const mqs_process_callbacks process = {global_rank, get_image, fetch_data, target_to_host};
    dll.setup_basic_callbacks(&basic);
    say("version", dll.version_string());
    if (dll.version_compatibility() != MQS_INTERFACE_COMPATIBILITY) {
        char buf[128];
        snprintf(buf, sizeof buf, "the library speaks version %d of the interface, sdm version %d",
                 dll.version_compatibility(), MQS_INTERFACE_COMPATIBILITY);
        say("error", buf);
        return 1;
    }
    mqs_image *im = (mqs_image *)&image_handle;
    mqs_process *pr = (mqs_process *)&process_handle;
    char *msg = NULL;
    int rc;
    if ((rc = dll.setup_image(im, &image)) != mqs_ok)
        fail("the library cannot read the program", rc);
    if ((rc = dll.image_has_queues(im, &msg)) != mqs_ok) {
        if (msg)
            say("note", msg);
        fail("the program has no queues the library can read", rc);
    }
    if (msg)
        say("note", msg);
    if ((rc = dll.setup_process(pr, &process)) != mqs_ok)
        fail("the library cannot read the process", rc);
    msg = NULL;
    if ((rc = dll.process_has_queues(pr, &msg)) != mqs_ok) {
        if (msg)
            say("note", msg);
        fail("the process has no queues the library can read", rc);
    }
    if ((rc = dll.update_communicator_list(pr)) != mqs_ok)
        fail("the library cannot list the communicators", rc);
    if (dll.setup_communicator_iterator(pr) == mqs_ok)
        do
            communicator(pr);
        while (dll.next_communicator(pr) == mqs_ok);
    puts("end");
    return 0;
}
