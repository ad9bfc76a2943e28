"""numpy transcriptions of ggml's published reference quantizers that the
`gguf` package lacks: quantize_row_q8_1_ref, quantize_row_q8_K_ref and
dequantize_row_q8_K, and the K-quant reference quantizers
quantize_row_q4_K_ref / q5_K / q6_K with their helpers make_qkx2_quants
and make_qx_quants.  Used as independent oracles and as the RMSE
yardstick for Foundry's own K-quant scale search
(tests/gen/gen_quant_vectors.py).

Every expression is evaluated in float32 in the C code's order: the
element loops run sequentially over the values of a block, vectorised
across blocks only (axis 0), so sums accumulate exactly as the C loops
do (no pairwise summation).  Arrays are (blocks, values).
"""
import numpy as np

F = np.float32
QK_K = 256


def nearest_int(v):
    """ggml's nearest_int: round half to even via the 1.5 * 2^23 trick."""
    val = (np.asarray(v, dtype=F) + F(12582912.0)).astype(F)
    i = val.view(np.int32)
    return (i & 0x007FFFFF) - 0x00400000


def f16(v):
    return np.asarray(v, dtype=F).astype(np.float16)


def f16_bytes(v):
    return f16(v).reshape(-1, 1).view(np.uint8)


def f16_to_f32(h):
    return np.asarray(h, dtype=np.float16).astype(F)


# ----------------------------------------------------------------- Q8_1


def quantize_q8_1(x):
    """x: (nb, 32) float32 -> (nb, 36) uint8."""
    x = np.asarray(x, dtype=F)
    amax = np.zeros(x.shape[0], F)
    for j in range(32):
        amax = np.maximum(amax, np.abs(x[:, j]))
    d = (amax / F(127)).astype(F)
    with np.errstate(divide="ignore"):
        idd = np.where(d != 0, F(1) / np.where(d != 0, d, F(1)), F(0)).astype(F)
    v = (x * idd[:, None]).astype(F)
    q = (np.sign(v) * np.floor(np.abs(v) + F(0.5))).astype(np.int8)  # roundf
    s = (q.astype(np.int32).sum(axis=1).astype(F) * d).astype(F)
    return np.concatenate([f16_bytes(d), f16_bytes(s), q.view(np.uint8)], axis=1)


def dequantize_q8_1(raw):
    raw = np.asarray(raw, dtype=np.uint8)
    d = raw[:, 0:2].copy().view(np.float16).astype(F)
    q = raw[:, 4:36].copy().view(np.int8).astype(F)
    return (q * d).astype(F)


# ----------------------------------------------------------------- Q8_K


def quantize_q8_k(x):
    """x: (nb, 256) float32 -> (nb, 292) uint8 (d f32, qs[256], bsums[16])."""
    x = np.asarray(x, dtype=F)
    nb = x.shape[0]
    amax = np.zeros(nb, F)
    mx = np.zeros(nb, F)
    for j in range(QK_K):
        ax = np.abs(x[:, j])
        upd = ax > amax
        amax = np.where(upd, ax, amax)
        mx = np.where(upd, x[:, j], mx)
    zero = amax == 0
    safe = np.where(zero, F(1), mx)
    iscale = (F(-127.0) / safe).astype(F)
    v = nearest_int((iscale[:, None] * x).astype(F))
    q = np.minimum(127, v).astype(np.int8)
    q[zero] = 0
    bsums = q.astype(np.int32).reshape(nb, 16, 16).sum(axis=2).astype(np.int16)
    d = (F(1) / iscale).astype(F)
    d[zero] = 0
    return np.concatenate([d.reshape(-1, 1).view(np.uint8), q.view(np.uint8),
                           bsums.view(np.uint8)], axis=1)


def dequantize_q8_k(raw):
    raw = np.asarray(raw, dtype=np.uint8)
    d = raw[:, 0:4].copy().view(F)
    q = raw[:, 4:260].copy().view(np.int8).astype(F)
    return (d * q).astype(F)


# ------------------------------------------------------ K-quant helpers


def make_qkx2_quants(nmax, x, w, rmin, rdelta, nstep):
    """x, w: (B, n).  Returns scale (B,), the_min (B,), L (B, n) uint8."""
    x = np.asarray(x, F)
    w = np.asarray(w, F)
    B, n = x.shape
    mn = x[:, 0].copy()
    mx = x[:, 0].copy()
    sum_w = w[:, 0].copy()
    sum_x = (sum_w * x[:, 0]).astype(F)
    for i in range(1, n):
        mn = np.where(x[:, i] < mn, x[:, i], mn)
        mx = np.where(x[:, i] > mx, x[:, i], mx)
        sum_w = (sum_w + w[:, i]).astype(F)
        sum_x = (sum_x + (w[:, i] * x[:, i]).astype(F)).astype(F)
    mn = np.where(mn > 0, F(0), mn).astype(F)
    flat = mx == mn
    rng = np.where(flat, F(1), (mx - mn).astype(F)).astype(F)
    iscale = (F(nmax) / rng).astype(F)
    scale = (F(1) / iscale).astype(F)
    L = np.zeros((B, n), np.int32)
    best = np.zeros(B, F)
    for i in range(n):
        li = nearest_int((iscale * (x[:, i] - mn).astype(F)).astype(F))
        L[:, i] = np.clip(li, 0, nmax)
        diff = ((scale * L[:, i].astype(F)).astype(F) + mn).astype(F)
        diff = (diff - x[:, i]).astype(F)
        diff = (diff * diff).astype(F)
        best = (best + (w[:, i] * diff).astype(F)).astype(F)
    the_min = mn.copy()
    for s in range(nstep + 1):
        isc = (((F(rmin) + (F(rdelta) * F(s)).astype(F)).astype(F) + F(nmax))
               .astype(F) / rng).astype(F)
        sl = np.zeros(B, F)
        sl2 = np.zeros(B, F)
        sxl = np.zeros(B, F)
        La = np.zeros((B, n), np.int32)
        for i in range(n):
            li = np.clip(nearest_int((isc * (x[:, i] - mn).astype(F)).astype(F)),
                         0, nmax)
            La[:, i] = li
            lf = li.astype(F)
            wl = (w[:, i] * lf).astype(F)
            sl = (sl + wl).astype(F)
            sl2 = (sl2 + (wl * lf).astype(F)).astype(F)
            sxl = (sxl + (wl * x[:, i]).astype(F)).astype(F)
        D = ((sum_w * sl2).astype(F) - (sl * sl).astype(F)).astype(F)
        ok = D > 0
        Ds = np.where(ok, D, F(1))
        ts = (((sum_w * sxl).astype(F) - (sum_x * sl).astype(F)).astype(F)
              / Ds).astype(F)
        tm = (((sl2 * sum_x).astype(F) - (sl * sxl).astype(F)).astype(F)
              / Ds).astype(F)
        pos = tm > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            ts = np.where(pos, (sxl / sl2).astype(F), ts).astype(F)
        tm = np.where(pos, F(0), tm).astype(F)
        cur = np.zeros(B, F)
        for i in range(n):
            diff = ((ts * La[:, i].astype(F)).astype(F) + tm).astype(F)
            diff = (diff - x[:, i]).astype(F)
            cur = (cur + (w[:, i] * (diff * diff).astype(F)).astype(F)).astype(F)
        take = ok & (cur < best)
        L = np.where(take[:, None], La, L)
        best = np.where(take, cur, best)
        scale = np.where(take, ts, scale)
        the_min = np.where(take, tm, the_min)
    # the flat case: L = 0, scale 0, the_min = -min
    L[flat] = 0
    scale = np.where(flat, F(0), scale).astype(F)
    the_min = np.where(flat, mn, the_min).astype(F)
    return scale, (-the_min).astype(F), L


def make_qx_quants_rmse1(nmax, x):
    """make_qx_quants(n, nmax, x, L, rmse_type=1, NULL).  x: (B, n)."""
    x = np.asarray(x, F)
    B, n = x.shape
    amax = np.zeros(B, F)
    mx = np.zeros(B, F)
    for i in range(n):
        ax = np.abs(x[:, i])
        upd = ax > amax
        amax = np.where(upd, ax, amax)
        mx = np.where(upd, x[:, i], mx)
    zero = amax < F(1e-15)
    safe = np.where(zero, F(1), mx)

    def pass_(iscale):
        slx = np.zeros(B, F)
        sl2 = np.zeros(B, F)
        Lc = np.zeros((B, n), np.int32)
        for i in range(n):
            li = np.clip(nearest_int((iscale * x[:, i]).astype(F)), -nmax, nmax - 1)
            Lc[:, i] = li + nmax
            lf = li.astype(F)
            wv = (x[:, i] * x[:, i]).astype(F)
            slx = (slx + ((wv * x[:, i]).astype(F) * lf).astype(F)).astype(F)
            sl2 = (sl2 + ((wv * lf).astype(F) * lf).astype(F)).astype(F)
        return slx, sl2, Lc

    iscale = (F(-nmax) / safe).astype(F)
    slx, sl2, L = pass_(iscale)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(sl2 != 0, (slx / sl2).astype(F), F(0)).astype(F)
    best = (scale * slx).astype(F)
    for s in range(-9, 10):
        if s == 0:
            continue
        isc = (-(F(nmax) + (F(0.1) * F(s)).astype(F)).astype(F) / safe).astype(F)
        slx, sl2, Lc = pass_(isc)
        take = (sl2 > 0) & ((slx * slx).astype(F) > (best * sl2).astype(F))
        L = np.where(take[:, None], Lc, L)
        with np.errstate(divide="ignore", invalid="ignore"):
            ns = (slx / sl2).astype(F)
        scale = np.where(take, ns, scale).astype(F)
        best = np.where(take, (scale * slx).astype(F), best).astype(F)
    L[zero] = 0
    scale = np.where(zero, F(0), scale).astype(F)
    return scale, L


def _pack_scale_min_k4(ls, lm):
    """ls, lm: (nb, 8) ints 0..63 -> (nb, 12) uint8."""
    nb = ls.shape[0]
    s = np.zeros((nb, 12), np.uint8)
    for j in range(8):
        if j < 4:
            s[:, j] = ls[:, j]
            s[:, j + 4] = lm[:, j]
        else:
            s[:, j + 4] = (ls[:, j] & 0xF) | ((lm[:, j] & 0xF) << 4)
            s[:, j - 4] |= ((ls[:, j] >> 4) << 6).astype(np.uint8)
            s[:, j] |= ((lm[:, j] >> 4) << 6).astype(np.uint8)
    return s


def _get_scale_min_k4(j, q):
    if j < 4:
        return q[:, j] & 63, q[:, j + 4] & 63
    return ((q[:, j + 4] & 0xF) | ((q[:, j - 4] >> 6) << 4),
            (q[:, j + 4] >> 4) | ((q[:, j] >> 6) << 4))


def _quantize_k4(x, nmax, rmin, nstep):
    """The shared body of quantize_row_q4_K_ref / q5_K: returns d (f16),
    dmin (f16), packed scales (nb, 12) and levels L (nb, 256)."""
    x = np.asarray(x, F).reshape(-1, QK_K)
    nb = x.shape[0]
    scales = np.zeros((nb, 8), F)
    mins = np.zeros((nb, 8), F)
    L = np.zeros((nb, QK_K), np.int32)
    for j in range(8):
        xs = x[:, 32 * j:32 * j + 32]
        sx2 = np.zeros(nb, F)
        for l in range(32):
            sx2 = (sx2 + (xs[:, l] * xs[:, l]).astype(F)).astype(F)
        av = np.sqrt((sx2 / F(32)).astype(F)).astype(F)
        w = (av[:, None] + np.abs(xs)).astype(F)
        sc, mn, Lj = make_qkx2_quants(nmax, xs, w, rmin, 0.1, nstep)
        scales[:, j] = sc
        mins[:, j] = mn
        L[:, 32 * j:32 * j + 32] = Lj
    max_scale = np.zeros(nb, F)
    max_min = np.zeros(nb, F)
    for j in range(8):
        max_scale = np.where(scales[:, j] > max_scale, scales[:, j], max_scale)
        max_min = np.where(mins[:, j] > max_min, mins[:, j], max_min)
    with np.errstate(divide="ignore"):
        inv_s = np.where(max_scale > 0, (F(63) / np.where(max_scale > 0, max_scale, F(1))).astype(F), F(0)).astype(F)
        inv_m = np.where(max_min > 0, (F(63) / np.where(max_min > 0, max_min, F(1))).astype(F), F(0)).astype(F)
    ls = np.minimum(63, nearest_int((inv_s[:, None] * scales).astype(F)) & 0xFF)
    lm = np.minimum(63, nearest_int((inv_m[:, None] * mins).astype(F)) & 0xFF)
    packed = _pack_scale_min_k4(ls.astype(np.uint8), lm.astype(np.uint8))
    d = f16((max_scale / F(63)).astype(F))
    dmin = f16((max_min / F(63)).astype(F))
    df = d.astype(F)
    dmf = dmin.astype(F)
    for j in range(8):
        sc, m = _get_scale_min_k4(j, packed)
        dd = (df * sc.astype(F)).astype(F)
        dm = (dmf * m.astype(F)).astype(F)
        live = dd != 0
        dds = np.where(live, dd, F(1))
        xs = x[:, 32 * j:32 * j + 32]
        lq = np.clip(nearest_int(((xs + dm[:, None]).astype(F) / dds[:, None]).astype(F)), 0, nmax)
        L[:, 32 * j:32 * j + 32] = np.where(live[:, None], lq, L[:, 32 * j:32 * j + 32])
    return d, dmin, packed, L


def quantize_q4_k(x):
    d, dmin, packed, L = _quantize_k4(x, 15, -1.0, 20)
    nb = L.shape[0]
    qs = np.zeros((nb, 128), np.uint8)
    for g in range(4):
        qs[:, 32 * g:32 * g + 32] = (L[:, 64 * g:64 * g + 32] |
                                     (L[:, 64 * g + 32:64 * g + 64] << 4))
    return np.concatenate([d.reshape(-1, 1).view(np.uint8),
                           dmin.reshape(-1, 1).view(np.uint8), packed, qs], axis=1)


def quantize_q5_k(x):
    d, dmin, packed, L = _quantize_k4(x, 31, -0.5, 15)
    nb = L.shape[0]
    qh = np.zeros((nb, 32), np.uint8)
    ql = np.zeros((nb, 128), np.uint8)
    for g in range(4):
        l1 = L[:, 64 * g:64 * g + 32].copy()
        l2 = L[:, 64 * g + 32:64 * g + 64].copy()
        qh |= np.where(l1 > 15, 1 << (2 * g), 0).astype(np.uint8)
        qh |= np.where(l2 > 15, 2 << (2 * g), 0).astype(np.uint8)
        l1 = np.where(l1 > 15, l1 - 16, l1)
        l2 = np.where(l2 > 15, l2 - 16, l2)
        ql[:, 32 * g:32 * g + 32] = l1 | (l2 << 4)
    return np.concatenate([d.reshape(-1, 1).view(np.uint8),
                           dmin.reshape(-1, 1).view(np.uint8), packed, qh, ql], axis=1)


def quantize_q6_k(x):
    x = np.asarray(x, F).reshape(-1, QK_K)
    nb = x.shape[0]
    scales = np.zeros((nb, 16), F)
    L = np.zeros((nb, QK_K), np.int32)
    for ib in range(16):
        sc, Lb = make_qx_quants_rmse1(32, x[:, 16 * ib:16 * ib + 16])
        scales[:, ib] = sc
        L[:, 16 * ib:16 * ib + 16] = Lb
    max_scale = np.zeros(nb, F)
    max_abs = np.zeros(nb, F)
    for ib in range(16):
        a = np.abs(scales[:, ib])
        upd = a > max_abs
        max_abs = np.where(upd, a, max_abs)
        max_scale = np.where(upd, scales[:, ib], max_scale)
    zero = max_abs < F(1e-15)
    safe = np.where(zero, F(1), max_scale)
    iscale = (F(-128) / safe).astype(F)
    d = f16((F(1) / iscale).astype(F))
    isc = np.minimum(127, nearest_int((iscale[:, None] * scales).astype(F))).astype(np.int8)
    df = d.astype(F)
    for j in range(16):
        dd = (df * isc[:, j].astype(F)).astype(F)
        live = dd != 0
        dds = np.where(live, dd, F(1))
        lq = np.clip(nearest_int((x[:, 16 * j:16 * j + 16] / dds[:, None]).astype(F)), -32, 31) + 32
        L[:, 16 * j:16 * j + 16] = np.where(live[:, None], lq, L[:, 16 * j:16 * j + 16])
    ql = np.zeros((nb, 128), np.uint8)
    qh = np.zeros((nb, 64), np.uint8)
    for h in range(2):
        b = 128 * h
        for l in range(32):
            q1, q2, q3, q4 = (L[:, b + l], L[:, b + l + 32], L[:, b + l + 64], L[:, b + l + 96])
            ql[:, 64 * h + l] = (q1 & 0xF) | ((q3 & 0xF) << 4)
            ql[:, 64 * h + l + 32] = (q2 & 0xF) | ((q4 & 0xF) << 4)
            qh[:, 32 * h + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
    out = np.concatenate([ql, qh, isc.view(np.uint8), d.reshape(-1, 1).view(np.uint8)], axis=1)
    out[zero] = 0
    return out
