"""One derivative convention per op at its boundary points, the same in reverse and forward mode.

The table of these rules is in docs/autodiff_modes.md ("경계에서의 미분 규칙").  For each op the
test evaluates the exact value the rule gives (closed form), by ``backward`` (first and second
order where the op has one), by ``jvp``, and by the forward- and reverse-mode Jacobians.
"""
import warnings

import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import Variable
from dezero_kr.autograd import jacobian, jvp

INF, NAN = np.inf, np.nan


def _reverse(f, x, gy=None):
    x = Variable(np.array(x, dtype=np.float64))
    y = f(x)
    y.grad = Variable(np.ones_like(y.data) if gy is None else np.array(gy, dtype=np.float64))
    y.backward()
    return x.grad.data


def _forward(f, x, dx=None):
    x = np.array(x, dtype=np.float64)
    _, t = jvp(f, (x,), (np.ones_like(x) if dx is None else np.array(dx, dtype=np.float64),))
    return t.data


def _both(f, x, expected, seed=None):
    """Reverse (seed ``seed``) and forward (tangent ``seed``) give ``expected`` elementwise, nan where nan."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)  # 1/0 at the boundary is the point here
        for got in (_reverse(f, x, seed), _forward(f, x, seed)):
            np.testing.assert_array_equal(got, expected)


# =============================================================================
# Kinks and boundaries: the value the rule gives, in both modes
# =============================================================================
def test_relu_slope_is_0_at_0_and_1_above():
    _both(F.relu, [-1.0, 0.0, 2.0], [0.0, 0.0, 1.0])


def test_leaky_relu_slope_at_0_is_the_negative_side():
    _both(lambda x: F.leaky_relu(x, 0.2), [-1.0, 0.0, 2.0], [0.2, 0.2, 1.0])


def test_abs_slope_is_0_at_0():
    _both(F.abs, [-3.0, 0.0, 3.0], [-1.0, 0.0, 1.0])


def test_clip_slope_is_1_at_both_bounds():
    _both(lambda x: F.clip(x, -1.0, 2.0), [-1.5, -1.0, 0.0, 2.0, 2.5], [0.0, 1.0, 1.0, 1.0, 0.0])


def test_elementwise_maximum_and_minimum_split_ties_in_half():
    a = np.array([1.0, 2.0, 3.0])
    _both(lambda x: F.maximum(x, a), [0.0, 2.0, 5.0], [0.0, 0.5, 1.0])
    _both(lambda x: F.minimum(x, a), [0.0, 2.0, 5.0], [1.0, 0.5, 0.0])
    # the two shares of a tie add up to the whole gradient: d/dx max(x, x) = 1
    _both(lambda x: F.maximum(x, x * 1.0), [2.0], [1.0])


def test_sqrt_at_0_is_inf_and_log_at_0_is_inf():
    # PyTorch's values: d sqrt(x)/dx = 1 / (2 sqrt(x)) -> inf; d log(x)/dx = 1/x -> inf
    _both(F.sqrt, [0.0, 4.0], [INF, 0.25])
    _both(F.log, [0.0, 2.0], [INF, 0.5])


def test_sqrt_at_0_with_a_zero_upstream_gradient_is_nan_in_both_modes():
    # 0 / 0: nan, as PyTorch (use F.where on a safe input to avoid it, see the docs)
    _both(F.sqrt, [0.0], [NAN], seed=[0.0])


def test_second_derivatives_at_the_kinks():
    for f, x, expected in [(F.relu, [0.0, 1.0], [0.0, 0.0]), (F.abs, [0.0, -2.0], [0.0, 0.0]),
                           (lambda x: F.clip(x, -1.0, 1.0), [-1.0, 1.0], [0.0, 0.0])]:
        x = Variable(np.array(x))
        y = F.sum(f(x) * x)  # d/dx = f(x) + x f'(x); d2/dx2 = 2 f'(x) + x f''(x), f'' = 0 here
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        F.sum(gx).backward()
        slope = _reverse(f, x.data)
        np.testing.assert_array_equal(x.grad.data, 2 * slope + np.array(expected))


# =============================================================================
# A blocked element gets an exact 0 even when the incoming gradient is inf or nan
# =============================================================================
MASKING = [
    ('relu', F.relu, [-1.0, 0.0, 2.0], [False, False, True]),
    ('clip', lambda x: F.clip(x, 0.0, 1.0), [-1.0, 0.5, 2.0], [False, True, False]),
    ('maximum', lambda x: F.maximum(x, np.zeros(3)), [-1.0, 0.5, 2.0], [False, True, True]),
    ('minimum', lambda x: F.minimum(x, np.zeros(3)), [-1.0, 0.5, 2.0], [True, False, False]),
    ('where', lambda x: F.where(np.array([True, False, True]), x, np.zeros(3)), [1.0, 2.0, 3.0],
     [True, False, True]),
    ('masked_fill', lambda x: F.masked_fill(x, np.array([False, True, False]), -np.inf), [1.0, 2.0, 3.0],
     [True, False, True]),
]


@pytest.mark.parametrize('name, f, x, passes', MASKING, ids=[m[0] for m in MASKING])
@pytest.mark.parametrize('bad', [INF, -INF, NAN])
def test_blocked_elements_get_exact_zero_from_inf_or_nan(name, f, x, passes, bad):
    seed = [bad, bad, bad]
    expected = np.where(passes, bad, 0.0)  # passed through unchanged, or blocked: 0 (PyTorch)
    _both(f, x, expected, seed=seed)
    # the same with a graph recorded (create_graph) and through the plain array path
    xv = Variable(np.array(x))
    y = f(xv)
    y.grad = Variable(np.array(seed))
    y.backward(create_graph=True)
    np.testing.assert_array_equal(xv.grad.data, expected)


def test_relu_after_log_of_zero_gives_zero_not_nan():
    # The realistic case: log(relu(x)) at x <= 0 sends inf back; relu blocks it.
    x = Variable(np.array([-1.0, 0.0, 1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)
        F.sum(F.relu(x) + 0 * F.log(F.relu(x))).backward()
    assert x.grad.data[0] == 0.0 and x.grad.data[2] == 1.0


# =============================================================================
# Forward- and reverse-mode Jacobians agree at the boundary points
# =============================================================================
BOUNDARY_CASES = [
    ('relu', F.relu, [-1.0, 0.0, 0.0, 2.0]),
    ('leaky_relu', F.leaky_relu, [-1.0, 0.0, 2.0]),
    ('abs', F.abs, [-1.0, 0.0, 2.0]),
    ('clip', lambda x: F.clip(x, 0.0, 1.0), [0.0, 1.0, 0.5, -1.0]),
    ('maximum-tie', lambda x: F.maximum(x, np.array([0.0, 1.0, 2.0])), [0.0, 1.0, 3.0]),
    ('minimum-tie', lambda x: F.minimum(x, np.array([0.0, 1.0, 2.0])), [0.0, 1.0, 3.0]),
    ('maximum-self', lambda x: F.maximum(x, x[::-1]), [1.0, 5.0, 1.0]),
    ('softmax-neg-inf', lambda x: F.softmax(F.masked_fill(x, np.array([[False, True, False]]), -np.inf)),
     [[1.0, 2.0, 3.0]]),
    ('log_softmax', lambda x: F.log_softmax(x), [[0.0, 0.0, 0.0]]),
    ('pooling-tie', lambda x: F.pooling(F.reshape(x, (1, 1, 2, 2)), 2, 2), [1.0, 1.0, 0.0, 1.0]),
    ('average_pooling', lambda x: F.average_pooling(F.reshape(x, (1, 1, 2, 2)), 2, 2), [1.0, 1.0, 0.0, 1.0]),
    ('gelu', F.gelu, [0.0]),
    ('sigmoid', F.sigmoid, [0.0, -800.0, 800.0]),
]


@pytest.mark.parametrize('name, f, x', BOUNDARY_CASES, ids=[c[0] for c in BOUNDARY_CASES])
def test_forward_and_reverse_jacobians_agree_at_boundaries(name, f, x):
    x = np.array(x, dtype=np.float64)
    fwd = jacobian(f, x, mode='forward')
    rev = jacobian(f, x, mode='reverse')
    np.testing.assert_array_equal(fwd, rev)


def test_max_pooling_routes_a_tie_to_the_first_maximum_in_both_modes():
    x = np.array([[[[1.0, 3.0], [3.0, 0.0]]]])
    J = jacobian(lambda v: F.pooling(v, 2, 2), x, mode='forward')
    np.testing.assert_array_equal(J.reshape(4), [0.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(jacobian(lambda v: F.pooling(v, 2, 2), x, mode='reverse').reshape(4),
                                  [0.0, 1.0, 0.0, 0.0])


# =============================================================================
# NaN is the maximum (and the minimum): the gradient goes to the NaN (issue 23)
# =============================================================================
def _jacobians(f, x):
    x = np.array(x, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)
        return jacobian(f, x, mode='forward'), jacobian(f, x, mode='reverse')


@pytest.mark.parametrize('f', [F.max, F.min], ids=['max', 'min'])
def test_max_and_min_send_the_gradient_to_the_nan_in_both_modes(f):
    # PyTorch: torch.tensor([1., nan, 3.]).max() backward gives [0, 1, 0] (was [0, 0, 0])
    for J in _jacobians(f, [1.0, NAN, 3.0]):
        np.testing.assert_array_equal(J, [0.0, 1.0, 0.0])
    # along an axis: a row with two NaNs splits the gradient between them (as a tie);
    # a row without NaN is unchanged
    x = [[NAN, 2.0, NAN], [1.0, 2.0, 0.5]]
    extreme = 1 if f is F.max else 2
    for J in _jacobians(lambda v: f(v, axis=1), x):
        np.testing.assert_array_equal(J[0], [[0.5, 0.0, 0.5], [0.0, 0.0, 0.0]])
        np.testing.assert_array_equal(J[1, 1], np.eye(3)[extreme])


def test_max_pooling_routes_a_window_with_a_nan_to_its_first_nan_in_both_modes():
    # was: the first position of the window (an element that is not the maximum)
    f = lambda v: F.pooling(F.reshape(v, (1, 1, 2, 4)), 2, 2)  # noqa: E731
    x = [1.0, 3.0, NAN, 0.0,
         NAN, 0.0, 2.0, NAN]
    for J in _jacobians(f, x):
        np.testing.assert_array_equal(J.reshape(2, 8), [[0, 0, 0, 0, 1, 0, 0, 0],
                                                        [0, 0, 1, 0, 0, 0, 0, 0]])


def test_elementwise_maximum_and_minimum_send_the_gradient_to_the_nan():
    other = np.array([1.0, NAN, NAN, 2.0])
    x = [NAN, 1.0, NAN, 2.0]
    for f in (F.maximum, F.minimum):  # NaN wins either way; two NaNs (or a tie) split it
        _both(lambda v: f(v, other), x, [1.0, 0.0, 0.5, 0.5])
        _both(lambda v: f(other, v), x, [1.0, 0.0, 0.5, 0.5])


def test_huge_finite_gradients_pass_unchanged():
    # The finiteness check (a dot product) overflows for values this large; the repair pass
    # that follows must then leave every finite value as it is.
    x = Variable(np.array([-1.0, 2.0, 3.0], dtype=np.float32))
    y = F.relu(x)
    y.grad = Variable(np.array([3e38, 3e38, -3e38], dtype=np.float32))
    y.backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.data, np.array([0, 3e38, -3e38], dtype=np.float32))


@pytest.mark.parametrize('n', [3, 5000])  # both ways of checking for non-finite values
def test_mask_check_is_silent_and_exact_for_huge_finite_and_for_inf(n):
    x = Variable(np.where(np.arange(n) % 2 == 0, -1.0, 1.0).astype(np.float32))
    g = np.full(n, 3e38, dtype=np.float32)
    y = F.relu(x)
    y.grad = Variable(g)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        y.backward()
    np.testing.assert_array_equal(x.grad.data, np.where(np.arange(n) % 2 == 0, 0, g))
    g = g.copy()
    g[1] = np.inf
    g[0] = np.nan
    x.cleargrad()
    y.grad = Variable(g)
    y.backward()
    expected = np.where(np.arange(n) % 2 == 0, 0, 3e38).astype(np.float32)
    expected[1] = np.inf
    np.testing.assert_array_equal(x.grad.data, expected)
