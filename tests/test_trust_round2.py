"""Issue 23, numerics and clear errors: shape arguments, attention heads, integer gradients,
read-only parameters, ndarray subclasses, float16 and causal attention with T_q != T_k.

(Threads are in tests/test_threads.py, NaN routing in tests/test_conventions.py.)
"""
import zlib

import numpy as np
import pytest

import dezero_kr.functions as F
import dezero_kr.layers as L
import dezero_kr.optimizers as O
from dezero_kr import Parameter, Variable
from dezero_kr.grad_clip import adaptive_clip_grad, clip_grad_norm, clip_grad_norm_per_tensor


# =============================================================================
# Shape arguments: an int means a 1-D shape, as NumPy and DeZero take it
# =============================================================================
def test_reshape_broadcast_to_and_sum_to_accept_an_int():
    x = Variable(np.arange(6.0).reshape(2, 3))
    y = F.reshape(x, 6)
    np.testing.assert_array_equal(y.data, np.arange(6.0))
    F.sum(y * np.arange(6.0)).backward()
    np.testing.assert_array_equal(x.grad.data, np.arange(6.0).reshape(2, 3))

    v = Variable(np.array([2.0]))
    y = F.broadcast_to(v, 3)
    np.testing.assert_array_equal(y.data, [2.0, 2.0, 2.0])
    F.sum(y * np.array([1.0, 2.0, 4.0])).backward()
    np.testing.assert_array_equal(v.grad.data, [7.0])

    y = F.sum_to(Variable(np.arange(6.0).reshape(2, 3)), 3)
    np.testing.assert_array_equal(y.data, [3.0, 5.0, 7.0])
    np.testing.assert_array_equal(F.reshape(x, np.int64(6)).data, np.arange(6.0))


@pytest.mark.parametrize('fn', [F.reshape, F.broadcast_to, F.sum_to])
def test_a_shape_that_is_neither_int_nor_tuple_is_a_clear_error(fn):
    with pytest.raises(TypeError, match=rf"{fn.__name__}: shape must be an int or a tuple of ints, "
                                        r"got str 'abc'"):
        fn(Variable(np.ones(3)), 'abc')


# =============================================================================
# Clear errors
# =============================================================================
@pytest.mark.parametrize('n_head', [0, -2, 1.5, True])
def test_multi_head_attention_refuses_a_head_count_that_is_not_a_positive_int(n_head):
    # n_head = 0 was a ZeroDivisionError
    with pytest.raises(ValueError, match=rf'multi_head_attention: n_head must be a positive int, '
                                         rf'got {n_head!r}'):
        F.multi_head_attention(Variable(np.ones((1, 2, 6))), n_head)


@pytest.mark.parametrize('clip', [lambda ps: adaptive_clip_grad(ps, 0.01),
                                  lambda ps: clip_grad_norm(ps, 1.0),
                                  lambda ps: clip_grad_norm_per_tensor(ps, 1.0)],
                         ids=['adaptive_clip_grad', 'clip_grad_norm', 'clip_grad_norm_per_tensor'])
def test_clipping_that_scales_refuses_an_integer_gradient(clip):
    # adaptive_clip_grad raised NumPy's "not inexact"; clip_grad_norm silently rounded the
    # scaled gradient [[5, 5, 5], [5, 5, 5]] to zeros
    p = Parameter(np.ones((2, 3)), name='W')
    p.grad = Variable(np.full((2, 3), 5))
    q = Parameter(np.ones(2), name='b')
    q.grad = Variable(np.ones(2))
    with pytest.raises(TypeError, match=r'the gradient of parameter #1 \(W, shape \(2, 3\)\) has '
                                        r'dtype int64; scaling it needs a floating-point gradient'):
        clip([q, p])
    np.testing.assert_array_equal(p.grad.data, np.full((2, 3), 5))


@pytest.mark.parametrize('opt', [O.SGD, O.MomentumSGD, O.Adam, O.AdaGrad])
def test_an_optimizer_refuses_a_read_only_parameter_before_changing_anything(opt):
    # was NumPy's "output array is read-only", naming no parameter (and after other updates)
    model = L.Linear(3, in_size=2)
    W0 = model.W.data.copy()
    b0 = np.ones(3, dtype=np.float32)
    b0.flags.writeable = False
    model.b.data = b0
    F.sum(model(np.ones((1, 2), np.float32))).backward()
    optimizer = opt().setup(model)
    with pytest.raises(ValueError, match=rf"{opt.__name__}.update: parameter 'b' \(shape \(3,\)\) "
                                         r"holds a read-only array"):
        optimizer.update()
    np.testing.assert_array_equal(model.W.data, W0)
    assert optimizer.t == 0


# =============================================================================
# ndarray subclasses: np.matrix becomes a plain array (exact), a masked array is refused
# =============================================================================
@pytest.mark.filterwarnings('ignore:the matrix subclass:PendingDeprecationWarning')
def test_np_matrix_variables_multiply_elementwise_with_elementwise_gradients():
    # was the matrix product [[7, 10], [15, 22]] (np.matrix's *), with wrong gradients
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    a, b = Variable(m), Variable(m * 1.0)
    assert type(a.data) is np.ndarray
    y = a * b
    np.testing.assert_array_equal(y.data, [[1.0, 4.0], [9.0, 16.0]])
    F.sum(y).backward()
    np.testing.assert_array_equal(a.grad.data, [[1.0, 2.0], [3.0, 4.0]])
    c = Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))
    for y in (c * m, m * c, F.mul(c, m)):  # a matrix as a constant operand, either side
        assert type(y.data) is np.ndarray
        np.testing.assert_array_equal(y.data, [[1.0, 4.0], [9.0, 16.0]])
    np.testing.assert_array_equal((c @ m).data, [[7.0, 10.0], [15.0, 22.0]])  # @ is still @


def test_a_masked_array_is_refused_with_a_clear_error():
    # was: the sum honoured the mask (4.0) while the gradient gave 1 to the masked entry
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False])
    message = r'numpy.ma.MaskedArray: its mask would be honoured by some operations'
    with pytest.raises(TypeError, match=message):
        Variable(masked)
    with pytest.raises(TypeError, match=r'Sum: Variable data must not be a numpy.ma.MaskedArray'):
        F.sum(masked)
    with pytest.raises(TypeError, match=message):
        Variable(np.ones(3)) * masked


# =============================================================================
# Causal attention with Tq != Tk: aligned bottom-right (the KV-cache convention)
# =============================================================================
def test_causal_mask_is_aligned_bottom_right():
    # query i is position Tk - Tq + i of the keys; PyTorch's is_causal would give
    # [[F, T, T, T], [F, F, T, T]] here (top-left); documented in docs/autodiff_modes.md
    np.testing.assert_array_equal(F.causal_mask(2, 4), [[False, False, False, True],
                                                        [False, False, False, False]])
    np.testing.assert_array_equal(F.causal_mask(3, 2), [[True, True], [False, True], [False, False]])
    np.testing.assert_array_equal(F.causal_mask(3), np.triu(np.ones((3, 3), bool), 1))


def test_causal_attention_with_fewer_queries_equals_the_last_rows_of_full_attention():
    # What bottom-right alignment is for: decoding the last Tq tokens against a cache of
    # Tk keys gives exactly the last Tq rows of the full causal attention.
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 5, 4)) for _ in range(3))
    full = F.scaled_dot_product_attention(q, k, v, causal=True).data
    last = F.scaled_dot_product_attention(q[:, 3:], k, v, causal=True).data
    np.testing.assert_allclose(last, full[:, 3:], rtol=1e-14, atol=0)
    # exact weights: with equal scores each query averages the keys it sees
    y = F.scaled_dot_product_attention(np.zeros((2, 1)), np.zeros((4, 1)), np.eye(4), causal=True)
    np.testing.assert_array_equal(y.data, [[1 / 3, 1 / 3, 1 / 3, 0.0], [0.25, 0.25, 0.25, 0.25]])
    # more queries than keys: the first rows see nothing and give 0, not nan
    y = F.scaled_dot_product_attention(np.zeros((3, 1)), np.zeros((2, 1)), np.eye(2), causal=True)
    np.testing.assert_array_equal(y.data, [[0.0, 0.0], [1.0, 0.0], [0.5, 0.5]])


# =============================================================================
# float16: computed in float32 and rounded once, as PyTorch's CPU kernels
# =============================================================================
# The reference is the same function in float64 on the same float16 inputs (and seed), its
# results rounded to float16.  Values must be within one float16 unit in the last place of
# the reference, element by element; gradients within 8 units in the last place of the
# largest reference gradient (the rules read the output that forward rounded to float16,
# as PyTorch's do).  Before the fix each case marked "was" failed as said.
_rng = np.random.default_rng(23)


def _h(a):
    return np.asarray(a, dtype=np.float16)


def _n(*shape):
    return _rng.standard_normal(shape)


_LABELS = _rng.integers(0, 5, 8)
_BITS = (_rng.random((8, 4)) > 0.5).astype(np.int32)
FLOAT16_CASES = [
    # name, function, float16 inputs
    ('sum-axis-0', lambda x: F.sum(x, axis=0), [_h(np.ones((4096, 3)))]),  # was 2048, not 4096
    ('average', lambda x: F.average(x, axis=0), [_h(np.full((4096, 3), 0.1))]),  # was 0.05
    ('broadcast-gradient', lambda x, y: x * y, [_h(_n(1, 3)), _h(np.ones((4096, 3)))]),  # was 2048
    ('layer_norm', F.layer_norm, [_h(1000 + 300 * _n(4, 64)), _h(1 + 0.1 * _n(64)), _h(_n(64))]),  # nan
    ('layer_norm-no-affine', F.layer_norm, [_h(1000 + 300 * _n(4, 64))]),  # was nan
    ('rms_norm', F.rms_norm, [_h(1000 + 300 * _n(4, 64)), _h(1 + 0.1 * _n(64))]),  # was all zeros
    ('batch_norm', lambda x, g, b: F.batch_norm(x, g, b, np.zeros(16, x.dtype), np.ones(16, x.dtype)),
     [_h(1000 + 300 * _n(32, 16)), _h(1 + 0.1 * _n(16)), _h(_n(16))]),  # was zeros
    ('gelu', F.gelu, [_h(np.r_[3 * _n(20), 100, -100, 150, -300, 1000, -2000, 60000])]),  # grad nan
    ('softmax-70000', F.softmax, [_h(np.zeros((2, 70000)))]),  # was all zeros
    ('softmax-70000-axis-0', lambda x: F.softmax(x, axis=0), [_h(0.1 * _n(70000, 2))]),  # was zeros
    ('log_softmax-70000', F.log_softmax, [_h(np.zeros((2, 70000)))]),  # was -inf
    ('mean_squared_error', F.mean_squared_error, [_h(150 * _n(64)), _h(np.zeros(64))]),  # was inf
    ('softmax_cross_entropy', lambda x: F.softmax_cross_entropy(x, _LABELS),
     [_h(100 * _n(8, 5))]),  # the gradient was 40 units in the last place off
    ('sigmoid_cross_entropy', lambda x: F.sigmoid_cross_entropy(x, _BITS), [_h(100 * _n(8, 4))]),
    ('binary_cross_entropy', lambda p: F.binary_cross_entropy(p, _BITS), [_h(_rng.random((8, 4)))]),
    ('cross_entropy', lambda p: F.cross_entropy(p, _LABELS), [_h(_rng.random((8, 5)))]),
    ('softmax', F.softmax, [_h(5 * _n(4, 10))]),  # the gradient was 10 units off
    ('sigmoid', F.sigmoid, [_h(10 * _n(50))]),  # was 0 for x < -8 (sigmoid(-13) = 1.8e-6)
    ('tanh', F.tanh, [_h(3 * _n(50))]),
    ('exp', F.exp, [_h(3 * _n(50))]),
    ('relu', F.relu, [_h(1000 * _n(50))]),
    ('attention', lambda q, k, v: F.scaled_dot_product_attention(q, k, v, causal=True),
     [_h(60 * _n(2, 6, 8)), _h(60 * _n(2, 6, 8)), _h(_n(2, 6, 8))]),  # was 0.28 off
    ('multi_head_attention', lambda qkv: F.multi_head_attention(qkv, 2, causal=True),
     [_h(np.concatenate([150 * _n(2, 6, 16), _n(2, 6, 8)], axis=-1))]),  # was nan
]


def _run(fn, arrays, dtype, gy):
    vs = [Variable(a.astype(dtype)) for a in arrays]
    y = fn(*vs)
    y.grad = Variable(gy.astype(dtype))
    y.backward()
    return y.data, [v.grad.data for v in vs]


@pytest.mark.parametrize('name, fn, arrays', FLOAT16_CASES, ids=[c[0] for c in FLOAT16_CASES])
def test_float16_values_and_gradients_match_float64_rounded_to_float16(name, fn, arrays):
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # the same seed whatever runs first
    gy = _h(rng.standard_normal(np.shape(fn(*[Variable(a) for a in arrays]).data)))
    y, grads = _run(fn, arrays, np.float16, gy)
    ref_y, ref_grads = _run(fn, arrays, np.float64, gy)
    assert y.dtype == np.float16 and all(g.dtype == np.float16 for g in grads)
    ref_y = _h(ref_y).astype(np.float64)
    assert np.isfinite(ref_y).all()
    err = np.abs(y.astype(np.float64) - ref_y)
    assert (err <= np.spacing(_h(np.abs(ref_y))).astype(np.float64)).all(), f'{name}: {err.max()}'
    for g, ref in zip(grads, ref_grads):
        ref = _h(ref).astype(np.float64)
        assert np.isfinite(ref).all() and np.isfinite(g).all()
        bound = 8 * float(np.spacing(_h(np.abs(ref).max())))
        assert np.abs(g.astype(np.float64) - ref).max() <= bound, name


def test_float16_batch_norm_running_statistics_are_computed_in_float32():
    bn = L.BatchNorm()
    x = _h(1000 + 300 * _n(32, 16))
    bn(x)
    ref = L.BatchNorm()
    ref(x.astype(np.float64))
    assert bn.avg_mean.dtype == np.float16
    np.testing.assert_array_equal(bn.avg_mean.data, _h(ref.avg_mean.data))
    np.testing.assert_allclose(bn.avg_var.data, ref.avg_var.data, rtol=2 ** -10)  # was inf
