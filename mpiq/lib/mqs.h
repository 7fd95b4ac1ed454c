/* mqs.h: the debugger side of the message-queue interface that MPI
 * libraries implement in a library of their own (Open MPI's
 * libompi_dbg_msgq.so, named in MPIR_dll_name): version 2 of the
 * interface (no MPI-2 process functions), for a 64-bit target. The
 * layouts and numbers are the interface's; the library calls the
 * debugger through the tables of callbacks and answers through the
 * mqs_* functions it exports. */
#ifndef SDM_MQS_H
#define SDM_MQS_H

#include <stddef.h>

#define MQS_INTERFACE_COMPATIBILITY 2

typedef unsigned long mqs_taddr_t; /* a target address */
typedef long mqs_tword_t;          /* a target word */

/* Handles the library passes back; the debugger gives them meaning. */
typedef struct mqs_image_ mqs_image;
typedef struct mqs_process_ mqs_process;
typedef struct mqs_type_ mqs_type;
typedef struct mqs_image_info_ mqs_image_info;
typedef struct mqs_process_info_ mqs_process_info;

enum { mqs_ok = 0, mqs_no_information, mqs_end_of_list, mqs_first_user_code = 100 };
enum { mqs_pending_sends, mqs_pending_receives, mqs_unexpected_messages };
enum { mqs_lang_c = 'c' };

typedef struct {
    int short_size, int_size, long_size, long_long_size, pointer_size, bool_size, size_t_size;
} mqs_target_type_sizes;

typedef struct {
    mqs_taddr_t unique_id;
    mqs_tword_t local_rank;
    mqs_tword_t size;
    char name[64];
} mqs_communicator;

typedef struct {
    int status; /* pending, matched, complete */
    mqs_tword_t desired_local_rank;
    mqs_tword_t desired_global_rank;
    int tag_wild;
    mqs_tword_t desired_tag;
    mqs_tword_t desired_length;
    int system_buffer;
    mqs_taddr_t buffer;
    mqs_tword_t actual_local_rank;
    mqs_tword_t actual_global_rank;
    mqs_tword_t actual_tag;
    mqs_tword_t actual_length;
    char extra_text[5][64];
} mqs_pending_operation;

typedef struct {
    void *(*malloc_fp)(size_t);
    void (*free_fp)(void *);
    void (*dprints_fp)(const char *);
    char *(*errorstring_fp)(int);
    void (*put_image_info_fp)(mqs_image *, mqs_image_info *);
    mqs_image_info *(*get_image_info_fp)(mqs_image *);
    void (*put_process_info_fp)(mqs_process *, mqs_process_info *);
    mqs_process_info *(*get_process_info_fp)(mqs_process *);
} mqs_basic_callbacks;

typedef struct {
    void (*get_type_sizes_fp)(mqs_process *, mqs_target_type_sizes *);
    int (*find_function_fp)(mqs_image *, char *, int, mqs_taddr_t *);
    int (*find_symbol_fp)(mqs_image *, char *, mqs_taddr_t *);
    mqs_type *(*find_type_fp)(mqs_image *, char *, int);
    int (*field_offset_fp)(mqs_type *, char *);
    int (*sizeof_fp)(mqs_type *);
} mqs_image_callbacks;

typedef struct {
    int (*get_global_rank_fp)(mqs_process *);
    mqs_image *(*get_image_fp)(mqs_process *);
    int (*fetch_data_fp)(mqs_process *, mqs_taddr_t, int, void *);
    void (*target_to_host_fp)(mqs_process *, const void *, void *, int);
} mqs_process_callbacks;

#endif
