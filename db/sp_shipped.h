/* The tuning results shipped with sptune (db/data/<gpu>.tsv, measured on real GPUs, in the text
 * format of sp_db_text.h), compiled into the library. */
#ifndef SP_SHIPPED_H
#define SP_SHIPPED_H

#include "sp_embed.h"

extern const sp_embedded_file sp_shipped_data[]; /* "db/data/h200.tsv", ...; ends with {0,0,0} */
extern const int sp_shipped_data_count;

#endif
