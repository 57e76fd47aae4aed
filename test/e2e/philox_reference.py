"""Philox4x32-10 (Salmon et al., SC'11) in numpy, independent of otc's C++:
otc.dropout's draw for element i is keyed by (the run's seed, the op's
stream) at counter (i, the micro-batch's index in the run)."""
import numpy as np

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox(ctr, key):
    c = [np.asarray(w, dtype=np.uint64) for w in ctr]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(W0)) & np.uint64(MASK), (k1 + np.uint64(W1)) & np.uint64(MASK)
        p0, p1 = np.uint64(M0) * c[0], np.uint64(M1) * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & np.uint64(MASK), p1 & np.uint64(MASK),
             ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & np.uint64(MASK), p0 & np.uint64(MASK)]
    return c


def uniform(seed, offset, stream, index):
    index = np.asarray(index, dtype=np.uint64)
    ctr = [index & np.uint64(MASK), index >> np.uint64(32),
           np.full_like(index, offset & MASK), np.full_like(index, offset >> 32)]
    out = philox(ctr, [seed & MASK, (seed >> 32) ^ stream])
    return (out[0] >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)


def keep_mask(seed, offset, stream, shape, ratio):
    """otc.dropout's mask (true: kept) for a tensor of `shape`."""
    n = int(np.prod(shape))
    return (uniform(seed, offset, stream, np.arange(n)) >= np.float32(ratio)).reshape(shape)
