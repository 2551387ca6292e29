/* Filled slots from the record's masks: each lane decodes its own, its first distance found by a
 * warp prefix sum of the masks' popcounts; then the residual words, spread over the lanes. */
template <bool FAST> __device__ __forceinline__ void sp_decode(const unsigned char *rec, const sp_u32 *staged,
    const sp_u32 *gex, int nwords, int lane, unsigned short *corr, sp_mask_t *msk, sp_mask_t &mine, unsigned &touched)
{
    mine = SP_MASK_LOAD(rec + 18 * SP_W + lane * (SP_W / 32));
    const int cnt = __popcll((unsigned long long)mine);
    int excl = cnt;
    #pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(SP_FULL, excl, o);
        if (lane >= o) excl += v;
    }
    const int total = __shfl_sync(SP_FULL, excl, 31);
    int e = (excl - cnt) * SP_DBITS;
    const unsigned char *vbase = rec + lane * 16;
    const int g = lane >> 2, t4 = 4 * (lane & 3);
    for (sp_mask_t m = mine; m; m &= m - 1, e += SP_DBITS) {
        const int b = __ffsll((unsigned long long)m) - 1, s = b >> 3;
        const sp_u32 lo = sp_ex<FAST>(staged, gex, e >> 5), hi = sp_ex<FAST>(staged, gex, (e >> 5) + 1);
        const int d = (int)(__funnelshift_r(lo, hi, e & 31) & ((1u << SP_DBITS) - 1u));
        sp_put(corr, g + 8 * ((b >> 1) & 1), 32 * s + t4 + 16 * ((b >> 2) & 1) + d - SP_REACH,
               *(const unsigned short *)(vbase + s * 512 + (b & 7) * 2), touched);
    }
    for (int j = (total * SP_DBITS + 31) / 32 + lane; j < nwords; j += 32) {
        const sp_u32 x = sp_ex<FAST>(staged, gex, j);
        if (x) sp_put(corr, (int)(x >> 8), (int)(x & 0xffu), (unsigned short)(x >> 16), touched);
    }
    (void)msk;
}

