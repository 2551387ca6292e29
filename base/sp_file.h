/* Files: folders, whole-file reads, atomic writes, and where sptune keeps its files. */
#ifndef SP_FILE_H
#define SP_FILE_H

#include "sptune.h"
#include <stddef.h>

sptune_status sp_mkdir_p(const char *path);                      /* mode 0755, existing is fine */
sptune_status sp_read_file(const char *path, char **data, size_t *len); /* NUL-terminated */
/* The same, refusing a file (or an endless stream such as /dev/zero) of more than max bytes: SPTUNE_ERR_INVALID
 * naming what (what the input declares, for the message), before more than max + 64 KB is held. */
sptune_status sp_read_file_max(const char *path, size_t max, const char *what, char **data, size_t *len);
/* Writes data to path atomically: a unique temp file in the same folder, fsync, rename. */
sptune_status sp_write_file_atomic(const char *path, const void *data, size_t len);

/* The database ($SPTUNE_DB, else $XDG_DATA_HOME/sptune/tuning.db, else ~/.local/share/...) and the
 * kernel cache ($SPTUNE_CACHE_DIR, else $XDG_CACHE_HOME/sptune/kernels, else ~/.cache/...). */
sptune_status sp_default_db_path(char *buf, size_t len);
sptune_status sp_default_cache_dir(char *buf, size_t len);

/* Copies text into the caller's buffer, or says that it is too small (what: for the message). */
sptune_status sp_copy_out(char *buf, size_t len, const char *text, const char *what);

#endif
