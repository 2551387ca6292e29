/* Files compiled into the library by base/embed_files.cmake (the templates, the shipped tuning
 * results), so that an application linking libsptune needs no install tree. */
#ifndef SP_EMBED_H
#define SP_EMBED_H

#include <stddef.h>

typedef struct sp_embedded_file {
    const char *path; /* "templates/dense/gemm.lua" */
    const char *data; /* NUL-terminated */
    size_t len;
} sp_embedded_file;

#endif
