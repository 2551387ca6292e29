/* On-disk kernel cache: key = SHA-256 of (source, options, arch, NVRTC version). Entries are
 * written atomically (temp file + rename) so that concurrent processes share the folder safely;
 * a damaged entry is treated as a miss and replaced. */
#ifndef SP_CACHE_H
#define SP_CACHE_H

#include "sp_nvrtc.h"

typedef struct sp_cache sp_cache;

/* dir NULL: sptune_default_cache_dir(). The folder is created on first use. */
sptune_status sp_cache_open(const char *dir, sp_cache **out);
void sp_cache_close(sp_cache *c);
const char *sp_cache_dir(const sp_cache *c);

/* 64-hex-char key. */
void sp_cache_key(const char *source, const char *arch, const char *const *options, int noptions,
                  char key[65]);
/* SPTUNE_OK and *hit=1 with out filled (image, log, resources) on a hit; *hit=0 on a miss. */
sptune_status sp_cache_get(sp_cache *c, const char key[65], sp_cubin *out, int *hit);
sptune_status sp_cache_put(sp_cache *c, const char key[65], const sp_cubin *cubin);

/* Compile through the cache: a hit loads, a miss compiles and stores. cache may be NULL. */
sptune_status sp_kernel_build(sp_cache *c, const char *source, const char *name, const char *arch,
                              const char *const *options, int noptions, sp_cubin *out);

#endif
