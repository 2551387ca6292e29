/* Where template files come from: the set embedded in the library, or the folder named by the
 * environment variable SPTUNE_TEMPLATES (read at load time, so edits need no rebuild). Paths are
 * always given in the embedded form "templates/<folder>/<file>.lua", whatever the source. */
#ifndef SP_TSOURCE_H
#define SP_TSOURCE_H

#include "sptune.h"
#include "sp_str.h"
#include <stddef.h>

typedef struct sp_tfile {
    char *path; /* "templates/lib/mma.lua" */
    char *where; /* for messages: the file read (sp_tsource_display) */
    char *data; /* NUL-terminated */
    size_t len;
} sp_tfile;

/* Splits "templates/<dir>/<stem>.lua" (one folder level, plain names); 1 if path has that form.
 * dir and stem may be NULL; their buffers hold 64 bytes. */
int sp_tsource_split(const char *path, char dir[64], char stem[64]);

/* Whether path is "templates/lib/<name>.cuh": CUDA text a lib module includes whole (cuda_file in the sandbox). */
int sp_tsource_cuda(const char *path);

/* Every template file, as sorted "templates/<dir>/<file>.lua" (and "templates/lib/<name>.cuh") paths;
 * NULL-terminated (free with sp_strv_free). Fails when SPTUNE_TEMPLATES is set but names no folder. */
sptune_status sp_tsource_paths(char ***paths, int *count);
/* Reads one file by its path as sp_tsource_paths gives it. */
sptune_status sp_tsource_read(const char *path, char **data, size_t *len);
/* Reads every templates/lib/<name>.lua and <name>.cuh, sorted by path. */
sptune_status sp_tsource_libs(sp_tfile **files, int *count);
void sp_tfiles_free(sp_tfile *files, int count);
/* For messages: the folder templates are read from, or "the embedded set". */
const char *sp_tsource_where(void);
/* For messages: the file a path is read from ("$SPTUNE_TEMPLATES/dense/gemm.lua"), or the path itself for
 * the embedded set. Allocated; NULL when out of memory. */
char *sp_tsource_display(const char *path);

#endif
