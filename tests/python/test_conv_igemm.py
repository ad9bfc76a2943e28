"""conv2d in F32 through the CPU's implicit-GEMM kernel (unit strides) and
its im2col fallback (strides), against PyTorch: values and the three
gradients, for contiguous and non-contiguous inputs, groups, dilation,
depthwise and 1x1 layers, and batch 1.

Tolerance: F32 sums in another order than PyTorch's; each compared value
is a sum of at most a few hundred products of N(0, 1) values, so
|err| <= a few hundred * 2^-24 * sum |products| ~ 1e-4 of the values'
scale: rtol = atol = 1e-4 on values of order 10.
"""
import numpy as np
import pytest

import foundry as F

CASES = [
    # n, c, h, w, oc, k, stride, padding, dilation, groups
    (4, 1, 28, 28, 16, 3, 1, 1, 1, 1),
    (3, 16, 14, 14, 32, 3, 1, 1, 1, 1),
    (1, 6, 9, 7, 9, (3, 2), 1, (1, 0), (2, 1), 3),
    (2, 8, 6, 6, 8, 3, 1, 1, 1, 8),
    (2, 20, 5, 7, 37, 1, 1, 0, 1, 1),
    (1, 3, 6, 6, 5, 1, 1, 1, 1, 1),
    (2, 4, 9, 9, 6, 3, 2, 1, 1, 1),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("transposed", [False, True])
def test_conv2d_f32_matches_torch(tch, case, transposed):
    n, c, h, w, oc, k, stride, padding, dilation, groups = case
    kh, kw = (k, k) if isinstance(k, int) else k
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((oc, c // groups, kh, kw)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    got, want = [], []
    for lib, out in ((F, got), (tch, want)):
        if transposed:  # a non-contiguous view with x's values
            X = lib.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2)))
            X = X.transpose(2, 3)
            X.requires_grad_(True)
        else:
            X = lib.tensor(x, requires_grad=True)
        W = lib.tensor(wt, requires_grad=True)
        B = lib.tensor(b, requires_grad=True)
        y = lib.nn.functional.conv2d(X, W, B, stride=stride, padding=padding,
                                     dilation=dilation, groups=groups)
        g = lib.tensor(np.cos(np.arange(int(np.prod(tuple(y.shape)))))
                       .reshape(tuple(y.shape)).astype(np.float32))
        (y * g).sum().backward()
        out.extend(t.detach().numpy() for t in (y, X.grad, W.grad, B.grad))
    for name, a, e in zip(("y", "dx", "dw", "db"), got, want):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4, err_msg=name)


def test_conv2d_f32_empty_batch_and_bad_groups(tch):
    x = F.zeros(0, 4, 5, 5)
    w = F.ones(6, 2, 3, 3)
    y = F.nn.functional.conv2d(x, w, padding=1, groups=2)
    assert tuple(y.shape) == (0, 6, 5, 5)
    with pytest.raises(ValueError):
        F.nn.functional.conv2d(F.zeros(1, 4, 5, 5), F.ones(6, 3, 3, 3),
                               groups=2)
