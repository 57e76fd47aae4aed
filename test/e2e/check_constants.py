"""Checks kernels/constants_16bit.mlir's results (DIR/result0.npy, result1.npy)
exactly: each is the float32 product of the operands rounded to the storage
type, rounded once more."""
import sys

import numpy as np


def bf16(a):
    """Round float32 to bfloat16, nearest even, back in float32."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


d = sys.argv[1]
x = np.load(f"{d}/arg0.npy").astype(np.float16).astype(np.float32)
y = bf16(np.load(f"{d}/arg1.npy"))
c = np.array([1.0, -2.5, 0.33325195], np.float16).astype(np.float32)
k = bf16(np.array([[0.5, 3.0, -1.0], [65504.0, 1.0e-7, 2.0]], np.float32))
want_a = (x * c).astype(np.float16).astype(np.float32)
want_b = bf16(y * k)
got_a, got_b = np.load(f"{d}/result0.npy"), np.load(f"{d}/result1.npy")
assert np.array_equal(got_a, want_a), (got_a, want_a)
assert np.array_equal(got_b, want_b), (got_b, want_b)
print("f16 and bf16 constants exact")
