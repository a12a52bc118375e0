"""functions_math: elementwise math, shape helpers, reductions, linear."""
import math

import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import Parameter, Variable
from _checks import check_backward, check_double_backward

rng = np.random.default_rng(7)

ELEMENTWISE = [
    ('sin', F.sin, np.sin, (-3, 3)),
    ('cos', F.cos, np.cos, (-3, 3)),
    ('tan', F.tan, np.tan, (-1.2, 1.2)),
    ('tanh', F.tanh, np.tanh, (-3, 3)),
    ('exp', F.exp, np.exp, (-2, 2)),
    ('log', F.log, np.log, (0.2, 3)),
    ('sqrt', F.sqrt, np.sqrt, (0.2, 3)),
    ('abs', F.abs, np.abs, (0.1, 2)),
]


@pytest.mark.parametrize('name,fn,ref,domain', ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_elementwise_values_and_first_and_second_derivatives(name, fn, ref, domain):
    x = rng.uniform(*domain, (3, 4))
    if name == 'abs':
        x = x * rng.choice([-1, 1], x.shape)
    np.testing.assert_allclose(fn(Variable(x)).data, ref(x), rtol=1e-15)
    check_backward(fn, x)
    check_double_backward(fn, x)


@pytest.mark.parametrize('name,fn,ref,domain', ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_elementwise_keeps_float32(name, fn, ref, domain):
    x = Variable(rng.uniform(*domain, 5).astype(np.float32))
    y = fn(x)
    y.sum().backward()
    assert y.dtype == x.grad.dtype == np.float32


def test_closed_form_derivatives():
    x = Variable(np.array(0.5))
    F.sin(x).backward()
    assert math.isclose(x.grad.data, math.cos(0.5), rel_tol=1e-15)
    x.cleargrad()
    F.exp(x).backward()
    assert math.isclose(x.grad.data, math.exp(0.5), rel_tol=1e-15)
    x.cleargrad()
    F.log(x).backward()
    assert x.grad.data == 2.0
    x.cleargrad()
    F.sqrt(x).backward()
    assert math.isclose(x.grad.data, 0.5 / math.sqrt(0.5), rel_tol=1e-15)


def test_third_derivative_of_sin_is_minus_cos():
    x = Variable(np.array(1.0))
    y = F.sin(x)
    y.backward(create_graph=True)
    for _ in range(2):
        gx = x.grad
        x.cleargrad()
        gx.backward(create_graph=True)
    assert math.isclose(x.grad.data, -math.cos(1.0), rel_tol=1e-15)


def test_clip():
    x = np.array([-2.0, -0.5, 0.3, 0.9, 3.0])
    y = F.clip(Variable(x), -1.0, 1.0)
    np.testing.assert_array_equal(y.data, np.clip(x, -1, 1))
    check_backward(lambda v: F.clip(v, -1.0, 1.0), x)


@pytest.mark.parametrize('fn,ref', [(F.maximum, np.maximum), (F.minimum, np.minimum)])
def test_maximum_minimum_broadcasting(fn, ref):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    np.testing.assert_array_equal(fn(Variable(a), Variable(b)).data, ref(a, b))
    check_backward(fn, a, b)
    check_backward(lambda v: fn(v, 0.1), a)


def test_maximum_tie_splits_the_gradient_like_central_differences():
    a, b = Variable(np.array([1.0, 2.0])), Variable(np.array([1.0, 0.0]))
    F.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.data, [0.5, 1.0])
    np.testing.assert_array_equal(b.grad.data, [0.5, 0.0])


def test_where():
    c = np.array([[True, False, True], [False, False, True]])
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3,))
    np.testing.assert_array_equal(F.where(c, Variable(a), Variable(b)).data, np.where(c, a, b))
    check_backward(lambda x, y: F.where(c, x, y), a, b)
    check_backward(lambda x: F.where(c, x, 0.0), a)
    check_backward(lambda y: F.where(c, 1.0, y), b)


def test_expand_dims_flatten():
    x = rng.standard_normal((2, 3, 4))
    assert F.expand_dims(Variable(x), 1).shape == (2, 1, 3, 4)
    assert F.expand_dims(Variable(x), -1).shape == (2, 3, 4, 1)
    assert F.flatten(Variable(x)).shape == (2, 12)
    check_backward(lambda v: F.flatten(F.expand_dims(v, 0)), x)


@pytest.mark.parametrize('axis', [0, 1, -1])
def test_concat_and_stack(axis):
    xs = [rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), rng.standard_normal((2, 3))]
    np.testing.assert_array_equal(F.concat([Variable(x) for x in xs], axis).data,
                                  np.concatenate(xs, axis))
    np.testing.assert_array_equal(F.stack([Variable(x) for x in xs], axis).data, np.stack(xs, axis))
    check_backward(lambda *v: F.concat(v, axis), *xs)
    check_backward(lambda *v: F.stack(v, axis), *xs)


def test_concat_mixed_sizes():
    a, b = rng.standard_normal((2, 1)), rng.standard_normal((2, 4))
    check_backward(lambda x, y: F.concat([x, y], axis=1), a, b)


@pytest.mark.parametrize('axis,keepdims', [(None, False), (0, False), (1, True), ((0, 1), False)])
def test_average_and_mean(axis, keepdims):
    x = rng.standard_normal((3, 4, 2))
    np.testing.assert_allclose(F.average(Variable(x), axis, keepdims).data,
                               x.mean(axis=axis, keepdims=keepdims))
    assert F.mean is F.average
    check_backward(lambda v: F.mean(v, axis, keepdims), x)


def test_linear_matches_linear_simple_and_seed_affine_example():
    X = np.array([[1.0, 2.0]])
    W = np.array([[0.3, 0.5, 0.1], [0.2, 0.4, 0.6]])
    b = np.array([0.1, 0.0, -0.1])
    for linear in (F.linear, F.linear_simple):
        x, w, bb = Variable(X.copy()), Variable(W.copy()), Variable(b.copy())
        y = linear(x, w, bb)
        np.testing.assert_allclose(y.data, [[0.8, 1.3, 1.2]])
        y.sum().backward()
        np.testing.assert_allclose(w.grad.data, [[1, 1, 1], [2, 2, 2]])
        np.testing.assert_allclose(bb.grad.data, [1, 1, 1])
        np.testing.assert_allclose(x.grad.data, [[0.9, 1.2]])


def test_linear_gradients_and_no_bias():
    x, W, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)
    check_backward(F.linear, x, W, b)
    check_backward(lambda x, W: F.linear(x, W), x, W)
    check_double_backward(lambda x, W, b: F.linear(x, W, b) ** 2, x, W, b)


def test_linear_skips_the_data_batch_gradient():
    W, b = Parameter(rng.standard_normal((3, 2))), Parameter(np.zeros(2))
    y = F.linear(rng.standard_normal((4, 3)), W, b)
    gx, gW, gb = y.creator.backward(Variable(np.ones((4, 2))))
    assert gx is None and gW.shape == (3, 2) and gb.shape == (2,)


def test_linear_with_batch_axes():
    x, W, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    np.testing.assert_allclose(F.linear(Variable(x), Variable(W), Variable(b)).data, x @ W + b)
    check_backward(F.linear, x, W, b)
    check_double_backward(lambda x, W, b: F.linear(x, W, b) ** 2, x, W, b)


# =============================================================================
# Argument checks: expand_dims axis, mean of nothing
# =============================================================================
@pytest.mark.parametrize('axis', [3, 10, -4, -10])
def test_expand_dims_out_of_range_axis_is_numpys_axis_error(axis):
    x = Variable(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=rf'expand_dims: axis {axis} is out of bounds for the 2-D input of '
                                         rf'shape \(2, 3\) \(valid: -3 to 2\)') as info:
        F.expand_dims(x, axis)
    assert isinstance(info.value, getattr(np, 'exceptions', np).AxisError)
    with pytest.raises(getattr(np, 'exceptions', np).AxisError):
        np.expand_dims(x.data, axis)  # the same verdict as NumPy


@pytest.mark.parametrize('axis', [0, 1, 2, -1, -2, -3])
def test_expand_dims_valid_axes_match_numpy(axis):
    x = np.arange(6.0).reshape(2, 3)
    assert F.expand_dims(x, axis).shape == np.expand_dims(x, axis).shape
    with pytest.raises(TypeError, match=r"expand_dims: axis must be an int, got 1.0"):
        F.expand_dims(x, 1.0)


def test_mean_of_an_empty_array_is_nan_with_numpys_warning():
    x = Variable(np.zeros((0, 3)))
    with pytest.warns(RuntimeWarning, match='Mean of empty slice'):
        y = F.mean(x)
    assert np.isnan(y.data) and y.shape == ()
    y.backward()
    assert x.grad.shape == (0, 3)
    with pytest.warns(RuntimeWarning, match='Mean of empty slice'):
        y0 = F.mean(x, axis=0)
    with pytest.warns(RuntimeWarning):
        ref = np.mean(x.data, axis=0)
    np.testing.assert_array_equal(y0.data, ref)  # [nan nan nan]
    y1 = F.mean(x, axis=1)  # nothing to average, nothing to warn about: empty, as NumPy
    assert y1.shape == (0,) == np.mean(x.data, axis=1).shape
