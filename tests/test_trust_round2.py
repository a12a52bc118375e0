"""Issue 23, numerics and clear errors: shape arguments, attention heads, integer gradients,
read-only parameters, ndarray subclasses, float16 and causal attention with T_q != T_k.

(Threads are in tests/test_threads.py, NaN routing in tests/test_conventions.py.)
"""
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
