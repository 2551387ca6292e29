/* What the Slot-Filling modules share (sp_slotfill.c: the image, the owner and list layouts;
 * sp_slotfill_bitmap.c: the bitmap layout). Not part of any interface beyond runtime/. */
#ifndef SP_SLOTFILL_INTERNAL_H
#define SP_SLOTFILL_INTERNAL_H

#include "sp_slotfill.h"

/* Section offsets and sizes of m from its shape and parameters and the extras' length (16-byte units). */
void sp_sf_sections(sp_slotfill *m, unsigned long long extra_units);
/* Writes the header from m's fields and seals the image (the encoders' last step). */
void sp_sf_write_header(sp_slotfill *m);

/* The bitmap layout (parameters and arguments already checked by sp_sf_encode / sp_sf_decode; out's dtype,
 * parameters, shape and sections already set by sp_sf_encode). */
sptune_status sp_sf_encode_bitmap(const uint16_t *w, long long ld, sp_slotfill *out);
sptune_status sp_sf_decode_bitmap(const sp_slotfill *m, uint16_t *w, long long ld);
/* Every value of a bitmap image, block by block (a 16-row tile's 128-column chunks in turn), each field checked
 * as sp_sf_decode does; visit gets its row, column and bits. */
typedef void (*sp_sf_visit)(void *ud, long long row, long long col, uint16_t v);
sptune_status sp_sf_walk_bitmap(const sp_slotfill *m, sp_sf_visit visit, void *ud);
/* Its byte counts, from the shape, the offsets and the header's counts (also for images read back). */
void sp_sf_bitmap_stats(sp_slotfill *m);

#endif
