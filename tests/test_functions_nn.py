"""functions_nn: activations, losses, normalisation, dropout, embedding, attention."""
import math
import warnings

import numpy as np
import pytest

import dezero_kr.functions_nn as N
import dezero_kr
import dezero_kr.functions
from dezero_kr import functions_norm
from dezero_kr import Config, Variable, using_config
from dezero_kr.functions_math import linear
from _checks import check_backward, check_double_backward

rng = np.random.default_rng(11)


def r(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape)


def softmax_ref(x, axis=1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid_ref(x):
    return 1 / (1 + np.exp(-x))


# =============================================================================
# Worked examples from the seed text (exact numbers)
# =============================================================================
def test_relu_mask_example():
    x = Variable(np.array([0.8, -0.5, 1.2]))
    y = N.relu(x)
    np.testing.assert_array_equal(y.data, [0.8, 0.0, 1.2])
    y.grad = Variable(np.array([0.3, 0.7, 0.1]))
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [0.3, 0.0, 0.1])


def test_two_layer_network_example():
    x = np.array([[1.0, 0.5, -0.3]])
    W1 = Variable(np.array([[0.2, 0.4], [0.3, -0.1], [0.1, 0.5]]))
    b1 = Variable(np.array([0.1, -0.1]))
    W2 = Variable(np.array([[0.3, -0.2], [0.1, 0.4]]))
    b2 = Variable(np.zeros(2))
    a1 = N.relu(linear(x, W1, b1))
    np.testing.assert_allclose(a1.data, [[0.42, 0.10]], atol=1e-15)
    z2 = linear(a1, W2, b2)
    np.testing.assert_allclose(z2.data, [[0.136, -0.044]], atol=1e-15)
    loss = N.softmax_cross_entropy(z2, np.array([1]))
    loss.backward()
    assert round(float(loss.data), 6) == 0.787192
    np.testing.assert_allclose(N.softmax(z2).data, [[0.544879, 0.455121]], atol=5e-7)
    np.testing.assert_allclose(W1.grad.data, [[0.272439, -0.163464], [0.13622, -0.081732],
                                              [-0.081732, 0.049039]], atol=5e-7)
    # dW2 = outer(a1, dz2), dz2 = p - onehot
    p = softmax_ref(z2.data)
    np.testing.assert_allclose(W2.grad.data, np.outer([0.42, 0.10], p[0] - [0, 1]), rtol=1e-12)


# =============================================================================
# Activations
# =============================================================================
ACTIVATIONS = [
    ('sigmoid', N.sigmoid, sigmoid_ref),
    ('sigmoid_simple', N.sigmoid_simple, sigmoid_ref),
    ('relu', N.relu, lambda x: np.maximum(x, 0)),
    ('leaky_relu', N.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x)),
    ('gelu', N.gelu, lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
]


@pytest.mark.parametrize('name,fn,ref', ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_gradients(name, fn, ref):
    x = r(3, 4, low=-3, high=3)
    x[np.abs(x) < 0.05] = 0.5  # away from the kink of relu / leaky_relu
    np.testing.assert_allclose(fn(Variable(x)).data, ref(x), rtol=1e-14, atol=1e-15)
    check_backward(fn, x)
    if name not in ('relu', 'leaky_relu'):  # second derivative 0 a.e.: nothing to compare
        check_double_backward(fn, x)


@pytest.mark.parametrize('name,fn,ref', ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_keeps_float32(name, fn, ref):
    x = Variable(r(2, 3).astype(np.float32))
    y = fn(x)
    y.backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32


def test_leaky_relu_slope_and_gradient():
    x = Variable(np.array([-2.0, 3.0]))
    y = N.leaky_relu(x, slope=0.1)
    np.testing.assert_allclose(y.data, [-0.2, 3.0])
    y.backward()
    np.testing.assert_allclose(x.grad.data, [0.1, 1.0])


def test_sigmoid_does_not_overflow():
    x = Variable(np.array([-1e4, -50.0, 0.0, 50.0, 1e4], dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        y = N.sigmoid(x)
        y.backward()
    np.testing.assert_allclose(y.data, [0, sigmoid_ref(-50.0), 0.5, 1, 1], atol=1e-7)
    assert np.isfinite(x.grad.data).all()


# =============================================================================
# Softmax family
# =============================================================================
@pytest.mark.parametrize('axis', [1, 0, -1])
def test_softmax_values_and_gradients(axis):
    x = r(3, 4, low=-2, high=2)
    for fn in (N.softmax, N.softmax_simple):
        np.testing.assert_allclose(fn(Variable(x), axis=axis).data, softmax_ref(x, axis), rtol=1e-14)
        check_backward(lambda a: fn(a, axis=axis), x)
    check_double_backward(lambda a: N.softmax(a, axis=axis), x)


@pytest.mark.parametrize('axis', [1, 0, -1])
def test_log_softmax_values_and_gradients(axis):
    x = r(2, 3, 4, low=-2, high=2)
    np.testing.assert_allclose(N.log_softmax(Variable(x), axis=axis).data, np.log(softmax_ref(x, axis)),
                               rtol=1e-13)
    check_backward(lambda a: N.log_softmax(a, axis=axis), x)
    check_double_backward(lambda a: N.log_softmax(a, axis=axis), x)


def test_softmax_and_log_softmax_stable_for_huge_logits():
    x = np.array([[1e4, 0.0, -1e4], [3e4, 3e4, 3e4]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        p = N.softmax(Variable(x)).data
        lp = N.log_softmax(Variable(x)).data
    np.testing.assert_allclose(p, [[1, 0, 0], [1 / 3] * 3], rtol=1e-6)
    np.testing.assert_allclose(lp[0], [0, -1e4, -2e4], rtol=1e-6)
    np.testing.assert_allclose(lp[1], [-math.log(3)] * 3, rtol=1e-6)


def test_softmax_with_minus_inf_gives_exact_zero_and_finite_gradients():
    x = Variable(np.array([[0.5, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]]))
    y = N.softmax(x)
    assert y.data[0, 1] == 0.0
    np.testing.assert_allclose(y.data[0, [0, 2]], softmax_ref(np.array([[0.5, 1.0]]))[0], rtol=1e-15)
    np.testing.assert_array_equal(y.data[1], [0, 0, 0])  # a fully masked row: zeros, not nan
    (y * Variable(np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]))).sum().backward()
    assert np.isfinite(x.grad.data).all()
    assert x.grad.data[0, 1] == 0 and (x.grad.data[1] == 0).all()
    lp = N.log_softmax(Variable(x.data))
    assert lp.data[0, 1] == -np.inf and (lp.data[1] == -np.inf).all()
    assert not np.isnan(lp.data).any()


def test_masked_fill():
    x = r(3, 4)
    mask = np.array([True, False, False, True])
    y = N.masked_fill(Variable(x), mask, -5.0)
    np.testing.assert_array_equal(y.data, np.where(mask, -5.0, x))
    check_backward(lambda a: N.masked_fill(a, mask, 7.0), x)
    with pytest.raises(ValueError, match=r'masked_fill: mask of shape \(3,\) does not broadcast'):
        N.masked_fill(Variable(x), np.ones(3, bool), 0.0)


def test_causal_mask():
    np.testing.assert_array_equal(N.causal_mask(3), [[0, 1, 1], [0, 0, 1], [0, 0, 0]])
    np.testing.assert_array_equal(N.causal_mask(1, 3), [[0, 0, 0]])  # last query sees every key


def _attention_ref(q, k, v, mask):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    s = np.where(mask, -np.inf, s)
    return softmax_ref(s, -1) @ v, softmax_ref(s, -1)


def test_scaled_dot_product_attention_causal():
    q, k, v = r(2, 4, 3), r(2, 4, 3), r(2, 4, 5)
    out = N.scaled_dot_product_attention(Variable(q), Variable(k), Variable(v), causal=True)
    ref, weights = _attention_ref(q, k, v, N.causal_mask(4))
    np.testing.assert_allclose(out.data, ref, rtol=1e-13)
    assert (weights[:, 0, 1:] == 0).all()  # the first query only sees the first key
    fn = lambda a, b, c: N.scaled_dot_product_attention(a, b, c, causal=True)  # noqa: E731
    check_backward(fn, q, k, v)
    check_double_backward(fn, q, k, v, atol=1e-5)
    # The gradient of a key reaches only queries that may see it: v of the last key
    # gets gradient only from the last query.
    vv = Variable(v.copy())
    o = N.scaled_dot_product_attention(Variable(q), Variable(k), vv, causal=True)
    o[:, :3].sum().backward()
    np.testing.assert_array_equal(vv.grad.data[:, 3], 0)


def test_scaled_dot_product_attention_with_mask():
    q, k, v = r(3, 2), r(4, 2), r(4, 3)
    mask = np.array([False, True, False, True])  # padding keys
    out = N.scaled_dot_product_attention(q, k, v, mask=mask)
    np.testing.assert_allclose(out.data, _attention_ref(q, k, v, mask)[0], rtol=1e-13)


def test_scaled_dot_product_attention_broadcast_mask_gradients_and_errors():
    # batch axes that broadcast (k, v shared by the two heads) and a per-query mask
    q, k, v = r(2, 2, 3, 4), r(2, 1, 3, 4), r(2, 1, 3, 5)
    mask = np.array([[False, True, False], [False, False, True], [True, False, False]])
    out = N.scaled_dot_product_attention(Variable(q), Variable(k), Variable(v), mask=mask)
    np.testing.assert_allclose(out.data, _attention_ref(q, k, v, mask)[0], rtol=1e-13)
    fn = lambda a, b, c: N.scaled_dot_product_attention(a, b, c, mask=mask)  # noqa: E731
    check_backward(fn, q, k, v)
    check_double_backward(fn, q, k, v, atol=1e-5)
    # a query that may see no key gets zero weights: output 0 and finite gradients, not nan
    vv = Variable(v.copy())
    o = N.scaled_dot_product_attention(q, k, vv, mask=np.array([True, True, True]))
    assert (o.data == 0).all()
    o.sum().backward()
    assert (vv.grad.data == 0).all()
    with pytest.raises(ValueError, match=r'scaled_dot_product_attention: mask of shape \(2,\) does '
                                         r'not broadcast to the scores of q \(2, 2, 3, 4\)'):
        N.scaled_dot_product_attention(q, k, v, mask=np.ones(2, bool))


def _multi_head_composed(qkv, n_head):
    """multi_head_attention spelled out: split, per-head causal attention, merge (a reference)."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    heads = dezero_kr.functions.transpose(dezero_kr.functions.reshape(qkv, (B, T, 3, n_head, C // n_head)),
                                          (2, 0, 3, 1, 4))
    y = N.scaled_dot_product_attention(heads[0], heads[1], heads[2], causal=True)
    return dezero_kr.functions.reshape(dezero_kr.functions.transpose(y, (0, 2, 1, 3)), (B, T, C))


def test_multi_head_attention_is_the_per_head_composition():
    qkv = r(2, 5, 12)
    out = N.multi_head_attention(Variable(qkv), 2, causal=True)
    assert type(out.creator).__name__ == 'MultiHeadAttention'  # one node
    ref = _multi_head_composed(Variable(qkv), 2)
    np.testing.assert_allclose(out.data, ref.data, rtol=1e-13)
    # by hand for one head and one query: position 2 of head 1 of batch 0
    q, k, v = qkv[0, :, 2:4], qkv[0, :, 6:8], qkv[0, :, 10:12]
    w = softmax_ref((k[:3] @ q[2])[None] / math.sqrt(2))[0]
    np.testing.assert_allclose(out.data[0, 2, 2:4], w @ v[:3], rtol=1e-13)
    fn = lambda a: N.multi_head_attention(a, 2, causal=True)  # noqa: E731
    check_backward(fn, qkv)
    check_double_backward(fn, qkv, atol=1e-5)
    with pytest.raises(ValueError, match=r'multi_head_attention: qkv must have shape \(B, T, 3C\) with C '
                                         r'divisible by n_head=3, got \(2, 5, 12\)'):
        N.multi_head_attention(qkv, 3)


def test_attention_first_order_gradients_match_the_recorded_ones():
    # the plain first-order pass (arrays) and backward(create_graph=True) (Variables) give the same numbers
    qkv = r(2, 4, 12)
    gy = r(2, 4, 4)
    grads = []
    for create_graph in (False, True):
        x = Variable(qkv.copy())
        y = N.multi_head_attention(x, 2, causal=True)
        y.grad = Variable(gy)
        y.backward(create_graph=create_graph)
        grads.append(x.grad.data)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-15)


# =============================================================================
# Losses
# =============================================================================
def test_softmax_cross_entropy_value_and_exact_gradient():
    x = r(5, 4, low=-3, high=3)
    t = np.array([0, 3, 1, 1, 2])
    p = softmax_ref(x)
    expected = -np.log(p[np.arange(5), t]).mean()
    for fn in (N.softmax_cross_entropy, N.softmax_cross_entropy_simple):
        xv = Variable(x.copy())
        loss = fn(xv, t)
        assert loss.shape == ()
        np.testing.assert_allclose(loss.data, expected, rtol=1e-13)
        loss.backward()
        onehot = np.eye(4)[t]
        np.testing.assert_allclose(xv.grad.data, (p - onehot) / 5, rtol=1e-12, atol=1e-16)
    check_backward(lambda a: N.softmax_cross_entropy(a, t), x)
    check_double_backward(lambda a: N.softmax_cross_entropy(a, t), x)


def test_softmax_cross_entropy_huge_logits_and_float32():
    x = Variable(np.array([[1e4, 0.0, -1e4], [0.0, 1e4, 2e4]], dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        loss = N.softmax_cross_entropy(x, np.array([0, 1]))
        loss.backward()
    assert loss.dtype == np.float32 and x.grad.dtype == np.float32
    np.testing.assert_allclose(loss.data, 1e4 / 2, rtol=1e-6)  # row 0: 0, row 1: 1e4
    np.testing.assert_allclose(x.grad.data, [[0, 0, 0], [0, -0.5, 0.5]], atol=1e-7)


@pytest.mark.parametrize('fn', [N.softmax_cross_entropy, N.softmax_cross_entropy_simple, N.accuracy,
                                N.cross_entropy])
def test_label_checks_name_function_and_shapes(fn):
    x = Variable(np.full((3, 4), 0.25))
    name = fn.__name__
    with pytest.raises(TypeError, match=f'{name}: t must hold integer class labels, got dtype float64'):
        fn(x, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match=rf'{name}: t has shape \(2,\) but x has shape \(3, 4\)'):
        fn(x, np.array([0, 1]))
    with pytest.raises(ValueError, match=rf'{name}: labels must be in \[0, 4\) .* got values from 0 to 4'):
        fn(x, np.array([0, 4, 1]))
    with pytest.raises(ValueError, match=r'got values from -1'):
        fn(x, np.array([0, -1, 1]))


@pytest.mark.parametrize('dtype', [np.int8, np.int32, np.int64, np.uint8, np.uint64])
def test_label_range_check_for_every_integer_dtype(dtype):
    x = Variable(np.zeros((3, 4)))
    N.softmax_cross_entropy(x, np.array([0, 3, 1], dtype=dtype))  # in range: fine
    with pytest.raises(ValueError, match=r'got values from 0 to 4'):
        N.softmax_cross_entropy(x, np.array([0, 4, 1], dtype=dtype))
    if np.dtype(dtype).kind == 'i':
        with pytest.raises(ValueError, match=r'got values from -1 to 1'):
            N.softmax_cross_entropy(x, np.array([0, -1, 1], dtype=dtype)[::1])


def test_softmax_cross_entropy_needs_2d():
    with pytest.raises(ValueError,
                       match=r'softmax_cross_entropy: x must be 2-D \(N, C\), got shape \(2, 3, 4\)'):
        N.softmax_cross_entropy(np.zeros((2, 3, 4)), np.zeros(2, int))


def test_mean_squared_error_divides_by_batch_size():
    x0, x1 = r(4, 3), r(4, 3)
    for fn in (N.mean_squared_error, N.mean_squared_error_simple):
        np.testing.assert_allclose(fn(x0, x1).data, ((x0 - x1) ** 2).sum() / 4, rtol=1e-14)
    check_backward(N.mean_squared_error, x0, x1)
    check_double_backward(N.mean_squared_error, x0, x1)


@pytest.mark.parametrize('s0,s1', [((4, 3), (3,)), ((4, 1), (4, 3)), ((4, 3), ()), ((5,), (5,))])
def test_mean_squared_error_broadcast_gradients(s0, s1):
    # DeZero issue #20: with broadcast shapes each gradient must be summed back to its input.
    x0, x1 = r(*s0), r(*s1)
    diff = x0 - x1
    np.testing.assert_allclose(N.mean_squared_error(x0, x1).data, (diff ** 2).sum() / len(diff))
    check_backward(N.mean_squared_error, x0, x1)
    check_backward(N.mean_squared_error_simple, x0, x1)


def test_mean_squared_error_skips_constant_target_gradient():
    x = Variable(r(3, 2))
    N.mean_squared_error(x, r(3, 2)).backward()  # the target is a raw array: a Constant
    assert x.grad is not None


def test_sigmoid_cross_entropy():
    x = r(4, 3, low=-3, high=3)
    t = rng.integers(0, 2, (4, 3))
    p = sigmoid_ref(x)
    expected = -(t * np.log(p) + (1 - t) * np.log(1 - p)).sum() / 4
    np.testing.assert_allclose(N.sigmoid_cross_entropy(Variable(x), t).data, expected, rtol=1e-13)
    check_backward(lambda a: N.sigmoid_cross_entropy(a, t), x)
    check_double_backward(lambda a: N.sigmoid_cross_entropy(a, t), x)
    # probability targets are differentiable too: dL/dt = -x / N
    check_backward(N.sigmoid_cross_entropy, x, rng.uniform(0, 1, (4, 3)))
    # DeZero reshapes t to x's shape
    xv = Variable(x[:, :1].copy())
    np.testing.assert_allclose(N.sigmoid_cross_entropy(xv, t[:, 0]).data,
                               N.sigmoid_cross_entropy(xv, t[:, :1]).data)


def test_sigmoid_cross_entropy_stable_and_float32():
    x = Variable(np.array([[-1e4], [1e4], [30.0]], dtype=np.float32))
    t = np.array([[1], [0], [1]])
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        loss = N.sigmoid_cross_entropy(x, t)
        loss.backward()
    assert loss.dtype == np.float32 and x.grad.dtype == np.float32
    np.testing.assert_allclose(loss.data, 2e4 / 3, rtol=1e-6)
    np.testing.assert_allclose(x.grad.data.ravel(), [-1 / 3, 1 / 3, (sigmoid_ref(30.0) - 1) / 3], atol=1e-7)
    with pytest.raises(ValueError,
                       match=r'sigmoid_cross_entropy: t has shape \(2,\) but x has shape \(3, 1\)'):
        N.sigmoid_cross_entropy(x, np.array([0, 1]))


def test_binary_cross_entropy():
    p = rng.uniform(0.05, 0.95, (4, 2))
    t = rng.integers(0, 2, (4, 2))
    expected = -(t * np.log(p) + (1 - t) * np.log(1 - p)).sum() / 4
    np.testing.assert_allclose(N.binary_cross_entropy(Variable(p), t).data, expected, rtol=1e-13)
    check_backward(lambda a: N.binary_cross_entropy(a, t), p)
    # p of exactly 0 or 1 stays finite
    edge = N.binary_cross_entropy(Variable(np.array([0.0, 1.0], dtype=np.float32)), np.array([1, 0]))
    assert np.isfinite(edge.data) and edge.dtype == np.float32


def test_cross_entropy_labels_and_probability_targets():
    p = softmax_ref(r(4, 3))
    t = np.array([2, 0, 1, 1])
    np.testing.assert_allclose(N.cross_entropy(Variable(p), t).data,
                               -np.log(p[np.arange(4), t]).mean(), rtol=1e-14)
    onehot = np.eye(3)[t]
    np.testing.assert_allclose(N.cross_entropy(Variable(p), onehot).data,
                               N.cross_entropy(Variable(p), t).data, rtol=1e-14)
    soft = softmax_ref(r(4, 3))
    np.testing.assert_allclose(N.cross_entropy(Variable(p), soft).data,
                               -(soft * np.log(p)).sum() / 4, rtol=1e-14)
    check_backward(lambda a: N.cross_entropy(a, t), p)
    check_backward(N.cross_entropy, p, soft)
    with pytest.raises(ValueError, match=r'cross_entropy: probability targets t have shape \(4, 2\)'):
        N.cross_entropy(Variable(p), np.ones((4, 2)))


def test_accuracy():
    y = np.array([[0.1, 0.8, 0.1], [0.9, 0.05, 0.05], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], dtype=np.float32)
    acc = N.accuracy(Variable(y), np.array([1, 0, 0, 0]))
    assert isinstance(acc, Variable) and acc.creator is None
    assert acc.dtype == np.float32 and float(acc.data) == 0.75
    assert float(N.accuracy(y, np.array([1, 0, 2, 0])).data) == 1.0


# =============================================================================
# Dropout
# =============================================================================
def test_dropout_train_and_test_mode():
    x = Variable(np.ones((200, 50), dtype=np.float32))
    np.random.seed(0)
    y = N.dropout(x, 0.3)
    kept = y.data != 0
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.data[kept], 1 / 0.7, rtol=1e-6)
    assert abs(kept.mean() - 0.7) < 0.02
    y.backward()
    np.testing.assert_array_equal(x.grad.data, y.data)  # gradient = mask / (1 - ratio)
    np.random.seed(0)
    np.testing.assert_array_equal(N.dropout(x, 0.3).data, y.data)  # seeded by np.random.seed
    with dezero_kr.test_mode():
        assert N.dropout(x, 0.3) is x
    assert N.dropout(x, 0.0) is x
    with pytest.raises(ValueError, match=r'dropout: dropout_ratio must be in \[0, 1\), got 1.0'):
        N.dropout(x, 1.0)


def test_dropout_mask_is_the_seeded_float64_draw_in_every_dtype():
    # the mask is rand(*shape) > ratio from the global RNG, whatever x's dtype (float32 and float64
    # runs of one seed drop the same elements), and the gradient is gy * mask / (1 - ratio)
    x64 = r(6, 7)
    np.random.seed(3)
    keep = np.random.rand(6, 7) > 0.25
    for dtype in (np.float64, np.float32):
        x = Variable(x64.astype(dtype))
        np.random.seed(3)
        y = N.dropout(x, 0.25)
        assert y.dtype == dtype
        np.testing.assert_array_equal(y.data, x.data * keep * dtype(1 / 0.75))
        gy = r(6, 7).astype(dtype)
        y.grad = Variable(gy)
        y.backward()
        np.testing.assert_array_equal(x.grad.data, gy * keep * dtype(1 / 0.75))


# =============================================================================
# Normalisation
# =============================================================================
def _bn_ref(x, gamma, beta, eps, axes):
    shape = [1] * x.ndim
    shape[1] = x.shape[1]
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma.reshape(shape) + beta.reshape(shape), mu.ravel(), var.ravel()


@pytest.mark.parametrize('shape', [(6, 3), (4, 3, 2, 2)])
def test_batch_norm_train_values_running_stats_and_gradients(shape):
    x, gamma, beta = r(*shape, low=-2, high=2), rng.uniform(0.5, 1.5, 3), r(3)
    axes = (0,) + tuple(range(2, len(shape)))
    mean, var = np.full(3, 0.5), np.full(3, 2.0)
    y = N.batch_norm(Variable(x), Variable(gamma), Variable(beta), mean, var, decay=0.9, eps=1e-5)
    ref, mu, v = _bn_ref(x, gamma, beta, 1e-5, axes)
    np.testing.assert_allclose(y.data, ref, rtol=1e-12, atol=1e-14)
    m = x.size // 3
    np.testing.assert_allclose(mean, 0.9 * 0.5 + 0.1 * mu, rtol=1e-14)
    np.testing.assert_allclose(var, 0.9 * 2.0 + 0.1 * v * m / (m - 1), rtol=1e-14)

    def fn(a, g, b):
        return N.batch_norm(a, g, b, np.zeros(3), np.ones(3))
    check_backward(fn, x, gamma, beta)
    check_double_backward(fn, x, gamma, beta, atol=1e-5)


def test_batch_norm_test_mode_uses_running_stats():
    x, gamma, beta = r(5, 3), rng.uniform(0.5, 1.5, 3), r(3)
    mean, var = r(3), rng.uniform(0.5, 2, 3)
    before = mean.copy()
    with dezero_kr.test_mode():
        y = N.batch_norm(Variable(x), Variable(gamma), Variable(beta), mean, var)

        def fn(a, g, b):
            return N.batch_norm(a, g, b, mean, var)
        check_backward(fn, x, gamma, beta)
    np.testing.assert_allclose(y.data, (x - mean) / np.sqrt(var + 2e-5) * gamma + beta, rtol=1e-13)
    np.testing.assert_array_equal(mean, before)


def test_batch_norm_float32_and_shape_errors():
    x = Variable(r(4, 3).astype(np.float32))
    g, b = Variable(np.ones(3, np.float32)), Variable(np.zeros(3, np.float32))
    y = N.batch_norm(x, g, b, np.zeros(3, np.float32), np.ones(3, np.float32))
    y.backward()
    assert y.dtype == x.grad.dtype == g.grad.dtype == np.float32
    with pytest.raises(ValueError, match=r'batch_norm: gamma has shape \(4,\) but x has shape \(4, 3\)'):
        N.batch_norm(x, np.ones(4), b, np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match=r'batch_norm: x must be \(N, C\) or \(N, C, H, W\)'):
        N.batch_norm(np.ones((2, 3, 4)), g, b, np.zeros(3), np.ones(3))


def test_batch_nrom_alias_warns_once():
    args = (np.ones((2, 3)), np.ones(3), np.zeros(3), np.zeros(3), np.ones(3))
    functions_norm._batch_nrom_warned = False
    with pytest.warns(DeprecationWarning, match='batch_nrom is a misspelling'):
        y = N.batch_nrom(*args)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        N.batch_nrom(*args)  # no second warning
    np.testing.assert_array_equal(y.data, N.batch_norm(*args).data)


def test_layer_norm():
    x, gamma, beta = r(2, 3, 4, low=-2, high=2), rng.uniform(0.5, 1.5, 4), r(4)
    y = N.layer_norm(Variable(x), Variable(gamma), Variable(beta))
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(y.data, (x - mu) / np.sqrt(var + 1e-5) * gamma + beta, rtol=1e-12)
    check_backward(N.layer_norm, x, gamma, beta)
    check_double_backward(N.layer_norm, x, gamma, beta, atol=1e-5)
    with pytest.raises(ValueError, match=r'layer_norm: gamma has shape \(3,\) but x has shape \(2, 3, 4\)'):
        N.layer_norm(x, np.ones(3), beta)


def test_rms_norm():
    x, gamma = r(3, 5, low=-2, high=2), rng.uniform(0.5, 1.5, 5)
    y = N.rms_norm(Variable(x), Variable(gamma), eps=1e-6)
    np.testing.assert_allclose(y.data, x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * gamma,
                               rtol=1e-13)
    check_backward(N.rms_norm, x, gamma)
    check_double_backward(N.rms_norm, x, gamma, atol=1e-5)
    x32 = Variable(x.astype(np.float32))
    y32 = N.rms_norm(x32, np.ones(5, np.float32))
    y32.backward()
    assert y32.dtype == x32.grad.dtype == np.float32


@pytest.mark.parametrize('fn', [N.rms_norm, N.layer_norm], ids=['rms', 'layer'])
def test_norms_without_affine_are_the_plain_normalisation(fn):
    x = r(2, 3, 5, low=-2, high=2)
    plain = fn(Variable(x))
    assert len(plain.creator.inputs) == 1  # no gain/bias inputs, nothing to learn
    if fn is N.rms_norm:
        ref = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5)
    else:
        ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(plain.data, ref, rtol=1e-12)
    check_backward(fn, x)
    check_double_backward(fn, x, atol=1e-5)
    with pytest.raises(ValueError, match='layer_norm: pass both gamma and beta, or neither'):
        N.layer_norm(x, np.ones(5))


def test_gelu_first_order_gradient_matches_the_recorded_one_in_float32():
    # the in-place first-order rule (arrays, tanh kept from forward) and the graph rule agree
    x = r(4, 6, low=-4, high=4).astype(np.float32)
    grads = []
    for create_graph in (False, True):
        xv = Variable(x.copy())
        y = N.gelu(xv)
        y.backward(create_graph=create_graph)
        grads.append(xv.grad.data)
    assert grads[0].dtype == np.float32
    np.testing.assert_allclose(grads[0], grads[1], rtol=2e-6, atol=1e-7)


# =============================================================================
# Embedding
# =============================================================================
def test_embed_id_values_gradient_and_checks():
    W = r(4, 3)
    ids = np.array([[1, 3], [1, 0]])
    y = N.embed_id(ids, Variable(W))
    np.testing.assert_array_equal(y.data, W[ids])
    check_backward(lambda w: N.embed_id(ids, w), W)
    Wv = Variable(W)
    N.embed_id(ids, Wv).sum().backward()
    np.testing.assert_array_equal(Wv.grad.data[:, 0], [1, 2, 0, 1])  # repeated ids add up
    with pytest.raises(TypeError, match=r'embed_id: ids must be integers, got dtype float64'):
        N.embed_id(np.array([0.0]), W)
    with pytest.raises(ValueError, match=r'embed_id: ids must be in \[0, 4\) for W of shape \(4, 3\)'):
        N.embed_id(np.array([4]), W)


# =============================================================================
# Second order through a small network: a gradient-norm penalty
# =============================================================================
def test_double_backprop_gradient_norm_penalty_through_linear_sigmoid_softmax_ce():
    x0 = r(4, 3)
    t = np.array([0, 2, 1, 2])
    W1_0, W2_0 = r(3, 5), r(5, 3)

    def penalty(W1, W2, create_graph):
        with using_config('enable_backprop', True):
            x = Variable(x0.copy())
            loss = N.softmax_cross_entropy(linear(N.sigmoid(linear(x, W1)), W2), t)
            loss.backward(create_graph=create_graph)
            gx = x.grad
            return (gx * gx).sum()  # ||dL/dx||^2, a function of W1 and W2

    W1, W2 = Variable(W1_0.copy()), Variable(W2_0.copy())
    p = penalty(W1, W2, create_graph=True)
    W1.cleargrad()
    W2.cleargrad()
    p.backward()

    def num(i, eps=1e-6):
        base = [W1_0, W2_0]
        g = np.zeros_like(base[i])
        for idx in np.ndindex(g.shape):
            vals = []
            for s in (eps, -eps):
                ws = [w.copy() for w in base]
                ws[i][idx] += s
                vals.append(float(penalty(Variable(ws[0]), Variable(ws[1]), False).data))
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        return g

    np.testing.assert_allclose(W1.grad.data, num(0), rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(W2.grad.data, num(1), rtol=1e-5, atol=1e-9)


def test_backward_without_create_graph_builds_no_graph():
    x = Variable(r(3, 4))
    loss = N.softmax_cross_entropy(N.sigmoid(x), np.array([0, 1, 2]))
    loss.backward()
    assert x.grad.creator is None
    assert Config.enable_backprop


# =============================================================================
# Class labels are checked on their values, for every integer dtype
# =============================================================================
@pytest.mark.parametrize('dtype', [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16])
@pytest.mark.parametrize('n_classes', [3, 300, 40000])
def test_negative_or_too_large_labels_are_refused_for_every_dtype(dtype, n_classes):
    x = np.zeros((1, n_classes))
    info = np.iinfo(dtype)
    bad = [v for v in (-1, info.min, n_classes, info.max) if info.min <= v <= info.max and not 0 <= v < n_classes]
    for value in bad:
        t = np.array([value], dtype=dtype)
        for fname, call in [('softmax_cross_entropy', lambda: N.softmax_cross_entropy(x, t)),
                            ('softmax_cross_entropy_simple', lambda: N.softmax_cross_entropy_simple(x, t)),
                            ('cross_entropy', lambda: N.cross_entropy(N.softmax(x), t)),
                            ('accuracy', lambda: N.accuracy(x, t))]:
            with pytest.raises(ValueError, match=rf'{fname}: labels must be in \[0, {n_classes}\) .* '
                                                 rf'got values from {value} to {value} \(dtype {np.dtype(dtype)}\)'):
                call()
    # the largest valid label of the dtype works (and gives the exact loss log C)
    top = min(n_classes - 1, info.max)
    loss = N.softmax_cross_entropy(x, np.array([top], dtype=dtype))
    assert float(loss.data) == pytest.approx(math.log(n_classes), rel=1e-12)


def test_int8_minus_one_is_not_the_last_class():
    # The reported case: 1000 classes, int8 label -1 was read as class 999.
    x = np.zeros((1, 1000))
    x[0, 999] = 5.0
    with pytest.raises(ValueError, match=r'softmax_cross_entropy: labels must be in \[0, 1000\)'):
        N.softmax_cross_entropy(x, np.array([-1], np.int8))


@pytest.mark.parametrize('ratio', ['0.5', None, True, [0.5]])
def test_dropout_ratio_must_be_a_number(ratio):
    with pytest.raises(TypeError, match=r'dropout: dropout_ratio must be a real number in \[0, 1\), got '):
        N.dropout(np.ones(3), ratio)
    with pytest.raises(ValueError, match=r'dropout: dropout_ratio must be in \[0, 1\), got 1.5'):
        N.dropout(np.ones(3), 1.5)
    assert N.dropout(np.ones(3), np.float32(0.0)).data.tolist() == [1, 1, 1]


def test_sigmoid_of_a_0d_array():
    # x * 0.5 on a 0-d array is a NumPy scalar; the in-place tanh used to fail on it.
    x = Variable(np.array(0.0))
    y = N.sigmoid(x)
    y.backward()
    assert y.data.shape == () and float(y.data) == 0.5
    assert float(x.grad.data) == 0.25
    x = Variable(np.array(-2.0))
    N.sigmoid(x).backward()
    s = 1 / (1 + np.exp(2.0))
    np.testing.assert_allclose(float(x.grad.data), s * (1 - s), rtol=1e-15)
