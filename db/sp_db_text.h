/* Tuning results as reviewable text, for sharing between machines and for the shipped data:
 * one result per line, tab-separated, with a header line naming the columns (SP_DB_TEXT_COLUMNS).
 * Backslash, tab, CR and newline inside a field are written as \\ \t \r \n; a missing number
 * is "-". A file read back is untrusted: every line is checked (field count, lengths, numbers,
 * outcome names) and then offered to the caller's accept callback (which checks templates and
 * configurations against the local spaces) before anything is recorded. */
#ifndef SP_DB_TEXT_H
#define SP_DB_TEXT_H

#include "sp_db.h"
#include <stdio.h>

#define SP_DB_TEXT_MAGIC "# sptune tuning results v2"    /* v2: energy_j, baseline_energy_j at the end */
#define SP_DB_TEXT_MAGIC_V1 "# sptune tuning results v1" /* still read: 27 fields, no energy */

sptune_status sp_db_export_text(sp_db *db, FILE *out, long long *rows);

/* Returns 1 to record r, 0 to reject it with a reason in why. */
typedef int (*sp_db_accept_fn)(const sp_result *r, void *ud, char *why, size_t why_len);

typedef struct sp_db_import_stats {
    long long read, recorded, rejected;
    char first_rejection[512]; /* "file:line: reason" of the first rejected line */
} sp_db_import_stats;

/* Reads a text export (name is used in messages; in may be a pipe). A malformed file (wrong header, a line that is
 * not a record) is SPTUNE_ERR_INVALID naming the line, with nothing of it recorded: lines are
 * validated before the first is recorded. Lines the callback rejects are counted and skipped. */
sptune_status sp_db_import_text(sp_db *db, FILE *in, const char *name, sp_db_accept_fn accept, void *ud,
                                sp_db_import_stats *stats);

/* Every record of a text export, checked like an import, offered to cb without recording it (the
 * shipped data is read so). One pass: a malformed file is SPTUNE_ERR_INVALID naming the line, and
 * cb may have seen the records before it (the caller drops what it gathered). */
sptune_status sp_db_text_foreach(FILE *in, const char *name, sp_db_row_cb cb, void *ud);

/* Every result of another sptune database (opened read-only and validated like any file)
 * offered to accept, then recorded. */
sptune_status sp_db_merge(sp_db *db, const char *other_path, sp_db_accept_fn accept, void *ud,
                          sp_db_import_stats *stats);

#endif
