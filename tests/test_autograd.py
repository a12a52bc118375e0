"""grad / vjp / jvp / jacobian / hessian / detect_anomaly / gradcheck (dezero_kr.autograd)."""
import sys

import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import Constant, Function, Variable, core, functions_nn, hooks, no_grad
from dezero_kr.autograd import anomaly
from dezero_kr.autograd import (AnomalyError, GradcheckError, detect_anomaly, grad, gradcheck,
                                hessian, jacobian, jvp, vjp)
from dezero_kr.functions_math import Cos, Sin


def _rand(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def _line():
    """The line number of the caller's next line."""
    return sys._getframe(1).f_lineno + 1


# =============================================================================
# grad
# =============================================================================
def test_grad_seed_worked_example():
    # Seed 000: u = x*y, L = u*u + u, x=2, y=3 -> dL/du = 13, dL/dx = 39, dL/dy = 26
    x, y = Variable(np.array(2.0)), Variable(np.array(3.0))
    u = x * y
    L = u * u + u
    gx, gy, gu = grad(L, [x, y, u])
    assert (gx.data, gy.data, gu.data) == (39.0, 26.0, 13.0)
    gx2, = grad(L, x, grad_outputs=np.array(2.0))
    assert gx2.data == 78.0


def test_grad_leaves_every_grad_attribute_untouched():
    x, w = Variable(_rand(3)), Variable(_rand(3, seed=1))
    old = Variable(np.full(3, 7.0))
    x.grad = old
    h = x * w
    h.retain_grad()
    y = F.sum(F.sin(h))
    result = grad(y, [x])
    assert x.grad is old and np.all(old.data == 7.0)
    assert w.grad is None and h.grad is None and y.grad is None
    np.testing.assert_allclose(result[0].data, np.cos(x.data * w.data) * w.data)
    assert isinstance(result, tuple)


def test_grad_returns_a_tuple_for_several_inputs_and_outputs():
    x = Variable(_rand(2, 3))
    a, b = F.sum(x * x), F.sum(F.exp(x))
    gx, = grad([a, b], [x])
    np.testing.assert_allclose(gx.data, 2 * x.data + np.exp(x.data))
    gx, = grad([a, a], x)  # the same output twice: its seeds add up
    np.testing.assert_allclose(gx.data, 4 * x.data)


def test_grad_of_an_intermediate_and_of_an_output_itself():
    x = Variable(_rand(3))
    h = F.exp(x)
    y = F.sum(h * h)
    gh, gy = grad(y, [h, y])
    np.testing.assert_allclose(gh.data, 2 * h.data)
    assert gy.data == 1.0


def test_grad_non_scalar_output_needs_grad_outputs():
    x = Variable(_rand(3))
    y = x * 2
    with pytest.raises(RuntimeError, match=r'output #0 has shape \(3,\).*grad_outputs'):
        grad(y, x)
    gx, = grad(y, x, grad_outputs=[np.array([1.0, 2.0, 3.0])])
    np.testing.assert_array_equal(gx.data, [2.0, 4.0, 6.0])


def test_grad_checks_grad_outputs_shape_and_count():
    x = Variable(_rand(3))
    y = x * 2
    with pytest.raises(ValueError, match=r'grad_outputs\[0\] has shape \(2,\), but output #0 '
                                         r'has shape \(3,\)'):
        grad(y, x, grad_outputs=np.ones(2))
    with pytest.raises(ValueError, match='2 grad_outputs for 1 outputs'):
        grad([y], x, grad_outputs=[np.ones(3), np.ones(3)])


def test_grad_unused_inputs():
    x, z = Variable(_rand(3)), Variable(_rand(2))
    y = F.sum(x * x)
    with pytest.raises(RuntimeError, match=r'input #1 \(shape \(2,\)\) was not used.*allow_unused'):
        grad(y, [x, z])
    gx, gz = grad(y, [x, z], allow_unused=True)
    assert gz is None
    gx, gz = grad(y, [x, z], materialize_grads=True)
    np.testing.assert_array_equal(gz.data, np.zeros(2))


def test_grad_rejects_constants_and_non_variables():
    x = Variable(_rand(2))
    c = Constant(_rand(2))
    y = F.sum(x * c)
    with pytest.raises(ValueError, match='input #0 is a Constant'):
        grad(y, c)
    with pytest.raises(TypeError, match='input #0 must be a Variable'):
        grad(y, x.data)


def test_grad_create_graph_gives_higher_derivatives():
    x = Variable(np.array([0.5, 2.0]))
    y = F.sum(x ** 3)
    g, = grad(y, x, create_graph=True)
    assert g.creator is not None
    g2, = grad(F.sum(g), x, create_graph=True)
    np.testing.assert_allclose(g2.data, 6 * x.data)
    g3, = grad(F.sum(g2), x, retain_graph=False)
    np.testing.assert_allclose(g3.data, [6.0, 6.0])
    g_again, = grad(y, x)  # the graph is never freed by a backward pass
    np.testing.assert_allclose(g_again.data, 3 * x.data ** 2)
    assert grad(y, x)[0].creator is None


def test_grad_keeps_float32():
    x = Variable(_rand(3).astype(np.float32))
    gx, = grad(F.sum(F.tanh(x) * 2.5), x)
    assert gx.data.dtype == np.float32


# =============================================================================
# vjp
# =============================================================================
def test_vjp_matches_the_transposed_jacobian():
    A = _rand(4, 3, seed=3)
    x, v = _rand(3), _rand(4, seed=4)
    y, g = vjp(lambda x: F.tanh(F.matmul(Constant(A), x)), x, v=v)
    expected = (v * (1 - np.tanh(A @ x) ** 2)) @ A
    np.testing.assert_allclose(y.data, np.tanh(A @ x))
    np.testing.assert_allclose(g.data, expected)


def test_vjp_several_primals_and_unused_ones():
    x, w, unused = _rand(2, 3), _rand(3, 2, seed=1), _rand(5)
    y, (gx, gw, gu) = vjp(lambda x, w, u: F.sum(F.matmul(x, w)), x, w, unused)
    np.testing.assert_allclose(gx.data, np.ones((2, 2)) @ w.T)
    np.testing.assert_allclose(gw.data, x.T @ np.ones((2, 2)))
    np.testing.assert_array_equal(gu.data, np.zeros(5))
    with pytest.raises(RuntimeError, match='grad_outputs'):
        vjp(lambda x: x * 2, x)


# =============================================================================
# jvp (forward mode)
# =============================================================================
def _reverse_jacobian(f, x):
    return jacobian(f, x, mode='reverse')


RANDOM_FUNCTIONS = [
    lambda x: F.sin(x) * F.exp(-x * x),
    lambda x: F.tanh(F.matmul(x, x.T)) + F.sum(x, axis=0),
    lambda x: F.sum(F.log(1 + x * x), axis=1, keepdims=True) / F.sqrt(x * x + 1),
    lambda x: F.concat([F.max(x, axis=1), F.min(x, axis=0)], axis=0) ** 2,
    lambda x: F.reshape(F.transpose(x) * 3 - 1 / (2 + x.T), (-1,))[1:5],
    lambda x: F.where(x.data > 0, x * x, F.cos(x)) + F.broadcast_to(F.sum(x), x.shape),
    lambda x: F.linear(F.tanh(x), x.T, F.sum(x, axis=0)) ** 3,
]


@pytest.mark.parametrize('k', range(len(RANDOM_FUNCTIONS)))
def test_jvp_equals_J_v_from_reverse_mode(k):
    f = RANDOM_FUNCTIONS[k]
    x = _rand(3, 3, seed=10 + k)
    v = _rand(3, 3, seed=20 + k)
    y, t = jvp(f, (x,), (v,))
    J = _reverse_jacobian(f, x)
    expected = J.reshape(y.data.size, x.size) @ v.ravel()
    np.testing.assert_allclose(t.data.ravel(), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y.data, f(Variable(x)).data)


def test_jvp_several_primals_sums_the_directional_derivatives():
    x, w = _rand(2, 3), _rand(3, 4, seed=1)
    dx, dw = _rand(2, 3, seed=2), _rand(3, 4, seed=3)
    f = lambda x, w: F.tanh(F.matmul(x, w))  # noqa: E731
    y, t = jvp(f, (x, w), (dx, dw))
    expected = (1 - np.tanh(x @ w) ** 2) * (dx @ w + x @ dw)
    np.testing.assert_allclose(t.data, expected)


def test_jvp_makes_no_reverse_pass_and_runs_rules_once_per_op():
    counts = {'backward': 0, 'sin_jvp': 0, 'cos_jvp': 0}

    class Counter(hooks.Observer):
        def on_forward(self, f, inputs, outputs):
            pass

        def on_backward(self, f, gys, gxs):
            counts['backward'] += 1

    sin_jvp, cos_jvp = Sin.jvp, Cos.jvp

    def counting(name, rule):
        def wrapped(self, *ts):
            counts[name] += 1
            return rule(self, *ts)
        return wrapped

    Sin.jvp, Cos.jvp = counting('sin_jvp', sin_jvp), counting('cos_jvp', cos_jvp)
    try:
        with core.observing(Counter()):
            _, t = jvp(lambda x: F.sin(F.sin(x)), (_rand(3),), (np.ones(3),))
    finally:
        Sin.jvp, Cos.jvp = sin_jvp, cos_jvp
    # Sin's rule calls cos(x): with propagation paused inside the rule, Cos.jvp never runs
    assert counts == {'backward': 0, 'sin_jvp': 2, 'cos_jvp': 0}


def test_jvp_without_a_graph_under_no_grad():
    x = Variable(_rand(4))
    with no_grad():
        y, t = jvp(lambda x: F.exp(x) * F.sin(x), (x,), (np.ones(4),))
    assert y.creator is None
    ex, s, c = np.exp(x.data), np.sin(x.data), np.cos(x.data)
    np.testing.assert_allclose(t.data, ex * s + ex * c)


def test_jvp_returns_zero_tangents_for_independent_outputs_and_tuples():
    x, c = _rand(3), Variable(_rand(2))
    y, (t1, t2) = jvp(lambda x: (x * 2, c * 3), (x,), (np.ones(3),))
    np.testing.assert_array_equal(t1.data, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(t2.data, np.zeros(2))
    assert isinstance(y, tuple)


def test_jvp_keeps_float32():
    x = _rand(3).astype(np.float32)
    y, t = jvp(lambda x: F.tanh(x) * 2.0, (x,), (np.ones(3),))
    assert t.data.dtype == np.float32 and y.data.dtype == np.float32


def test_nested_jvp_has_no_perturbation_confusion():
    # d/dx [ x * d/dy (x + y) ] = d/dx [x * 1] = 1; confusing the two tangents gives 2.
    def outer(x):
        _, d = jvp(lambda y: x + y, (Variable(np.array(2.0)),), (np.array(1.0),))
        return x * d
    _, t = jvp(outer, (np.array(1.0),), (np.array(1.0),))
    assert t.data == 1.0


def test_nested_jvp_gives_second_directional_derivatives():
    x, u, v = _rand(3), _rand(3, seed=1), _rand(3, seed=2)
    f = lambda x: F.sum(F.sin(x) * x)  # noqa: E731

    def df_v(x):
        return jvp(f, (x,), (v,))[1]
    _, uHv = jvp(df_v, (x,), (u,))
    H = hessian(f, x)
    assert uHv.data == pytest.approx(u @ H @ v, rel=1e-12)


def test_nested_jvp_and_hessian_are_exact_under_no_grad():
    # functions_nn's rules use raw arrays when nothing is recorded; an outer level
    # must still see the inner rule's local derivatives as ops.
    nn = functions_nn
    x = np.array([0.3, -1.2])
    s = 1 / (1 + np.exp(-x))
    exact = s * (1 - s) * (1 - 2 * s)

    def first(x):
        return jvp(nn.sigmoid, (x,), (np.ones(2),))[1]
    with no_grad():
        _, second = jvp(first, (x,), (np.ones(2),))
        H = hessian(lambda x: F.sum(nn.sigmoid(x)), x)
    np.testing.assert_allclose(second.data, exact)
    np.testing.assert_allclose(H, np.diag(exact))


def test_jvp_of_a_gradient_needs_create_graph():
    x = _rand(3)
    with pytest.raises(RuntimeError, match='without create_graph=True'):
        jvp(lambda x: grad(F.sum(F.sin(x) * x), x)[0], (x,), (np.ones(3),))
    _, t = jvp(lambda x: grad(F.sum(F.sin(x)), x, create_graph=True)[0], (x,), (np.ones(3),))
    np.testing.assert_allclose(t.data, -np.sin(x))


def test_jvp_argument_errors():
    x = _rand(3)
    with pytest.raises(ValueError, match=r'tangent #0 has shape \(2,\).*shape \(3,\)'):
        jvp(F.sin, (x,), (np.ones(2),))
    with pytest.raises(ValueError, match='2 primals but 1 tangents'):
        jvp(F.add, (x, x), (x,))
    v = Variable(x)
    with pytest.raises(ValueError, match='primal #1 is the same Variable'):
        jvp(F.add, (v, v), (x, x))
    with pytest.raises(TypeError, match='must return a Variable'):
        jvp(lambda x: x.data, (x,), (x,))


class _BadShapeRule(Function):
    __slots__ = ()

    def forward(self, x):
        return x * 2

    def backward(self, gy):
        return gy * 2

    def jvp(self, dx):
        return F.sum(dx)


class _NoRule(Function):
    __slots__ = ()

    def forward(self, x):
        return x + 1

    def backward(self, gy):
        return gy


def test_jvp_rule_errors_name_the_function():
    with pytest.raises(ValueError, match=r'_BadShapeRule.jvp: the tangent of output #0 has shape '
                                         r'\(\).*\(3,\)'):
        jvp(lambda x: _BadShapeRule()(x), (_rand(3),), (np.ones(3),))
    with pytest.raises(NotImplementedError, match='_NoRule.jvp'):
        jvp(lambda x: _NoRule()(x), (_rand(3),), (np.ones(3),))


class _SplitHalves(Function):
    """A two-output Function: (x[:n], x[n:] * 2)."""
    __slots__ = ()

    def forward(self, x):
        n = len(x) // 2
        return x[:n], x[n:] * 2

    def backward(self, g0, g1):
        return F.concat([g0, g1 * 2])

    def jvp(self, dx):
        n = len(dx) // 2
        return dx[:n], dx[n:] * 2


def test_jvp_through_a_multi_output_function_with_and_without_a_graph():
    x, v = _rand(4), np.array([1.0, 2.0, 3.0, 4.0])
    for grad_mode in (True, False):
        with core.using_config('enable_backprop', grad_mode):
            (a, b), (ta, tb) = jvp(lambda x: _SplitHalves()(x), (x,), (v,))
        np.testing.assert_array_equal(ta.data, [1.0, 2.0])
        np.testing.assert_array_equal(tb.data, [6.0, 8.0])


# =============================================================================
# jacobian and hessian
# =============================================================================
def test_jacobian_of_a_linear_map_is_its_matrix_in_every_mode():
    A = _rand(4, 3, seed=5)
    f = lambda x: F.matmul(Constant(A), x)  # noqa: E731
    for mode in ('auto', 'forward', 'reverse'):
        np.testing.assert_allclose(jacobian(f, _rand(3), mode=mode), A)


def test_jacobian_shape_is_out_shape_plus_in_shape():
    x = _rand(2, 3)
    f = lambda x: F.sum(x, axis=0) * F.sum(x)  # noqa: E731
    Jf, Jr = jacobian(f, x, mode='forward'), jacobian(f, x, mode='reverse')
    assert Jf.shape == (3, 2, 3)
    np.testing.assert_allclose(Jf, Jr)


def _counting(f):
    def wrapped(x):
        wrapped.calls += 1
        return f(x)
    wrapped.calls = 0
    return wrapped


def test_jacobian_auto_picks_the_cheaper_mode():
    wide = _counting(lambda x: F.concat([x, x, x]))      # 2 inputs -> 6 outputs: 2 JVPs
    jacobian(wide, _rand(2))
    assert wide.calls == 1 + 2
    narrow = _counting(lambda x: F.sum(x * x, axis=0))   # 6 inputs -> 2 outputs: 1 forward
    jacobian(narrow, _rand(3, 2))
    assert narrow.calls == 1
    with pytest.raises(ValueError, match="mode must be 'auto', 'forward' or 'reverse'"):
        jacobian(narrow, _rand(2), mode='central')


def test_hessian_of_a_quadratic_is_the_symmetric_part():
    A = _rand(3, 3, seed=6)  # not symmetric
    H = hessian(lambda x: 0.5 * F.sum(x * F.matmul(Constant(A), x)), _rand(3, seed=7))
    np.testing.assert_allclose(H, (A + A.T) / 2, atol=1e-14)


def test_hessian_of_sum_sin_and_of_rosenbrock():
    x = _rand(4)
    np.testing.assert_allclose(hessian(lambda x: F.sum(F.sin(x)), x), np.diag(-np.sin(x)))
    a, b = 1.2, -0.7

    def rosenbrock(v):
        return (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2

    H = hessian(rosenbrock, np.array([a, b]))
    expected = [[2 - 400 * (b - 3 * a * a), -400 * a], [-400 * a, 200]]
    np.testing.assert_allclose(H, expected)


def test_hessian_of_a_matrix_input_and_errors():
    x = _rand(2, 3)
    H = hessian(lambda x: F.sum(x ** 3), x)
    assert H.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(H.reshape(6, 6), np.diag(6 * x.ravel()))
    with pytest.raises(ValueError, match=r'f must return one element, got shape \(2, 3\)'):
        hessian(lambda x: x * x, x)


# =============================================================================
# detect_anomaly
# =============================================================================
def test_anomaly_in_forward_names_the_op_shapes_and_the_user_line():
    x = Variable(np.array([1.0, -1.0, 2.0]))
    with detect_anomaly():
        with pytest.raises(AnomalyError) as info, np.errstate(invalid='ignore'):
            line = _line()
            F.log(x * 2)
    message = str(info.value)
    assert 'Log.forward produced nan in output #0 (shape (3,))' in message
    assert 'input shapes [(3,)]' in message
    assert f'{__file__}", line {line}' in message
    assert 'F.log(x * 2)' in message
    assert isinstance(info.value, RuntimeError)


def test_anomaly_in_backward_only_names_the_op_whose_backward_failed():
    x = Variable(np.array([0.0, 4.0]))
    with detect_anomaly():
        line = _line()
        y = F.sqrt(x)  # forward is fine: sqrt(0) = 0
        loss = F.sum(y * 3)
        with pytest.raises(AnomalyError) as info, np.errstate(divide='ignore'):
            loss.backward()
    message = str(info.value)
    assert 'Sqrt.backward produced inf' in message
    assert 'input shapes [(2,)]' in message
    assert f'{__file__}", line {line}' in message and 'y = F.sqrt(x)' in message


class _NanBackward(Function):
    __slots__ = ()

    def forward(self, x):
        return x.copy()

    def backward(self, gy):
        return np.full(gy.shape, np.nan)  # a raw array: no op of it is observed


def test_anomaly_checks_the_gradients_a_backward_returns():
    x = Variable(np.ones(2))
    with detect_anomaly():
        line = _line()
        y = _NanBackward()(x)
        with pytest.raises(AnomalyError, match=r'(?s)_NanBackward.backward produced nan in the '
                                               rf'gradient of input #0.*line {line}'):
            y.backward()


def test_anomaly_mentions_inputs_that_were_already_bad():
    with detect_anomaly():
        with pytest.raises(AnomalyError, match='inputs already held NaN/inf'):
            Variable(np.array([np.inf])) * 2


def test_anomaly_off_records_nothing_and_check_nan_false_records_only():
    x = Variable(np.array([-1.0]))
    with np.errstate(invalid='ignore'):
        y = F.log(x)
        assert y not in anomaly._creation_sites
        with detect_anomaly(check_nan=False):
            z = F.log(x)
    assert np.isnan(z.data).all()
    assert anomaly._creation_sites[z][-1].filename == __file__
    assert hooks.observers() == []


def test_anomaly_observer_is_removed_after_an_error():
    with pytest.raises(AnomalyError), np.errstate(divide='ignore'):
        with detect_anomaly():
            F.log(Variable(np.array([0.0])))
    assert hooks.observers() == []


# =============================================================================
# gradcheck
# =============================================================================
def test_gradcheck_passes_for_correct_gradients_of_several_inputs():
    x, W, b = _rand(2, 3), _rand(3, 4, seed=1), _rand(4, seed=2)
    labels = np.array([0, 2])  # integer inputs pass through unchecked
    f = lambda x, W, b, t: F.tanh(F.linear(x, W, b))[np.arange(2), t]  # noqa: E731
    assert gradcheck(f, (x, W, b, labels)) is True
    assert gradcheck(F.exp, Variable(_rand(3).astype(np.float32))) is True  # checked in float64


class _DoubledGrad(Function):
    """y = x^2 with a wrong backward (4x instead of 2x)."""
    __slots__ = ()

    def forward(self, x):
        return x * x

    def backward(self, gy):
        return gy * 4 * self.inputs[0]


def test_gradcheck_reports_errors_and_coordinates():
    x = np.array([1.0, 2.0])
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda x: _DoubledGrad()(x), x)
    message = str(info.value)
    # |4x - 2x| / max(4x, 2x) = 0.5; the largest absolute error is 4 at x = 2
    assert 'input #0 (shape (2,)) -> output #0 (shape (2,))' in message
    assert 'max abs error 4.000e+00, max rel error 5.000e-01, 2 of 4 entries fail' in message
    assert 'd out[1] / d in[1]: analytic=8 numeric=4' in message


def test_gradcheck_without_raising_prints_and_returns_false(capsys):
    assert gradcheck(lambda x: _DoubledGrad()(x), np.array([1.0]), raise_exception=False) is False
    assert 'max rel error 5.000e-01' in capsys.readouterr().out


def test_gradcheck_catches_a_kink_and_dropout_like_randomness():
    # Seed 000: a perturbation across a kink disagrees with the one-sided derivative chosen there
    with pytest.raises(GradcheckError, match='analytic=1 numeric=0.5'):
        gradcheck(lambda x: F.clip(x, 0.0, 1.0), np.array([0.0]))
    assert gradcheck(lambda x: F.clip(x, 0.0, 1.0), np.array([0.3]))
    # A fresh random mask per call (dropout) makes the numeric side meaningless
    rng = np.random.default_rng(0)
    with pytest.raises(GradcheckError):
        gradcheck(lambda x: x * (rng.random(x.shape) > 0.5), np.ones(8))


def test_gradcheck_needs_a_float_input():
    with pytest.raises(ValueError, match='no input to check'):
        gradcheck(lambda t: t, np.array([1, 2]))
