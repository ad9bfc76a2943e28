"""ftm_nn.py — the numpy references of diff_ops.py's newer families
(scan, scatter_reduce, conv, activation, spatial), beside ftm.py's for the
table ops; each follows the rules the C header states for its op."""
import math

import numpy as np

from ftm import FLOATS, cast


def _cumext(row, is_max):
    """PyTorch's cummax/cummin rule on one line: the latest position wins
    ties; a NaN is taken when seen and kept (each later NaN moves the
    index)."""
    vals = np.empty(len(row), row.dtype)
    idx = np.empty(len(row), np.int64)
    acc, at = None, 0
    for i, x in enumerate(row):
        isn = row.dtype.kind == "f" and np.isnan(x)
        if acc is None or isn or (not (row.dtype.kind == "f" and np.isnan(acc))
                                  and (x >= acc if is_max else x <= acc)):
            acc, at = x, i
        vals[i], idx[i] = acc, at
    return vals, idx


def ref_scan(op, v, dt, dim):
    """cumprod / cummax / cummin / logcumsumexp of v along dim: (values,
    indices or None, result dtype); ValueError where Foundry must fail."""
    if op == "logcumsumexp" and dt not in FLOATS:
        raise ValueError("logcumsumexp of integers")
    w = v.reshape(1) if v.ndim == 0 else v
    d = 0 if v.ndim == 0 else dim
    fl = dt in FLOATS
    x = w.astype(np.float64) if fl else w.astype(np.int64)
    m = np.moveaxis(x, d, -1)
    idx = None
    with np.errstate(all="ignore"):
        if op == "cumprod":
            r = np.cumprod(m, axis=-1)
            od = dt if fl else "i64"
        elif op == "logcumsumexp":
            r = np.logaddexp.accumulate(m, axis=-1) if m.size else m
            od = dt
        elif m.size == 0:
            r, idx = m.copy(), np.zeros(v.shape, np.int64)
            od = dt
        else:
            flat = m.reshape(-1, m.shape[-1])
            r = np.empty_like(flat)
            idx = np.empty(flat.shape, np.int64)
            for k in range(flat.shape[0]):
                r[k], idx[k] = _cumext(flat[k], op == "cummax")
            r, idx = r.reshape(m.shape), idx.reshape(m.shape)
            idx = np.moveaxis(idx, -1, d).reshape(v.shape)
            od = dt
    r = np.moveaxis(r, -1, d).reshape(v.shape)
    return cast(r, od), idx, od
def ref_conv(x, w, b, stride, pad, dil, groups, transpose=False, opad=None):
    """Convolution (or transposed convolution) over the last nd dims of
    batched x, in float64, by the definitions: a convolution reads x at
    o*s - p + k*d; a transposed one adds x[i] * w[k] at i*s - p + k*d
    (output size (in-1)*s - 2p + d(k-1) + opad + 1).  Weights are
    [C_out, C_in/g, *k] (conv) or [C_in, C_out/g, *k] (transposed)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    nd = x.ndim - 2
    n, c = x.shape[:2]
    k = w.shape[2:]
    cg = c // groups
    if not transpose:
        oc = w.shape[0]
        ocg = oc // groups
        out = [(x.shape[2 + i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1)
               // stride[i] + 1 for i in range(nd)]
        xp = np.zeros((n, c) + tuple(x.shape[2 + i] + 2 * pad[i] + stride[i]
                                     + dil[i] * k[i] for i in range(nd)))
        xp[(slice(None),) * 2 + tuple(slice(pad[i], pad[i] + x.shape[2 + i])
                                      for i in range(nd))] = x
        y = np.zeros((n, oc) + tuple(out))
        for kk in np.ndindex(*k):
            sl = tuple(slice(kk[i] * dil[i],
                             kk[i] * dil[i] + (out[i] - 1) * stride[i] + 1,
                             stride[i]) for i in range(nd))
            for g in range(groups):
                xs = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
                wk = w[(slice(g * ocg, (g + 1) * ocg), slice(None)) + kk]
                y[:, g * ocg:(g + 1) * ocg] += np.einsum("nc...,oc->no...",
                                                         xs, wk)
    else:
        ocg = w.shape[1]
        oc = ocg * groups
        out = [(x.shape[2 + i] - 1) * stride[i] - 2 * pad[i] +
               dil[i] * (k[i] - 1) + opad[i] + 1 for i in range(nd)]
        full = [(x.shape[2 + i] - 1) * stride[i] + dil[i] * (k[i] - 1) + 1 +
                opad[i] for i in range(nd)]
        yp = np.zeros((n, oc) + tuple(full))
        for kk in np.ndindex(*k):
            sl = tuple(slice(kk[i] * dil[i],
                             kk[i] * dil[i] + (x.shape[2 + i] - 1) *
                             stride[i] + 1, stride[i]) for i in range(nd))
            for g in range(groups):
                xs = x[:, g * cg:(g + 1) * cg]
                wk = w[(slice(g * cg, (g + 1) * cg), slice(None)) + kk]
                yp[(slice(None), slice(g * ocg, (g + 1) * ocg)) + sl] += \
                    np.einsum("nc...,co->no...", xs, wk)
        y = yp[(slice(None),) * 2 + tuple(slice(pad[i], pad[i] + out[i])
                                          for i in range(nd))]
    if b is not None:
        y = y + b.astype(np.float64).reshape((oc,) + (1,) * nd)
    return y
# ------------------------------------------------------------ activations
# The activations of nn_functional.h (elementwise, float dtypes only),
# with their parameters: name -> (C function, parameter draws).
ACT = {"elu": ((1.0, 0.5, -0.3),), "selu": (), "celu": ((1.0, 0.5, 2.0),),
       "relu6": (), "hardtanh": ((-1.0, -0.5), (1.0, 2.0)),
       "hardsigmoid": (), "hardswish": (), "mish": (), "softsign": (),
       "logsigmoid": (), "tanhshrink": (), "softshrink": ((0.5, 0.0, 2.0),),
       "hardshrink": ((0.5, -1.0, 2.0),), "threshold": ((0.0, 1.5), (-2.0, 7.0)),
       "rrelu": ((0.125, 0.1), (0.3, 0.5))}

SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def ref_activation(op, x, dt, ps):
    """The activation in f64 of x (already of dtype dt), as documented in
    nn_functional.h; raises ValueError for a non-float dt."""
    if dt not in FLOATS:
        raise ValueError(f"{op} of {dt}")
    z = x.astype(np.float64)
    with np.errstate(all="ignore"):
        sp = lambda v, t: np.where(v > t, v, np.logaddexp(0, v))  # noqa
        elu = lambda v, a: np.where(v > 0, v, a * np.expm1(np.minimum(v, 0)))  # noqa
        hsig = lambda v: np.clip(v + 3, 0, 6) / 6  # noqa
        r = {"elu": lambda: elu(z, ps[0]),
             "selu": lambda: SELU_S * elu(z, SELU_A),
             "celu": lambda: np.where(z > 0, z, ps[0] * np.expm1(np.minimum(z, 0) / ps[0])),
             "relu6": lambda: np.clip(z, 0, 6),
             "hardtanh": lambda: np.clip(z, ps[0], ps[1]),
             "hardsigmoid": lambda: hsig(z),
             "hardswish": lambda: z * hsig(z),
             "mish": lambda: z * np.tanh(sp(z, 20.0)),
             "softsign": lambda: z / (1 + np.abs(z)),
             "logsigmoid": lambda: -np.logaddexp(0, -z),
             "tanhshrink": lambda: z - np.tanh(z),
             "softshrink": lambda: z - np.clip(z, -ps[0], ps[0]),
             "hardshrink": lambda: np.where(np.abs(z) <= ps[0], 0.0, z),
             "threshold": lambda: np.where(z <= ps[0], ps[1], z),
             "rrelu": lambda: np.where(z >= 0, z, z * (ps[0] + ps[1]) / 2)}[op]()
    return cast(r, dt), dt
# scatter_reduce: the identity written first when include_self is false
_SR_ID = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767),
          "i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1),
          "bool": (0, 1)}


def ref_scatter_reduce(xv, d, iv, sv, kind, include_self, dt):
    """tm_scatter_reduce on numpy values, step by step in the kernel's
    order (row-major over the index, one rounding per step), or None
    where the library must fail (mean of bool).  Returns (want, rtol):
    exact (mean divides in f64 and rounds once, as the library)."""
    if kind == "mean" and dt == "bool":
        return None, 0.0
    nd = xv.ndim
    want = xv.copy()
    places = []
    for pos in np.ndindex(*iv.shape):
        tgt = list(pos)
        if nd:
            tgt[d % nd] = int(iv[pos]) % xv.shape[d % nd]
        places.append((tuple(tgt), pos))
    if not include_self:
        for tgt, _ in places:
            if kind in ("sum", "mean"):
                v = 0
            elif kind == "prod":
                v = 1
            elif dt in FLOATS:
                v = -math.inf if kind == "amax" else math.inf
            else:
                v = _SR_ID[dt][0 if kind == "amax" else 1]
            want[tgt] = cast(np.array(v), dt) if dt in FLOATS else v
    count = {}
    for tgt, pos in places:
        a, b = want[tgt], sv[pos]
        count[tgt] = count.get(tgt, 1 if include_self else 0) + 1
        if dt in FLOATS:
            x, y = np.float64(a), np.float64(b)
            if kind in ("sum", "mean"):
                r = x + y
            elif kind == "prod":
                r = x * y
            elif math.isnan(x) or math.isnan(y):
                r = x if math.isnan(x) else y
            else:
                r = max(x, y) if kind == "amax" else min(x, y)
            want[tgt] = cast(np.array(r), dt)
            continue
        x, y = int(a), int(b)
        if dt == "bool":
            r = {"sum": x or y, "prod": x and y, "amax": x or y,
                 "amin": x and y}[kind]
            want[tgt] = bool(r)
            continue
        if kind in ("sum", "mean"):
            r = x + y
        elif kind == "prod":
            r = x * y
        else:
            r = max(x, y) if kind == "amax" else min(x, y)
        want[tgt] = cast(np.array(r).astype(np.int64)
                         if -2**63 <= r < 2**63 else
                         np.array(r % 2**64 - (2**64 if r % 2**64 >= 2**63
                                               else 0)), dt)
    if kind != "mean":
        return want, 0.0
    for tgt, c in count.items():
        if dt in FLOATS:
            want[tgt] = cast(np.array(np.float64(want[tgt]) / c), dt)
        else:
            want[tgt] = int(want[tgt]) // c
    return want, 0.0
# ------------------------------------------------------ spatial ops

def ref_pad_mode(v, pad, mode):
    """torch.nn.functional.pad's reflect / replicate / circular on numpy
    (np.pad's reflect / edge / wrap, with negative amounts cropping:
    after padding for reflect and replicate, before it for circular)."""
    for i in range(len(pad) // 2):
        ax = v.ndim - 1 - i
        a, b = pad[2 * i], pad[2 * i + 1]
        n = v.shape[ax]
        if mode == "circular":
            v = np.take(v, range(max(-a, 0), n - max(-b, 0)), axis=ax)
        widths = [(0, 0)] * v.ndim
        widths[ax] = (max(a, 0), max(b, 0))
        v = np.pad(v, widths, {"reflect": "reflect", "replicate": "edge",
                               "circular": "wrap"}[mode])
        if mode != "circular":
            m = v.shape[ax]
            v = np.take(v, range(max(-a, 0), m - max(-b, 0)), axis=ax)
    return v


def ref_max_pool1d(v, k, s, p, d, ceil):
    """max_pool1d over the last dim of v (floats: NaN wins, padding
    ignored) with PyTorch's output size; (values, indices)."""
    n = v.shape[-1]
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = num // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    vals = np.zeros(v.shape[:-1] + (max(o, 0),), v.dtype)
    idx = np.zeros(vals.shape, np.int64)
    if v.size == 0:
        return vals, idx, o
    for j in range(max(o, 0)):
        taps = [t for t in (j * s - p + q * d for q in range(k))
                if 0 <= t < n]
        if not taps:  # all of a dilated window in the padding
            vals[..., j] = -np.inf if v.dtype.kind == "f" else \
                np.iinfo(v.dtype).min
            continue
        w = v[..., taps]
        if v.dtype.kind == "f":
            key = np.where(np.isnan(w), np.inf, w)
            # the first maximum, or the last NaN
            last_nan = w.shape[-1] - 1 - np.argmax(np.isnan(w)[..., ::-1],
                                                    axis=-1)
            arg = np.where(np.isnan(w).any(-1), last_nan,
                           np.argmax(key, axis=-1))
        else:
            arg = np.argmax(w, axis=-1)
        vals[..., j] = np.take_along_axis(w, arg[..., None], -1)[..., 0]
        idx[..., j] = np.asarray(taps)[arg]
    return vals, idx, o
