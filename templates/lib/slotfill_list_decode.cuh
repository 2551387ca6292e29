/* Filled slots from the chunk's list (a count word, then 16-bit entries: the value's half-word
 * index in the record << dbits | distance), spread evenly over the lanes; the masks the sparse
 * tensor cores need are rebuilt in shared memory with atomic ORs. Then the residual words. */
template <bool FAST> __device__ __forceinline__ void sp_decode(const unsigned char *rec, const sp_u32 *staged,
    const sp_u32 *gex, int nwords, int lane, unsigned short *corr, sp_mask_t *msk, sp_mask_t &mine, unsigned &touched)
{
    msk[lane] = 0;
    __syncwarp();
    const int n = min((int)sp_ex<FAST>(staged, gex, 0), 2 * nwords);
    for (int e = lane; e < n; e += 32) {
        const sp_u32 word = sp_ex<FAST>(staged, gex, 1 + (e >> 1));
        const unsigned ent = (e & 1) ? word >> 16 : word & 0xffffu;
        const unsigned slot = (ent >> SP_DBITS) & (8u * SP_W - 1u), l = (slot >> 3) & 31u;
        atomicOr(&msk[l], (sp_mask_t)1 << ((slot >> 8) * 8 + (slot & 7u)));
        sp_put(corr, (int)((l >> 2) + 8 * ((slot >> 1) & 1u)),
               (int)(32 * (slot >> 8) + 4 * (l & 3u) + 16 * ((slot >> 2) & 1u) + (ent & ((1u << SP_DBITS) - 1u))) - SP_REACH,
               *(const unsigned short *)(rec + 2 * slot), touched);
    }
    for (int j = 1 + (n + 1) / 2 + lane; j < nwords; j += 32) {
        const sp_u32 x = sp_ex<FAST>(staged, gex, j);
        if (x) sp_put(corr, (int)(x >> 8), (int)(x & 0xffu), (unsigned short)(x >> 16), touched);
    }
    __syncwarp();
    mine = msk[lane];
}

