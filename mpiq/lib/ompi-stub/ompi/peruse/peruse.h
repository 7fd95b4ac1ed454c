/* Open MPI's development headers include ompi/peruse/peruse.h, which
 * Open MPI installs only when built with PERUSE; without it (as Debian
 * builds it) the header is reached but none of it used but this type. */
typedef void *peruse_event_h;
