"""Tests for dezero_kr.functions_conv: values against explicit-loop references,
gradients (1st, 2nd and 3rd order) against central differences in float64,
forward mode against both, dtype, and clear errors on bad input."""
import numpy as np
import pytest

from dezero_kr.core import Constant, Variable, no_grad, using_config
from dezero_kr.functions_conv import (
    AveragePooling, Col2im, Conv2d, Conv2DGradW, Deconv2d, Im2col, Pooling, Pooling2DGrad,
    Pooling2DWithIndexes, average_pooling, col2im, col2im_array, conv2d, conv2d_simple, deconv2d,
    im2col, im2col_array, pooling, pooling_simple)
from dezero_kr.utils import gradient_check, numerical_grad

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape)


def distinct(*shape):
    """Values 0.1 apart and away from 0 (the padding value): no near-ties for max pooling."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2 + 0.5) * 0.1).reshape(shape)


# =============================================================================
# Explicit-loop references
# =============================================================================
def _pad(x, PH, PW):
    return np.pad(x, ((0, 0), (0, 0), (PH, PH), (PW, PW)))


def ref_conv(x, W, b, stride, pad):
    (SH, SW), (PH, PW) = stride, pad
    N, C, H, Wd = x.shape
    OC, _, KH, KW = W.shape
    xp = _pad(x, PH, PW)
    OH, OW = (H + 2 * PH - KH) // SH + 1, (Wd + 2 * PW - KW) // SW + 1
    y = np.zeros((N, OC, OH, OW))
    for n in range(N):
        for o in range(OC):
            for i in range(OH):
                for j in range(OW):
                    patch = xp[n, :, i * SH:i * SH + KH, j * SW:j * SW + KW]
                    y[n, o, i, j] = (patch * W[o]).sum() + (0 if b is None else b[o])
    return y


def ref_deconv(x, W, b, stride, pad, outsize=None):
    """Each input pixel stamps x[n, c, h, w] * W[c] onto the (padded) output."""
    (SH, SW), (PH, PW) = stride, pad
    N, C, H, Wd = x.shape
    _, OC, KH, KW = W.shape
    if outsize is None:
        outsize = (SH * (H - 1) + KH - 2 * PH, SW * (Wd - 1) + KW - 2 * PW)
    OH, OW = outsize
    big = np.zeros((N, OC, OH + 2 * PH + KH + SH, OW + 2 * PW + KW + SW))
    for n in range(N):
        for c in range(C):
            for h in range(H):
                for w in range(Wd):
                    big[n, :, h * SH:h * SH + KH, w * SW:w * SW + KW] += x[n, c, h, w] * W[c]
    y = big[:, :, PH:PH + OH, PW:PW + OW]
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def ref_im2col(x, kernel, stride, pad):
    """(N, C, KH, KW, OH, OW) by loops."""
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, pad
    N, C, H, W = x.shape
    xp = _pad(x, PH, PW)
    OH, OW = (H + 2 * PH - KH) // SH + 1, (W + 2 * PW - KW) // SW + 1
    col = np.zeros((N, C, KH, KW, OH, OW), dtype=x.dtype)
    for i in range(KH):
        for j in range(KW):
            for oh in range(OH):
                for ow in range(OW):
                    col[:, :, i, j, oh, ow] = xp[:, :, oh * SH + i, ow * SW + j]
    return col


def ref_pool(x, kernel, stride, pad, reduce):
    col = ref_im2col(x, kernel, stride, pad)
    N, C, KH, KW, OH, OW = col.shape
    return reduce(col.reshape(N, C, KH * KW, OH, OW), axis=2)


def ref_maxpool_grad(x, gy, kernel, stride, pad):
    """gy goes to the first maximum (row-major) of each zero-padded window."""
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, pad
    xp = _pad(x, PH, PW)
    gxp = np.zeros_like(xp)
    N, C, OH, OW = gy.shape
    for n in range(N):
        for c in range(C):
            for oh in range(OH):
                for ow in range(OW):
                    win = xp[n, c, oh * SH:oh * SH + KH, ow * SW:ow * SW + KW]
                    i, j = np.unravel_index(np.argmax(win), win.shape)
                    gxp[n, c, oh * SH + i, ow * SW + j] += gy[n, c, oh, ow]
    return gxp[:, :, PH:PH + x.shape[2], PW:PW + x.shape[3]]


# stride, pad, kernel: square, stride 2 + pad 1 + non-square, and asymmetric pairs
CONV_CASES = [(1, 0, (3, 3)), (2, 1, (3, 2)), ((2, 1), (1, 0), (2, 3))]
POOL_CASES = [((2, 2), 2, 0), ((3, 3), 2, 1), ((2, 3), (1, 2), (1, 0)), ((2, 2), 1, 0)]


def _p(v):
    return v if isinstance(v, tuple) else (v, v)


# =============================================================================
# Forward values
# =============================================================================
@pytest.mark.parametrize('stride,pad,kernel', CONV_CASES)
def test_conv2d_forward_matches_loops(stride, pad, kernel):
    x, W, b = randn(2, 3, 6, 5), randn(4, 3, *kernel), randn(4)
    expected = ref_conv(x, W, b, _p(stride), _p(pad))
    assert np.allclose(conv2d(x, W, b, stride, pad).data, expected)
    assert np.allclose(conv2d(x, W, None, stride, pad).data, expected - b.reshape(1, -1, 1, 1))
    assert np.allclose(conv2d_simple(x, W, b, stride, pad).data, expected)


def test_conv2d_exact_small_example():
    # 1x1x3x3 image 0..8, 2x2 kernel of ones: each output is the sum of a 2x2 block.
    x = np.arange(9.0).reshape(1, 1, 3, 3)
    y = conv2d(x, np.ones((1, 1, 2, 2)), np.array([0.5]))
    assert np.array_equal(y.data, [[[[8.5, 12.5], [20.5, 24.5]]]])


@pytest.mark.parametrize('stride,pad,kernel', CONV_CASES)
def test_deconv2d_forward_matches_loops(stride, pad, kernel):
    x, W, b = randn(2, 3, 4, 5), randn(3, 2, *kernel), randn(2)
    expected = ref_deconv(x, W, b, _p(stride), _p(pad))
    assert np.allclose(deconv2d(x, W, b, stride, pad).data, expected)


def test_deconv2d_outsize_bigger_than_default():
    # stride 2: outputs of 7 and 8 rows both conv back to 3 rows; outsize picks 8.
    x, W = randn(1, 2, 3, 3), randn(2, 3, 3, 3)
    y = deconv2d(x, W, stride=2, pad=1, outsize=(6, 5))
    assert y.shape == (1, 3, 6, 5)
    assert np.allclose(y.data, ref_deconv(x, W, None, (2, 2), (1, 1), outsize=(6, 5)))


def test_deconv2d_is_adjoint_of_conv2d():
    x, W = randn(2, 3, 7, 6), randn(4, 3, 3, 2)
    y = conv2d(x, W, stride=2, pad=1)
    g = randn(*y.shape)
    back = deconv2d(g, W, stride=2, pad=1, outsize=(7, 6))
    assert np.isclose((y.data * g).sum(), (x * back.data).sum())


@pytest.mark.parametrize('kernel,stride,pad', POOL_CASES)
def test_pooling_forward_matches_loops(kernel, stride, pad):
    x = randn(2, 3, 7, 6)
    k, s, p = _p(kernel), _p(stride), _p(pad)
    assert np.allclose(pooling(x, kernel, stride, pad).data, ref_pool(x, k, s, p, np.max))
    assert np.allclose(pooling_simple(x, kernel, stride, pad).data, ref_pool(x, k, s, p, np.max))
    assert np.allclose(average_pooling(x, kernel, stride, pad).data, ref_pool(x, k, s, p, np.mean))


def test_pooling_pads_with_zeros_like_dezero():
    x = -np.ones((1, 1, 2, 2))
    assert np.array_equal(pooling(x, 2, 2, pad=1).data, np.zeros((1, 1, 2, 2)))
    assert np.array_equal(average_pooling(x, 2, 2, pad=1).data, np.full((1, 1, 2, 2), -0.25))


def test_pooling_indexes_are_window_argmax():
    x = randn(2, 3, 7, 7)
    f = Pooling((3, 2), (2, 1), 1)
    f(Variable(x))
    col = ref_im2col(x, (3, 2), (2, 1), (1, 1))
    N, C, KH, KW, OH, OW = col.shape
    assert np.array_equal(f.indexes, col.reshape(N, C, KH * KW, OH, OW).argmax(axis=2))


@pytest.mark.parametrize('kernel,stride,pad', [((3, 3), 1, 0), ((2, 3), (2, 1), 1), ((3, 2), 2, (0, 1))])
def test_im2col_layouts_match_loops(kernel, stride, pad):
    x = randn(2, 3, 6, 5)
    ref = ref_im2col(x, kernel, _p(stride), _p(pad))
    N, C, KH, KW, OH, OW = ref.shape
    assert np.array_equal(im2col_array(x, kernel, stride, pad, to_matrix=False), ref)
    mat = ref.transpose(0, 4, 5, 1, 2, 3).reshape(N * OH * OW, C * KH * KW)
    assert np.array_equal(im2col_array(x, kernel, stride, pad), mat)
    assert np.array_equal(im2col(x, kernel, stride, pad).data, mat)


@pytest.mark.parametrize('to_matrix', [True, False])
@pytest.mark.parametrize('kernel,stride,pad', [((3, 3), 1, 0), ((2, 3), (2, 1), 1), ((3, 3), 2, 2)])
def test_im2col_col2im_adjoint(kernel, stride, pad, to_matrix):
    x = randn(2, 3, 6, 5)
    col = im2col_array(x, kernel, stride, pad, to_matrix)
    c = randn(*col.shape)
    back = col2im_array(c, x.shape, kernel, stride, pad, to_matrix)
    assert back.shape == x.shape
    assert np.isclose((col * c).sum(), (x * back).sum())
    assert np.allclose(col2im(c, x.shape, kernel, stride, pad, to_matrix).data, back)


def test_im2col_returns_new_memory():
    x = randn(1, 2, 3, 3)
    col = im2col_array(x, 1, 1, 0, to_matrix=False)
    col[...] = 0
    assert np.abs(x).sum() > 0


# =============================================================================
# First-order gradients against central differences (float64)
# =============================================================================
@pytest.mark.parametrize('fn,x_shape,channels', [(conv2d, (2, 3, 6, 5), (4, 3)),
                                                 (deconv2d, (2, 3, 4, 3), (3, 2))])
@pytest.mark.parametrize('stride,pad,kernel', CONV_CASES)
def test_conv2d_deconv2d_backward(fn, x_shape, channels, stride, pad, kernel):
    out_channels = channels[0] if fn is conv2d else channels[1]
    x, W, b = randn(*x_shape), randn(*channels, *kernel), randn(out_channels)
    assert gradient_check(lambda v: fn(v, W, b, stride, pad), x)
    assert gradient_check(lambda v: fn(x, v, b, stride, pad), W)
    assert gradient_check(lambda v: fn(x, W, v, stride, pad), b)


@pytest.mark.parametrize('stride,pad,kernel', CONV_CASES)
def test_conv2d_simple_backward(stride, pad, kernel):
    x, W, b = randn(2, 3, 6, 5), randn(4, 3, *kernel), randn(4)
    assert gradient_check(lambda v: conv2d_simple(x, v, b, stride, pad), W)
    assert gradient_check(lambda v: conv2d_simple(v, W, b, stride, pad), x)


def test_deconv2d_backward_with_outsize():
    x, W = randn(2, 3, 3, 3), randn(3, 2, 3, 3)
    assert gradient_check(lambda v: deconv2d(v, W, stride=2, pad=1, outsize=(6, 5)), x)
    assert gradient_check(lambda v: deconv2d(x, v, stride=2, pad=1, outsize=(6, 5)), W)


def test_conv2d_skips_input_grad_for_constants():
    x, W = randn(2, 3, 5, 5), Variable(randn(4, 3, 3, 3))
    y = conv2d(x, W)  # x is wrapped in a Constant
    y.backward()
    assert W.grad is not None
    assert isinstance(y.creator.inputs[0], Constant) and y.creator.inputs[0].grad is None
    xv = Variable(x)
    conv2d(xv, W.detach()).backward()
    assert xv.grad is not None


@pytest.mark.parametrize('kernel,stride,pad', POOL_CASES)
def test_pooling_backward(kernel, stride, pad):
    x = distinct(2, 2, 7, 6)
    assert gradient_check(lambda v: pooling(v, kernel, stride, pad), x)
    assert gradient_check(lambda v: pooling_simple(v, kernel, stride, pad), x)
    assert gradient_check(lambda v: average_pooling(v, kernel, stride, pad), x)


@pytest.mark.parametrize('kernel,stride,pad', POOL_CASES)
def test_pooling_backward_matches_first_argmax(kernel, stride, pad):
    # Many ties (rounded values, relu-like zeros): the gradient goes to the first maximum only.
    x = np.maximum(np.round(randn(2, 3, 7, 6)), 0)
    gy = randn(*pooling(x, kernel, stride, pad).shape)
    xv = Variable(x)
    y = pooling(xv, kernel, stride, pad)
    y.grad = Variable(gy)
    y.backward()
    assert np.allclose(xv.grad.data, ref_maxpool_grad(x, gy, _p(kernel), _p(stride), _p(pad)))


@pytest.mark.parametrize('to_matrix', [True, False])
def test_im2col_col2im_backward(to_matrix):
    x = randn(2, 2, 5, 4)
    assert gradient_check(lambda v: im2col(v, (3, 2), 2, 1, to_matrix), x)
    c = randn(*im2col_array(x, (3, 2), 2, 1, to_matrix).shape)
    assert gradient_check(lambda v: col2im(v, x.shape, (3, 2), 2, 1, to_matrix), c)


# =============================================================================
# Higher-order gradients
# =============================================================================
def grads(y, xs, create_graph=True):
    for x in xs:
        x.cleargrad()
    y.backward(create_graph=create_graph)
    return [x.grad for x in xs]


def numeric(fn, x0):
    """Central-difference gradient of a function that itself runs backprop."""
    def wrapped(v):
        with using_config('enable_backprop', True):
            return fn(v).data
    return numerical_grad(wrapped, x0)


@pytest.mark.parametrize('stride,pad,kernel', CONV_CASES[1:])
def test_conv2d_second_order_through_weight_gradient(stride, pad, kernel):
    x0, W0, b0 = randn(2, 2, 5, 4), randn(3, 2, *kernel), randn(3)

    def h(x, W):  # |dL/dW|^2 for L = sum(conv2d(x, W, b)^2): runs through Conv2DGradW
        y = conv2d(x, W, b0, stride, pad)
        gW, = grads((y * y).sum(), [W])
        return (gW * gW).sum()

    x, W = Variable(x0), Variable(W0)
    gx, gW = grads(h(x, W), [x, W], create_graph=False)
    assert np.allclose(gW.data, numeric(lambda v: h(Variable(x0), v), W0), rtol=1e-4, atol=1e-5)
    assert np.allclose(gx.data, numeric(lambda v: h(v, Variable(W0)), x0), rtol=1e-4, atol=1e-5)


def test_deconv2d_second_order_through_weight_gradient():
    x0, W0 = randn(2, 2, 3, 3), randn(2, 3, 3, 2)

    def h(x, W):
        y = deconv2d(x, W, stride=2, pad=1, outsize=(6, 4))
        gW, = grads((y * y * y).sum(), [W])
        return (gW * gW).sum()

    x, W = Variable(x0), Variable(W0)
    gx, gW = grads(h(x, W), [x, W], create_graph=False)
    assert np.allclose(gW.data, numeric(lambda v: h(Variable(x0), v), W0), rtol=1e-4, atol=1e-5)
    assert np.allclose(gx.data, numeric(lambda v: h(v, Variable(W0)), x0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('kernel,stride,pad', POOL_CASES[:2])
def test_pooling_second_and_third_order(kernel, stride, pad):
    x0 = distinct(1, 2, 6, 5)
    w = randn(*x0.shape)

    def g1(x):
        y = pooling(x, kernel, stride, pad)
        gx, = grads((y * y * y).sum(), [x])
        return gx

    def h(x):  # |dL/dx|^2: its gradient runs Pooling2DGrad.backward
        g = g1(x)
        return (g * g).sum()

    def k(x):  # <d h/dx, w>: its gradient runs Pooling2DWithIndexes.backward
        gx, = grads(h(x), [x])
        return (gx * w).sum()

    x = Variable(x0)
    g2, = grads(h(x), [x])
    assert np.allclose(g2.data, numeric(h, x0), rtol=1e-4, atol=1e-5)
    x = Variable(x0)
    g3, = grads(k(x), [x], create_graph=False)
    assert np.allclose(g3.data, numeric(k, x0), rtol=1e-4, atol=1e-5)
    assert np.abs(g3.data).max() > 1e-3  # a real third derivative, not a vacuous zero


def test_average_pooling_second_order():
    x0 = randn(1, 2, 5, 5)

    def h(x):
        y = average_pooling(x, 3, 2, 1)
        gx, = grads((y ** 3).sum(), [x])
        return (gx * gx).sum()

    x = Variable(x0)
    g2, = grads(h(x), [x], create_graph=False)
    assert np.allclose(g2.data, numeric(h, x0), rtol=1e-4, atol=1e-5)


# =============================================================================
# Forward mode (jvp) against central differences and against reverse mode
# =============================================================================
def check_jvp(make_f, inputs, tangent_mask=None, eps=1e-6):
    """f.jvp(t) == (f(x + eps t) - f(x - eps t)) / 2 eps and <jvp(t), u> == <t, vjp(u)>."""
    tangent_mask = tangent_mask or [True] * len(inputs)
    ts = [randn(*a.shape) if m else np.zeros(a.shape) for a, m in zip(inputs, tangent_mask)]
    xs = [Variable(a.copy()) for a in inputs]
    f = make_f()
    y = f(*xs)
    jy = f.jvp(*[Variable(t) if m else None for t, m in zip(ts, tangent_mask)])
    with no_grad():
        yp = make_f()(*[a + eps * t for a, t in zip(inputs, ts)]).data
        ym = make_f()(*[a - eps * t for a, t in zip(inputs, ts)]).data
    assert np.allclose(jy.data, (yp - ym) / (2 * eps), rtol=1e-5, atol=1e-6)
    u = randn(*y.shape)
    y.grad = Variable(u)
    y.backward()
    rev = sum((t * x.grad.data).sum() for t, x in zip(ts, xs))
    assert np.isclose((jy.data * u).sum(), rev)


@pytest.mark.parametrize('use_b', [True, False])
def test_jvp_conv_deconv(use_b):
    x, W, b = randn(2, 3, 5, 4), randn(4, 3, 3, 2), randn(4)
    args = [x, W, b] if use_b else [x, W]
    check_jvp(lambda: Conv2d(2, 1), args)
    check_jvp(lambda: Conv2d(2, 1), args, tangent_mask=[False, True] + [True] * use_b)
    xd, Wd = randn(2, 4, 3, 3), randn(4, 3, 3, 2)
    check_jvp(lambda: Deconv2d(2, 1, (5, 4)), [xd, Wd, b[:3]] if use_b else [xd, Wd])


def test_jvp_conv2d_grad_w():
    x, gy = randn(2, 3, 5, 4), randn(2, 4, 3, 3)
    conv = Conv2d(2, 1)
    conv(x, randn(4, 3, 3, 2))
    check_jvp(lambda: Conv2DGradW(conv), [x, gy])
    check_jvp(lambda: Conv2DGradW(conv), [x, gy], tangent_mask=[True, False])


def test_jvp_pooling_family():
    x = distinct(2, 2, 6, 5)
    check_jvp(lambda: Pooling(3, 2, 1), [x])
    check_jvp(lambda: AveragePooling((2, 3), (1, 2), 1), [x])
    pool = Pooling(3, 2, 1)
    y = pool(Variable(x))
    check_jvp(lambda: Pooling2DGrad(pool), [randn(*y.shape)])
    check_jvp(lambda: Pooling2DWithIndexes(pool), [randn(*x.shape)])


def test_forward_mode_of_pooling_under_no_grad():
    # Under no_grad the forward pass skips the argmax; forward mode still needs it.
    from dezero_kr.autograd import jvp
    x, v = distinct(1, 2, 5, 4), randn(1, 2, 5, 4)
    with no_grad():
        y, t = jvp(lambda a: pooling(a, 2, 2, 1), (x,), (v,))
    eps = 1e-6
    numeric_t = (pooling(x + eps * v, 2, 2, 1).data - pooling(x - eps * v, 2, 2, 1).data) / (2 * eps)
    assert np.allclose(t.data, numeric_t)


def test_jvp_im2col_col2im():
    x = randn(2, 2, 5, 4)
    for to_matrix in (True, False):
        check_jvp(lambda: Im2col((3, 2), 2, 1, to_matrix), [x])
        c = im2col_array(x, (3, 2), 2, 1, to_matrix)
        check_jvp(lambda: Col2im(x.shape, (3, 2), 2, 1, to_matrix), [randn(*c.shape)])


# =============================================================================
# dtype, slots
# =============================================================================
def test_float32_in_float32_out_and_grads():
    f32 = np.float32
    x = Variable(randn(2, 3, 6, 6).astype(f32))
    W = Variable(randn(4, 3, 3, 3).astype(f32))
    b = Variable(randn(4).astype(f32))
    Wd = Variable(randn(4, 2, 2, 2).astype(f32))
    y = conv2d(x, W, b, stride=1, pad=1)
    z = deconv2d(y, Wd, stride=2)
    p = pooling(z, 2, 2) + average_pooling(z, 3, 2, 1)[:, :, :6, :6]
    q = (im2col(p, 2, 2) ** 2).sum() + col2im(im2col(p, 2, 2), p.shape, 2, 2).sum()
    for v in (y, z, p, q):
        assert v.dtype == f32
    q.backward(create_graph=True)
    for v in (x, W, b, Wd):
        assert v.grad.dtype == f32
    gW = W.grad
    W.cleargrad()
    (gW * gW).sum().backward()
    assert W.grad.dtype == f32 and x.grad.dtype == f32


def test_every_function_has_slots_and_jvp():
    from dezero_kr.core import Function
    for cls in (Conv2d, Deconv2d, Conv2DGradW, Pooling, Pooling2DGrad, Pooling2DWithIndexes,
                AveragePooling, Im2col, Col2im):
        assert '__slots__' in cls.__dict__
        assert cls.jvp is not Function.jvp
    with pytest.raises(AttributeError):
        Conv2d().anything = 1


# =============================================================================
# Bad input -> clear errors naming the function and the shapes
# =============================================================================
def test_error_channel_mismatch():
    with pytest.raises(ValueError, match=r'conv2d: x has 3 channels \(shape \(2, 3, 5, 5\)\) '
                                         r'but W expects 4 \(W shape \(8, 4, 3, 3\)\)'):
        conv2d(randn(2, 3, 5, 5), randn(8, 4, 3, 3))
    with pytest.raises(ValueError, match=r'deconv2d: x has 3 channels.*W expects 4'):
        deconv2d(randn(2, 3, 5, 5), randn(4, 8, 3, 3))
    with pytest.raises(ValueError, match=r'conv2d_simple: x has 3 channels'):
        conv2d_simple(randn(2, 3, 5, 5), randn(8, 4, 3, 3))
    with pytest.raises(ValueError, match=r'conv2d: b must have shape \(8,\).*got \(4,\)'):
        conv2d(randn(2, 3, 5, 5), randn(8, 3, 3, 3), randn(4))


def test_error_kernel_larger_than_padded_input():
    with pytest.raises(ValueError, match=r'conv2d: kernel \(5, 5\) is larger than the padded '
                                         r'input \(4, 4\) \(input \(2, 2\), pad \(1, 1\)\)'):
        conv2d(randn(1, 1, 2, 2), randn(1, 1, 5, 5), pad=1)
    with pytest.raises(ValueError, match=r'pooling: kernel \(3, 3\) is larger'):
        pooling(randn(1, 1, 2, 2), 3)
    with pytest.raises(ValueError, match=r'average_pooling: kernel \(3, 4\) is larger'):
        average_pooling(randn(1, 1, 3, 3), (3, 4))
    with pytest.raises(ValueError, match=r'im2col: kernel'):
        im2col(randn(1, 1, 2, 2), 3)


def test_error_not_4d():
    with pytest.raises(ValueError, match=r'conv2d: x must be 4-D \(N, C, H, W\), got shape \(3, 5, 5\)'):
        conv2d(randn(3, 5, 5), randn(2, 3, 3, 3))
    with pytest.raises(ValueError, match=r'conv2d: W must be 4-D, got shape \(2, 3, 3\)'):
        conv2d(randn(1, 3, 5, 5), randn(2, 3, 3))
    with pytest.raises(ValueError, match=r'pooling: x must be 4-D'):
        pooling(randn(5, 5), 2)
    with pytest.raises(ValueError, match=r'average_pooling: x must be 4-D'):
        average_pooling(randn(5, 5), 2)
    with pytest.raises(ValueError, match=r'im2col: img must be 4-D'):
        im2col_array(randn(5, 5), 2, 1, 0)
    with pytest.raises(ValueError, match=r'pooling_simple: x must be 4-D'):
        pooling_simple(randn(5, 5), 2)


@pytest.mark.parametrize('kwargs,message', [
    (dict(stride=0), r'conv2d: stride must be >= 1, got 0'),
    (dict(stride=(1, -2)), r'conv2d: stride must be >= 1, got \(1, -2\)'),
    (dict(pad=-1), r'conv2d: pad must be >= 0, got -1'),
    (dict(stride=1.5), r'conv2d: stride must be an int or a pair of ints, got 1.5'),
    (dict(pad=[1, 1]), r'conv2d: pad must be an int or a pair of ints, got \[1, 1\]'),
    (dict(pad=(1, 1, 1)), r'conv2d: pad must be an int or a pair of ints'),
    (dict(stride=True), r'conv2d: stride must be an int or a pair of ints, got True'),
])
def test_error_bad_stride_pad(kwargs, message):
    with pytest.raises(ValueError, match=message):
        conv2d(randn(1, 1, 4, 4), randn(1, 1, 2, 2), **kwargs)


def test_error_bad_pool_and_deconv_args():
    with pytest.raises(ValueError, match=r'pooling: kernel_size must be >= 1, got 0'):
        pooling(randn(1, 1, 4, 4), 0)
    with pytest.raises(ValueError, match=r'average_pooling: stride must be >= 1'):
        average_pooling(randn(1, 1, 4, 4), 2, stride=0)
    with pytest.raises(ValueError, match=r'deconv2d: outsize \(9, 9\) does not fit x '
                                         r'\(1, 1, 3, 3\).*gives \(5, 5\), not \(3, 3\)'):
        deconv2d(randn(1, 1, 3, 3), randn(1, 1, 3, 3), stride=2, pad=1, outsize=(9, 9))
    with pytest.raises(ValueError, match=r'col2im: col has shape \(5, 4\), expected \(16, 4\)'):
        col2im_array(randn(5, 4), (1, 1, 5, 5), 2, 1, 0)


# =============================================================================
# An empty batch: forward works, backward gives zero gradients of the right shapes
# =============================================================================
@pytest.mark.parametrize('op', ['conv2d', 'conv2d_simple', 'deconv2d', 'pooling', 'pooling_simple',
                                'average_pooling'])
def test_empty_batch_forward_and_zero_gradients(op):
    rs = np.random.default_rng(0)
    x = Variable(np.zeros((0, 3, 5, 5)))
    W = Variable(rs.normal(size=(3, 4, 3, 3) if op == 'deconv2d' else (4, 3, 3, 3)))
    b = Variable(rs.normal(size=4))
    calls = {'conv2d': lambda: conv2d(x, W, b, stride=2, pad=1),
             'conv2d_simple': lambda: conv2d_simple(x, W, b, stride=2, pad=1),
             'deconv2d': lambda: deconv2d(x, W, b, stride=2, pad=1),
             'pooling': lambda: pooling(x, 2, 2),
             'pooling_simple': lambda: pooling_simple(x, 2, 2),
             'average_pooling': lambda: average_pooling(x, 2, 2)}
    x.data = np.zeros((1, 3, 5, 5))
    one = calls[op]().shape  # the same op on one sample gives the expected output shape
    x.data = np.zeros((0, 3, 5, 5))
    y = calls[op]()
    assert y.shape == (0,) + one[1:]
    y.backward()  # the seed is an empty array of ones
    assert x.grad.shape == (0, 3, 5, 5)
    if op.startswith(('conv', 'deconv')):
        assert W.grad.shape == W.shape and not W.grad.data.any()  # empty sums: exactly 0
        assert b.grad.shape == (4,) and not b.grad.data.any()
