#!/usr/bin/python3
"""Hand-derived reference for shape_folding.onnx trained with SGD.

loss = sum(reshape(x, [N, 6]) @ W), so dloss/dW = X^T 1 and K accumulated
micro-batches of the 1/K-weighted loss give W -= lr * mean over the window of
X_j^T 1. Writes the expected initializers as an .npz.

usage: matmul_reshape_reference.py MODEL DATA_DIR N K STEPS LR OUT.npz
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

model, data, n, k, steps, lr, out = sys.argv[1:]
n, k, steps, lr = int(n), int(k), int(steps), float(lr)
w = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}["w"].astype(np.float64)
x = np.load(f"{data}/x.npy").astype(np.float64).reshape(-1, 6)
m = len(x) // n
for s in range(steps):
    grad = np.zeros_like(w)
    for j in range(k):
        mb = x[((s * k + j) % m) * n:][:n]
        grad += mb.T @ np.ones((n, w.shape[1])) / k
    w -= lr * grad
np.savez(out, w=w.astype(np.float32))
