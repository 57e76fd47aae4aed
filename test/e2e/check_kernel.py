#!/usr/bin/python3
"""Runs an `otc kernel` executable on random inputs and checks its results
against a float64 reference within the storage type's rounding bound.

usage: check_kernel.py EXE KIND TYPE   (KIND: chain, rows or gemm; TYPE: f16 or bf16)
       check_kernel.py EXE epilogue f32|f16|bf16
       check_kernel.py EXE unary f32
       check_kernel.py EXE softmax f32|f16
       check_kernel.py EXE normalize f32
       check_kernel.py EXE gather f32
       check_kernel.py EXE logic f32
       check_kernel.py EXE slice f32
       check_kernel.py EXE steps f32
       check_kernel.py EXE rotary f32
       check_kernel.py EXE columns f32
       check_kernel.py EXE conv f32|f16|bf16
       check_kernel.py EXE cross_entropy f32

The inputs are rounded to TYPE first, so the reference sees exactly what
the kernel sees. The kernel computes in float32 and rounds each result of
the storage type once (in the chain, each op's), so for a result r with
reference value v:
    |r - v| <= u |v| + a
where u is TYPE's unit roundoff (2^-11 for f16, 2^-8 for bf16) and a
bounds the float32 arithmetic: n * 2^-24 * (sum of |terms|) for a sum of
n terms, a few ulps of float32 for the elementwise chain. f16 adds 2^-25
for results that land among its subnormals.

`unary` checks exp, log, sqrt, reciprocal, abs and erf in float32 against
float64 within 4 ulps (2^-22 |v|): sqrtf and division are correctly rounded,
and glibc and CUDA document expf, logf and erff within 2 ulps.

`softmax` checks softmax along the last axis and log-softmax along a middle
one. In float32, exp(x - m) carries |x - m| 2^-24 relative error from the
rounded subtraction plus 2 ulps, the sum of n terms n 2^-24, the division
or the log a few ulps more: softmax within (max|x - m| + n + 8) 2^-24 |v|,
log-softmax within that times (1 + |v|) absolutely; plus u |v| for storage.

`normalize` checks layer normalization's normalize and its gradient over
rows of n = 60, then RMS normalization's (no centering), then both with
their affine (otc.layer_norm). Each statistic is a float32 sum of n terms, off by at most
n 2^-24 of the sum of |terms|, which reaches y through rstd: y within
2 n 2^-24 (rstd max|x| + |y|), and the gradient within
4 n 2^-24 rstd max|g| (1 + |y|).

`gather` checks an embedding lookup and its scatter-add gradient exactly:
the lookup copies, and the gradient sums each row's contributions in index
order, as numpy's add.at does.

`logic` checks comparisons, not/and/or, where and casts exactly: float to
int64 truncates toward zero with NaN to 0 and saturation (otc's definition;
ONNX leaves it undefined), a cast to f16 rounds to nearest even even when
its consumer is fused, and bool to float is 0 or 1.

`slice` checks a strided slice, its gradient and a concat exactly.

`rotary` checks the rotary embedding x cos + rotate_half(x) sin and its
transpose against float64: two float32 products and a sum, within
2^-22 (|x cos| + |x' sin|).

`epilogue` checks the GEMM epilogues: x Wᵀ + b with the bias added
before the one rounding, and the weight gradients xᵀ g and gᵀ x with the
bias gradient (g's column sums) beside each. Each is a float32 sum of n
terms: within u |v| + (n + 1) 2^-24 (sum of |terms|), u the result type's
unit roundoff (2^-24 for float32 results), as `gemm` above. Then the tanh
GELU of x Wᵀ + b and of x Wᵀ, with their preactivations: the GELU of the
preactivation as stored, rounded once (cuBLASLt's fused epilogue: of the
float32 sum, |gelu'| < 1.13 carrying the sum's error); and
x Wᵀ times gelu'(p) at the stored preactivation p, rounded once.

`columns` checks column reductions over 4096 rows (32 x 128) of 24
outputs, which code generation splits into 32 partial sums of 128 rows
and their sum: a float32 sum done that way is within (128 + 32) 2^-24 of
the sum of |terms| (each level's recursive-summation bound). The sum of
x, of x y (exact products of float32 in float64, one rounding in
float32 adds 2^-24 |xy|), the maximum (exact) and the mean (a sum times
the exact 2^-12), and a [9, 24] sum left whole (9 2^-24). Then sums over
dims 0 and 2 of [16, 6, 4096] per channel (BatchNorm's), split into 16 x 6
partial sums over 4096 and their sums over 16: within (4096 + 16) 2^-24 of
the sum of |terms|, the mean of squares one 2^-24 more.

`conv` checks otc.conv, conv_data_grad and conv_filter_grad (--conv-op)
in two geometries, ResNet's 3x3 over 16 channels and a grouped, strided,
dilated one with uneven pads, against float64 loops. Each output is a
float32 sum of n terms (the taps of a window, the filters and taps that
read an input, the windows of a filter tap over the batch): within
u |v| + (n + 1) 2^-24 (sum of |terms|), as `gemm`. cuDNN (on CUDA, 16-bit)
is held to the same bound: otc picks its engines that sum in float32
without FFT or Winograd transforms.

`cross_entropy` checks the loss and the gradient that one row kernel
computes (otc.softmax_cross_entropy_with_grad), with a sample's label
ignored: the loss as `rows` bounds it; the gradient seed / kept (p - onehot)
with p within softmax's bound, scaled, plus 2^-22 of the result for the
subtraction, the scale and the product.

`batch_norm` checks otc.batch_norm's mean, variance and output over
[6, 3, 8, 8] against float64: a channel of mean 1000 and spread 1, and
one whose image 0 lies 80 spreads from the others. Each statistic is a
float32 computation with at most P + N + 8 roundings on its path (P
pixels, N images), each within 2^-24 of what it sums: |x| for the mean;
for the variance the squares about image 0's mean, the shift that
Chan's combination takes, twice; the output carries both errors through
its gain, plus 4 roundings.

`steps` checks floor, ceil, round (halves to even, as ONNX) and sign
exactly, NaN, infinities and -0.0 included; sign(NaN) is 0, as PyTorch's
(numpy's is NaN).
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

U = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8, "f32": 2.0 ** -24}
F32_EPS = 2.0 ** -24


def round_to(x, t):
    x = np.asarray(x, dtype=np.float32)
    if t == "f32":
        return x
    if t == "f16":
        return x.astype(np.float16).astype(np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16  # nearest even
    return bits.astype(np.uint32).view(np.float32)


def check(name, got, want, bound):
    err = np.abs(got.astype(np.float64) - want)
    worst = float(np.max(err - bound))
    ok = worst <= 0
    print(f"{'ok' if ok else 'FAIL'} {name}: max |err| {float(err.max()):.3g}, "
          f"max err - bound {worst:.3g}")
    return ok


CONV_GEOMETRIES = [  # x shape, w shape, strides, pads (t, l, b, r), dilations, groups
    ((2, 16, 10, 10), (24, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 6, 9, 11), (4, 3, 3, 2), (2, 1), (1, 0, 0, 2), (1, 2), 2),
]


def conv_taps(x, w, s, p, d, groups):
    """Per group and tap (kh, kw): the group's slice of the padded input
    that the tap reads at every output, [N, C/G, OH, OW], its filters
    [M/G, C/G], and where both lie (channel slices, padded-input slice)."""
    n, c, h, wd = x.shape
    m, cg, kh_, kw_ = w.shape
    oh = (h + p[0] + p[2] - d[0] * (kh_ - 1) - 1) // s[0] + 1
    ow = (wd + p[1] + p[3] - d[1] * (kw_ - 1) - 1) // s[1] + 1
    mg = m // groups
    for g in range(groups):
        for kh in range(kh_):
            for kw in range(kw_):
                rows = slice(kh * d[0], kh * d[0] + s[0] * (oh - 1) + 1, s[0])
                cols = slice(kw * d[1], kw * d[1] + s[1] * (ow - 1) + 1, s[1])
                yield (slice(g * cg, (g + 1) * cg), slice(g * mg, (g + 1) * mg), kh, kw, rows, cols)


def conv_reference(x, w, dy, s, p, d, groups):
    """y, dx and dw in float64, and each one's sum of |terms|."""
    pad = ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3]))
    out = []
    for a, b, gy in ((x, w, dy), (np.abs(x), np.abs(w), np.abs(dy))):
        xp = np.pad(a, pad)
        y = np.zeros(gy.shape)
        dxp = np.zeros(xp.shape)
        dw = np.zeros(b.shape)
        for cs, ms, kh, kw, rows, cols in conv_taps(a, b, s, p, d, groups):
            patch = xp[:, cs, rows, cols]
            y[:, ms] += np.einsum("nchw,mc->nmhw", patch, b[ms, :, kh, kw])
            dxp[:, cs, rows, cols] += np.einsum("nmhw,mc->nchw", gy[:, ms], b[ms, :, kh, kw])
            dw[ms, :, kh, kw] += np.einsum("nmhw,nchw->mc", gy[:, ms], patch)
        dx = dxp[:, :, p[0]:p[0] + a.shape[2], p[1]:p[1] + a.shape[3]]
        out.append((y, dx, dw))
    return out


def main():
    exe, kind, t = sys.argv[1], sys.argv[2], sys.argv[3]
    u = U[t]
    sub = 2.0 ** -25 if t == "f16" else 0.0
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if kind == "rotary":
            args = [rng.normal(0, 1, (2, 3, 8)).astype(np.float32),
                    rng.normal(0, 1, (3, 8)).astype(np.float32), rng.normal(0, 1, (1, 8)).astype(np.float32)]
        elif kind == "columns":
            args = [rng.normal(0, 1, (32, 128, 24)).astype(np.float32),
                    rng.normal(0.5, 1, (32, 128, 24)).astype(np.float32),
                    rng.normal(0, 1, (9, 24)).astype(np.float32),
                    rng.normal(0.5, 1, (16, 6, 4096)).astype(np.float32)]
        elif kind == "steps":
            x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, np.nan, np.inf, -np.inf,
                          2.0 ** 23 + 1, -2.0 ** 24], np.float32)
            args = [np.concatenate([x, rng.normal(0, 3, 4).astype(np.float32)])]
        elif kind == "slice":
            args = [rng.normal(size=(4, 6)).astype(np.float32), rng.normal(size=(2, 3)).astype(np.float32),
                    rng.normal(size=(4, 2)).astype(np.float32)]
        elif kind == "logic":
            x = rng.normal(0, 3, 16).astype(np.float32)
            x[0], x[1], x[2] = np.nan, 1e20, 1.0 + 2.0 ** -11  # f16 rounds it to 1
            args = [x, rng.normal(0, 3, 16).astype(np.float32),
                    rng.integers(-2, 3, 16).astype(np.int64)]
        elif kind == "gather":
            ids = np.array([[0, 3, 3, -1], [7, 2, -6, 4]], dtype=np.int64)
            args = [rng.normal(size=(5, 3)).astype(np.float32), ids,
                    rng.normal(size=(2, 4, 3)).astype(np.float32)]
        elif kind == "normalize":
            args = [round_to(rng.normal(0.5, 2, (4, 6, 10)), t), round_to(rng.normal(0, 1, (4, 6, 10)), t),
                    round_to(rng.normal(1, 0.5, (6, 10)), t), round_to(rng.normal(0, 1, (6, 10)), t)]
        elif kind == "softmax":
            args = [round_to(rng.normal(0, 2, (6, 37)), t), round_to(rng.normal(0, 2, (3, 5, 7)), t)]
        elif kind == "unary":
            mag = rng.uniform(0.3, 3.0, (2, 64))
            args = [mag[0].astype(np.float32),
                    (mag[1] * rng.choice([-1.0, 1.0], 64)).astype(np.float32)]
        elif kind == "chain":
            args = [round_to(rng.normal(0, 2, (4, 33)), t), round_to(rng.normal(0, 2, (33,)), t),
                    round_to(rng.normal(0, 2, (8, 64)), t), rng.normal(0, 2, (8, 64)).astype(np.float32),
                    round_to(rng.normal(0, 2, (2, 6)), t)]
        elif kind == "rows":
            args = [round_to(rng.normal(0, 1, (8, 100)), t), round_to(rng.normal(0, 3, (6, 37)), t),
                    rng.integers(0, 37, 6).astype(np.int64), round_to(rng.normal(0, 2, (128, 64)), t)]
        elif kind == "cross_entropy":
            labels = rng.integers(0, 37, 6).astype(np.int64)
            labels[2] = -1  # ignored
            args = [rng.normal(0, 2, (6, 37)).astype(np.float32), labels, np.array(0.75, np.float32)]
        elif kind == "conv":
            args = []
            for xs, ws, s_, p_, d_, g_ in CONV_GEOMETRIES:
                n, m = xs[0], ws[0]
                oh = (xs[2] + p_[0] + p_[2] - d_[0] * (ws[2] - 1) - 1) // s_[0] + 1
                ow = (xs[3] + p_[1] + p_[3] - d_[1] * (ws[3] - 1) - 1) // s_[1] + 1
                args += [round_to(rng.normal(0, 1, shape), t) for shape in (xs, ws, (n, m, oh, ow))]
        elif kind == "batch_norm":
            x = rng.normal(0, 1, (6, 3, 8, 8))
            x[:, 1] = 1000 + x[:, 1]
            x[:, 2] = 3 + 0.5 * x[:, 2]
            x[0, 2] += 40
            args = [x.astype(np.float32), rng.normal(1, 0.5, 3).astype(np.float32),
                    rng.normal(0, 1, 3).astype(np.float32)]
        elif kind == "epilogue":
            args = [round_to(rng.normal(0, 1, shape), t) for shape in [(64, 40), (24, 40), (24,), (64, 24)]]
        else:
            args = [round_to(rng.normal(0, 1, (3, 5, 40)), t), round_to(rng.normal(0, 1, (3, 40, 7)), t)]
        for i, a in enumerate(args):
            np.save(d / f"arg{i}.npy", a)
        subprocess.run([exe, str(d)], check=True)
        count = {"rows": 4, "unary": 6, "softmax": 2, "normalize": 6, "gather": 2,
                 "logic": 6, "slice": 3, "steps": 4, "rotary": 2, "epilogue": 10,
                 "columns": 7, "conv": 6, "cross_entropy": 2, "chain": 3,
                 "batch_norm": 3}.get(kind, 1)
        res = [np.load(d / f"result{i}.npy") for i in range(count)]

    a64 = [np.asarray(a, dtype=np.float64) for a in args]
    ok = True
    if kind == "slice":
        x, g, y = args
        d = np.zeros((4, 6), np.float32)
        d[1::2, 1::2] = g
        want = [x[1::2, 1::2], d, np.concatenate([-x, y], axis=1)]
        for name, got, w in zip(["slice", "slice_grad", "concat"], res, want):
            ok &= check(name, got, w, 0)
    elif kind == "rotary":
        x, c, sn = a64
        half = lambda v: np.concatenate([-v[..., 4:], v[..., :4]], -1)  # rotate_half
        swap = lambda v: np.concatenate([v[..., 4:], v[..., :4]], -1)
        sign = np.concatenate([-np.ones(4), np.ones(4)])
        terms = [(x * c, half(x) * sn), (x * c, -sign * swap(x) * swap(np.broadcast_to(sn, x.shape)))]
        for name, got, (p, q) in zip(["rotary", "rotary_transposed"], res, terms):
            ok &= check(name, got, p + q, 2.0 ** -22 * (np.abs(p) + np.abs(q)) + 1e-30)
    elif kind == "steps":
        x = args[0]
        want = [np.floor(x), np.ceil(x), np.round(x), np.where(np.isnan(x), 0, np.sign(x))]
        for name, got, w in zip(["floor", "ceil", "round", "sign"], res, want):
            same = np.array_equal(got, w, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(w))
            print(f"{'ok' if same else 'FAIL'} {name}: {got[:7]} want {w[:7]}")
            ok &= same
    elif kind == "logic":
        x, y, i = args
        lt = x < y
        eq = i == 0
        a = lt & ~eq
        o = a | eq
        with np.errstate(invalid="ignore", over="ignore"):
            xi = np.where(np.isnan(x), 0, np.clip(np.trunc(x.astype(np.float64)),
                                                   -2.0 ** 63, 2.0 ** 63 - 1024)).astype(np.int64)
            xi[x >= 2.0 ** 63] = 2 ** 63 - 1
            hb = x.astype(np.float16).astype(np.float32)
        want = [a, o, np.where(o, x, y), xi, hb, i.astype(np.float32) + lt.astype(np.float32)]
        for name, got, w in zip(["and", "or", "where", "cast_i64", "cast_f16", "cast_sum"], res, want):
            same = np.array_equal(got, w, equal_nan=True) and got.dtype == w.dtype
            print(f"{'ok' if same else 'FAIL'} {name}: {got[:4]} want {w[:4]}")
            ok &= same
    elif kind == "gather":
        table, ids, dy = args
        valid = (ids >= -5) & (ids < 5)
        wrapped = np.where(ids < 0, ids + 5, ids)
        emb = np.where(valid[..., None], table[np.where(valid, wrapped, 0)], 0).astype(np.float32)
        grad = np.zeros((5, 3), np.float32)
        np.add.at(grad, wrapped[valid], dy[valid])
        ok &= check("gather", res[0], emb, 0)
        ok &= check("gather_grad", res[1], grad, 0)
    elif kind == "batch_norm":
        x, w, b = a64
        n, p = x.shape[0], x.shape[2] * x.shape[3]
        c = lambda v: v.reshape(1, 3, 1, 1)
        mean = x.mean(axis=(0, 2, 3))
        var = ((x - c(mean)) ** 2).mean(axis=(0, 2, 3))
        # Every float32 sum has at most P + N + 8 roundings in its path (a
        # row's P terms, N images, the products and divisions), each within
        # 2^-24 of the magnitudes summed: |x| for the mean, and for the
        # variance the squares about image 0's mean m_0, the shift the
        # combination takes (sum (x - m_0)^2 = sum M2_n + P sum (m_n - m_0)^2),
        # twice over for the variance between images, sum e^2 - (sum e)^2 / N,
        # whose second term is at most its first.
        f32 = 2.0 ** -24
        m0 = x[0].mean(axis=(1, 2))
        scale = (p + n + 8) * f32
        mean_bound = scale * np.abs(x).mean(axis=(0, 2, 3))
        var_bound = scale * ((x - c(m0)) ** 2).mean(axis=(0, 2, 3)) * 2
        gain = w / np.sqrt(var + 1e-5)
        y = (x - c(mean)) * c(gain) + c(b)
        y_bound = c(np.abs(gain)) * (c(mean_bound) + np.abs(x - c(mean)) * c(var_bound / (2 * (var + 1e-5)))) \
            + 4 * f32 * (np.abs(y) + np.abs(c(b)) + np.abs(x) * c(np.abs(gain)))
        ok &= check("batch_norm mean", res[1].reshape(3), mean, mean_bound)
        ok &= check("batch_norm var", res[2].reshape(3), var, var_bound)
        ok &= check("batch_norm", res[0], y, y_bound)
    elif kind == "normalize":
        x, g = (a.reshape(4, 60) for a in a64[:2])
        n = 60
        d = x - x.mean(axis=1, keepdims=True)
        rstd = 1 / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5)
        y = d * rstd
        dx = rstd * (g - g.mean(axis=1, keepdims=True) - y * (g * y).mean(axis=1, keepdims=True))
        f32 = 2.0 ** -24
        ok &= check("normalize", res[0].reshape(4, 60), y,
                    2 * n * f32 * (rstd * np.abs(x).max() + np.abs(y)))
        ok &= check("normalize_grad", res[1].reshape(4, 60), dx,
                    4 * n * f32 * rstd * np.abs(g).max() * (1 + np.abs(y)))
        # RMS: the same bounds, with x itself in place of the centred values.
        rrms = 1 / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5)
        yr = x * rrms
        dxr = rrms * (g - yr * (g * yr).mean(axis=1, keepdims=True))
        ok &= check("rms_normalize", res[2].reshape(4, 60), yr,
                    2 * n * f32 * (rrms * np.abs(x).max() + np.abs(yr)))
        ok &= check("rms_normalize_grad", res[3].reshape(4, 60), dxr,
                    4 * n * f32 * rrms * np.abs(g).max() * (1 + np.abs(yr)))
        # The affine in the same float32 pass: y's bound times |w|, plus the
        # product's and the sum's roundings.
        w, b = (a.reshape(1, 60) for a in a64[2:])
        for name, k, yn, inv, bias in (("layer_norm", 4, y, rstd, b), ("rms_layer_norm", 5, yr, rrms, 0 * b)):
            want = yn * w + bias
            bound = (2 * n * f32 * (inv * np.abs(x).max() + np.abs(yn)) * np.abs(w) +
                     2 * f32 * (np.abs(yn * w) + np.abs(want)))
            ok &= check(name, res[k].reshape(4, 60), want, bound)
    elif kind == "softmax":
        x, z = a64
        e = np.exp(x - x.max(axis=1, keepdims=True))
        sm = e / e.sum(axis=1, keepdims=True)
        zm = z - z.max(axis=1, keepdims=True)
        ls = zm - np.log(np.exp(zm).sum(axis=1, keepdims=True))
        f32 = 2.0 ** -24
        ok &= check("softmax", res[0], sm,
                    u * sm + (np.abs(x - x.max(axis=1, keepdims=True)).max() + 37 + 8) * f32 * sm + sub)
        ok &= check("log_softmax", res[1], ls,
                    u * np.abs(ls) + (np.abs(zm).max() + 5 + 8) * f32 * (1 + np.abs(ls)) + sub)
    elif kind == "columns":
        x, y, z, w = a64
        split = (128 + 32) * F32_EPS
        ax, axy = np.abs(x).sum(axis=(0, 1)), np.abs(x * y).sum(axis=(0, 1))
        ok &= check("column_sum", res[0], x.sum(axis=(0, 1)), split * ax)
        ok &= check("column_product_sum", res[1], (x * y).sum(axis=(0, 1)), (split + F32_EPS) * axy)
        ok &= check("column_max", res[2], y.max(axis=(0, 1)), 0 * y[0, 0])
        ok &= check("column_mean", res[3].reshape(24), y.mean(axis=(0, 1)),
                    split * np.abs(y).mean(axis=(0, 1)))
        ok &= check("column_sum_short", res[4], z.sum(axis=0), 9 * F32_EPS * np.abs(z).sum(axis=0))
        outer = (4096 + 16) * F32_EPS  # rows of 4096, then 16 partial sums
        ok &= check("channel_sum", res[5], w.sum(axis=(0, 2)), outer * np.abs(w).sum(axis=(0, 2)))
        ok &= check("channel_mean_square", res[6].reshape(6), (w * w).mean(axis=(0, 2)),
                    (outer + F32_EPS) * (w * w).mean(axis=(0, 2)))
    elif kind == "unary":
        p, s = a64
        from math import erf
        want = [np.exp(s), np.log(p), np.sqrt(p), 1.0 / s, np.abs(s),
                np.array([erf(v) for v in s])]
        for name, got, v in zip(["exp", "log", "sqrt", "reciprocal", "abs", "erf"], res, want):
            ok &= check(name, got, v, 4 * u * np.abs(v) + 1e-30)
    elif kind == "chain":
        # otc rounds each 16-bit op result, fused or not, as r() here. The
        # two differ only where float32 arithmetic puts b or c across a
        # rounding boundary from float64 (x * y is exact): one unit, 2u|.|,
        # carried through sigmoid' <= 1/4; then the final rounding.
        x, y, z, w, q = a64
        r = lambda z: round_to(z, t).astype(np.float64)
        b = r(np.tanh(r(x * y)))
        c = r(b + x)
        v = r(1.0 / (1.0 + np.exp(-c)))
        flips = 2 * u * (np.abs(b) + np.abs(c)) / 4
        ok &= check("chain", res[0], v, u * np.abs(v) + flips + 8 * F32_EPS + sub)
        # Vectorised on CUDA: a product of two 16-bit values is exact in
        # float32, so only tanh's rounding can flip (one unit, 2u|tanh|,
        # times the other factor), then the final rounding.
        for name, got, a, m in (("chain_vector8", res[1], z, r(w)), ("chain_vector4", res[2], q, q)):
            th = np.tanh(a)
            v = r(r(th) * m)
            ok &= check(name, got, v, u * np.abs(v) + 2 * u * np.abs(th * m) + sub)
    elif kind == "rows":
        x, logits, labels = a64[0], a64[1], args[2]
        s = x.sum(axis=1)
        ok &= check("reduce_sum", res[0], s, u * np.abs(s) + 100 * F32_EPS * np.abs(x).sum(axis=1) + sub)
        m = logits.max(axis=1, keepdims=True)
        lse = np.log(np.exp(logits - m).sum(axis=1)) + m[:, 0]
        loss = np.mean(lse - logits[np.arange(6), labels])
        # exp/log in float32 carry a few ulps each over 37 terms per row.
        f32 = 64 * F32_EPS * (np.abs(lse).max() + 1)
        ok &= check("softmax_cross_entropy", res[1], loss, u * abs(loss) + f32 + sub)
        y = a64[3]
        s = y.sum(axis=1)
        ok &= check("reduce_sum_64", res[2], s, u * np.abs(s) + 100 * F32_EPS * np.abs(y).sum(axis=1) + sub)
        # float32's exp (a few ulps) and its sum of 64 terms, rounded once.
        e = np.exp(y - y.max(axis=1, keepdims=True))
        sm = e / e.sum(axis=1, keepdims=True)
        ok &= check("softmax_64", res[3], sm, u * sm + 80 * F32_EPS * sm + sub)
    elif kind == "cross_entropy":
        x, seed = a64[0], float(args[2])
        y = args[1]
        kept = y != -1
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        p = e / e.sum(axis=1, keepdims=True)
        lse = np.log(e.sum(axis=1)) + m[:, 0]
        rows = np.where(kept, lse - x[np.arange(6), np.where(kept, y, 0)], 0)
        loss = rows.sum() / kept.sum()
        onehot = (np.arange(37)[None, :] == y[:, None]).astype(np.float64)
        scale = np.where(kept, seed / kept.sum(), 0)[:, None]
        grad = scale * (p - onehot)
        f32 = 64 * F32_EPS * (np.abs(lse).max() + 1)
        ok &= check("loss", res[0], loss, F32_EPS * abs(loss) + f32)
        soft = (np.abs(x - m).max() + 37 + 8) * F32_EPS * p
        ok &= check("logits_grad", res[1], grad, scale * soft + 4 * F32_EPS * np.abs(grad) + 1e-30)
    elif kind == "conv":
        for i, (xs, ws, s_, p_, d_, g_) in enumerate(CONV_GEOMETRIES):
            x, w, dy = a64[3 * i:3 * i + 3]
            values, terms = conv_reference(x, w, dy, s_, p_, d_, g_)
            oh, ow = dy.shape[2:]
            counts = [ws[1] * ws[2] * ws[3], ws[0] // g_ * ws[2] * ws[3], xs[0] * oh * ow]
            for j, name in enumerate(["conv", "conv_data_grad", "conv_filter_grad"]):
                v = values[j]
                ok &= check(f"{name}{'ab'[i]}", res[3 * i + j].reshape(v.shape), v,
                            u * np.abs(v) + (counts[j] + 1) * F32_EPS * terms[j] + sub)
    elif kind == "epilogue":
        x, w, b, g = a64
        y = x @ w.T + b
        dw, db = x.T @ g, g.sum(axis=0)
        dw2, db2 = g.T @ x, g.sum(axis=0)
        ax, aw, ag = np.abs(x), np.abs(w), np.abs(g)
        bound = lambda v, uo, n, terms: uo * np.abs(v) + (n + 1) * F32_EPS * terms + sub
        ok &= check("gemm_bias", res[0], y, bound(y, u, 40, ax @ aw.T + np.abs(b)))
        ok &= check("weight_grad", res[1], dw, bound(dw, F32_EPS, 64, ax.T @ ag))
        ok &= check("bias_grad", res[2], db, bound(db, F32_EPS, 64, ag.sum(axis=0)))
        ok &= check("weight_grad_t", res[3], dw2, bound(dw2, u, 64, ag.T @ ax))
        ok &= check("bias_grad_t", res[4], db2, bound(db2, u, 64, ag.sum(axis=0)))
        # The GELU of the preactivation as stored (PyTorch's linear, then
        # gelu; what selective recompute computes again from it): tanhf's
        # few ulps, rounded once. cuBLASLt's fused GELU_AUX takes the GELU
        # of the float32 sum instead (|gelu'| < 1.13 carries the sum's
        # error): each element within one of the two.
        gelu = lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))
        for i, (pre, terms) in enumerate([(y, ax @ aw.T + np.abs(b)), (x @ w.T, ax @ aw.T)]):
            s = 41 * F32_EPS * terms
            got, p = res[5 + 2 * i].astype(np.float64), res[6 + 2 * i].astype(np.float64)
            stored = np.abs(got - gelu(p)) - (u * np.abs(gelu(p)) + 8 * F32_EPS * np.abs(p) + sub)
            summed = np.abs(got - gelu(pre)) - (u * np.abs(gelu(pre)) + 1.13 * s +
                                                8 * F32_EPS * np.abs(pre) + sub)
            worst = float(np.max(np.minimum(stored, summed)))
            print(f"{'ok' if worst <= 0 else 'FAIL'} gemm_gelu{i}: of the stored "
                  f"preactivation {float(np.max(stored)):.3g}, of the sum "
                  f"{float(np.max(summed)):.3g} (max err - bound)")
            ok &= worst <= 0
            ok &= check(f"preactivation{i}", res[6 + 2 * i], pre, u * np.abs(pre) + s + sub)
        # The product times gelu'(p), p the preactivation the kernel stored:
        # the product's sum error times |gelu'| < 1.13, tanhf's few ulps.
        p = res[6].astype(np.float64)
        k, a = np.sqrt(2 / np.pi), 0.044715
        th = np.tanh(k * (p + a * p ** 3))
        d = 0.5 * (1 + th) + 0.5 * p * (1 - th * th) * k * (1 + 3 * a * p * p)
        prod = x @ w.T
        v = prod * d
        ok &= check("gemm_dgelu", res[9], v, u * np.abs(v) + 1.13 * 41 * F32_EPS * (ax @ aw.T)
                    + 8 * F32_EPS * np.abs(prod) + sub)
    else:
        a, b = a64
        c = a @ b
        # Products of 16-bit floats are exact in float32; the sum of 40 rounds.
        terms = np.abs(a) @ np.abs(b)
        ok &= check("matmul", res[0], c, u * np.abs(c) + 40 * F32_EPS * terms + sub)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
