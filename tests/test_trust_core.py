"""Issue 11 ("Trust"), the engine: one derivative convention in both modes
(max/min ties, powers at 0), leaf gradients each leaf owns, clear errors, and
the two hazards detect_anomaly() and backward(create_graph=True) make visible.
Per-thread modes are in test_threads.py."""
import gc
import math
import re
import warnings

import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import Function, Variable, autograd
from dezero_kr import core as C
from dezero_kr import reverse_pass as RP
from dezero_kr.autograd import AnomalyError, detect_anomaly, jacobian

from _checks import check_backward, numeric_grad


def _v(*values):
    return Variable(np.array(values, dtype=np.float64))


# =============================================================================
# max / min: ties split the gradient evenly, in reverse and forward mode
# =============================================================================
TIED = np.array([[1.0, 3.0, 3.0, 0.0],
                 [2.0, 2.0, 2.0, 2.0],
                 [5.0, -1.0, 5.0, 5.0]])


@pytest.mark.parametrize('axis,keepdims,expected', [
    (None, False, [[0, 0, 0, 0], [0, 0, 0, 0], [1 / 3, 0, 1 / 3, 1 / 3]]),
    (1, False, [[0, .5, .5, 0], [.25, .25, .25, .25], [1 / 3, 0, 1 / 3, 1 / 3]]),
    (0, True, np.array([[0, .5, .5, 0], [.25, .25, .25, .25], [1 / 3, 0, 1 / 3, 1 / 3]]).T),
    ((0, 1), False, [[0, 0, 0, 0], [0, 0, 0, 0], [1 / 3, 0, 1 / 3, 1 / 3]]),
])
def test_max_ties_share_the_gradient_exactly(axis, keepdims, expected):
    x = Variable(TIED.T.copy() if axis == 0 else TIED.copy())
    F.sum(C.max(x, axis, keepdims)).backward()
    np.testing.assert_array_equal(x.grad.data, np.array(expected))


def test_min_ties_share_the_gradient_exactly():
    x = Variable(TIED.copy())
    F.sum(C.min(x, axis=0)).backward()
    # column minima: 1 | -1 | 2 | 0
    np.testing.assert_array_equal(x.grad.data, [[1, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]])
    x = Variable(np.array([4.0, 1.0, 1.0, 1.0, 7.0]))
    C.min(x).backward()
    np.testing.assert_array_equal(x.grad.data, [0, 1 / 3, 1 / 3, 1 / 3, 0])


@pytest.mark.parametrize('fn', [C.max, C.min], ids=['max', 'min'])
@pytest.mark.parametrize('axis', [None, 0, 1, -1])
def test_two_way_ties_agree_with_central_differences(fn, axis):
    # With two tied elements, (f(x + h e_i) - f(x - h e_i)) / 2h = 1/2: the split rule.
    x = np.array([[0.5, 2.0, 2.0], [-1.0, -1.0, 0.25]])
    if axis is None:
        x = np.array([[0.5, 2.0, 2.0], [-1.0, -3.0, 0.25]]) if fn is C.max else \
            np.array([[0.5, -3.0, 2.0], [-3.0, 1.0, 0.25]])
    elif axis == 0:
        x = np.array([[0.5, 2.0, -1.0], [0.5, 2.0, -1.0]])
    check_backward(lambda v: fn(v, axis), x)


@pytest.mark.parametrize('fn', [C.max, C.min], ids=['max', 'min'])
@pytest.mark.parametrize('axis,keepdims', [(None, False), (1, False), (0, True), ((0, 1), True)])
def test_forward_and_reverse_jacobians_agree_at_ties(fn, axis, keepdims):
    def f(v):
        return fn(v, axis, keepdims)
    # ties in every direction: global max x4 and min x3, in rows, in columns 1 and 3
    x = np.array([[1.0, 3, 3, -1], [2, 2, 2, 2], [5, -1, 5, 5], [-1, 3, 0, 5]])
    forward = jacobian(f, x.copy(), mode='forward')
    reverse = jacobian(f, x.copy(), mode='reverse')
    np.testing.assert_array_equal(forward, reverse)
    # every reduction hands out exactly one unit of gradient
    y_size = int(np.prod(forward.shape[:forward.ndim - 2]))
    np.testing.assert_allclose(forward.reshape(y_size, -1).sum(axis=1), np.ones(y_size))


def test_max_jvp_of_a_three_way_tie():
    _, t = autograd.jvp(C.max, (np.array([2.0, 2.0, 2.0]),), (np.array([3.0, 0.0, 9.0]),))
    assert t.data == 4.0  # (3 + 0 + 9) / 3; the first tie alone would say 3


# =============================================================================
# powers at 0: PyTorch's values, in backward and jvp
# =============================================================================
def _grad(f, x):
    x = Variable(np.asarray(x, dtype=np.float64))
    F.sum(f(x)).backward()
    return x.grad.data


def test_x_to_the_zero_has_derivative_zero_at_zero():
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # no divide-by-zero on the way
        np.testing.assert_array_equal(_grad(lambda x: x ** 0, [0.0, 2.0, -1.5]), [0.0, 0.0, 0.0])
        np.testing.assert_array_equal(_grad(lambda x: x ** np.array([0.0, 2.0]), [0.0, 0.0]),
                                      [0.0, 0.0])
        np.testing.assert_array_equal(jacobian(lambda x: x ** 0, np.zeros(2), mode='forward'),
                                      np.zeros((2, 2)))


def test_zero_to_the_x_has_derivative_zero_where_x_is_not_negative():
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        np.testing.assert_array_equal(_grad(lambda x: 0.0 ** x, [0.0, 1.0, 2.5]), [0, 0, 0])
        np.testing.assert_array_equal(
            jacobian(lambda x: 0.0 ** x, np.array([0.0, 2.0]), mode='forward'), np.zeros((2, 2)))
    # an array base: only the zero entry is special; 2 ** x keeps y * ln 2
    x = Variable(np.array([0.0, 3.0]))
    F.sum(np.array([0.0, 2.0]) ** x).backward()
    np.testing.assert_allclose(x.grad.data, [0.0, 8 * math.log(2)], rtol=1e-15)


@pytest.mark.parametrize('e,gx,ge', [(2.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1.0, 1.0, 0.0),
                                     (3.0, 0.0, 0.0)])
def test_variable_zero_to_a_variable_power(e, gx, ge):
    x, ev = Variable(np.array(0.0)), Variable(np.array(e))
    (x ** ev).backward()
    assert (x.grad.data, ev.grad.data) == (gx, ge)
    # forward mode gives the same numbers
    _, t = autograd.jvp(lambda a, b: a ** b, (np.array(0.0), np.array(e)),
                        (np.array(1.0), np.array(0.0)))
    assert t.data == gx
    _, t = autograd.jvp(lambda a, b: a ** b, (np.array(0.0), np.array(e)),
                        (np.array(0.0), np.array(1.0)))
    assert t.data == ge


def test_power_variable_gradients_away_from_zero_are_unchanged():
    check_backward(lambda a, b: a ** b, np.array([0.5, 1.5, 2.0]), np.array([2.0, -0.5, 0.0]))


def test_power_variable_at_zero_agrees_with_central_differences():
    # d/de 0 ** e = 0 for e > 0 (0 ** (e +- h) = 0); d/dx x ** 2 = 0 at x = 0
    x, e = np.array([0.0, 0.0]), np.array([2.0, 3.0])

    def loss(a, b):
        return float((Variable(a) ** Variable(b)).data.sum())
    xv, ev = Variable(x.copy()), Variable(e.copy())
    F.sum(xv ** ev).backward()
    np.testing.assert_allclose(xv.grad.data, numeric_grad(loss, [x, e], 0), atol=1e-9)
    np.testing.assert_allclose(ev.grad.data, numeric_grad(loss, [x, e], 1), atol=1e-9)


@pytest.mark.parametrize('n', [1, 2, 3, 4])
@pytest.mark.parametrize('exponent', ['constant', 'variable'])
def test_higher_derivatives_of_x_to_the_n_at_zero(n, exponent):
    # d^k/dx^k x^n at 0: n! for k = n, 0 for every other k (was nan from k = n + 1 on)
    x = Variable(np.array(0.0))
    e = n if exponent == 'constant' else Variable(np.array(float(n)))
    y = x ** e
    derivatives = []
    for _ in range(n + 2):
        x.cleargrad()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', UserWarning)  # the create_graph cycle warning
            y.backward(create_graph=True)
        y = x.grad
        derivatives.append(float(y.data))
    expected = [0.0] * (n + 2)
    expected[n - 1] = float(math.factorial(n))
    assert derivatives == expected


def test_hessian_of_a_cube_at_zero_is_zero_not_nan():
    h = autograd.hessian(lambda x: F.sum(x ** 3), np.zeros(2))
    np.testing.assert_array_equal(h, np.zeros((2, 2)))
    h = autograd.hessian(lambda x: F.sum(x ** 1), np.zeros(2))  # was nan: 1 * 0 ** -1 * 0
    np.testing.assert_array_equal(h, np.zeros((2, 2)))


# =============================================================================
# a leaf's .grad is its own writable array
# =============================================================================
def test_sum_gives_a_writable_gradient_for_dezero_in_place_idioms():
    x = Variable(np.arange(6.0).reshape(2, 3))
    F.sum(x).backward()
    x.grad.data *= 2                   # DeZero's WeightDecay / clipping idioms
    x.grad.data += 0.5 * x.data
    np.testing.assert_array_equal(x.grad.data, 2 + 0.5 * np.arange(6.0).reshape(2, 3))


def test_two_leaves_of_one_add_get_separate_arrays():
    a, b = _v(1, 2, 3), _v(4, 5, 6)
    F.sum(a + b).backward()
    assert a.grad.data.flags.writeable and b.grad.data.flags.writeable
    assert not np.shares_memory(a.grad.data, b.grad.data)
    a.grad.data *= 3
    np.testing.assert_array_equal(b.grad.data, [1, 1, 1])


def test_reshaped_leaves_that_share_one_gradient_get_separate_arrays():
    a, b = Variable(np.ones((2, 2))), Variable(np.ones((2, 2)))
    F.sum(C.reshape(a, (4,)) + C.reshape(b, (4,))).backward()
    assert not np.shares_memory(a.grad.data, b.grad.data)
    a.grad.data[0, 0] = 7
    assert b.grad.data[0, 0] == 1


def test_leaf_gradient_does_not_share_with_the_seed_or_a_retained_gradient():
    a, b = _v(1, 2), _v(3, 4)
    h = a + b
    seed = np.array([10.0, 20.0])
    h.grad = Variable(seed)
    h.backward(retain_grad=True)
    assert h.grad.data is seed  # the root keeps its seed (retain_grad)
    for g in (a.grad.data, b.grad.data):
        for other in (seed, h.grad.data, a.grad.data if g is b.grad.data else b.grad.data):
            assert not np.shares_memory(g, other)

    a, b = _v(1, 2), _v(3, 4)
    h = a * 1 + b
    h.retain_grad()
    F.sum(h).backward()
    for g in (a.grad.data, b.grad.data):
        assert not np.shares_memory(g, h.grad.data)


def test_a_fresh_gradient_is_stored_without_a_copy():
    fresh = []

    class Twice(Function):
        def forward(self, x):
            return 2 * x

        def backward(self, gy):
            fresh.append(Variable(2 * gy.data))
            return fresh[-1]

    x = _v(1, 2, 3)
    F.sum(Twice()(x) * 3).backward()
    assert x.grad is fresh[0]  # the common path adds no copy


def test_leaf_gradients_under_create_graph_are_separate_and_keep_their_graph():
    a, b = _v(1, 2), _v(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', UserWarning)
        F.sum(a * a + b * a).backward(create_graph=True)   # da = 2a + b, db = a
        ga, gb = a.grad, b.grad
        assert not np.shares_memory(ga.data, gb.data)
        a.cleargrad()
        b.cleargrad()
        F.sum(gb).backward()                                # d(sum a)/da = 1
    np.testing.assert_array_equal(a.grad.data, [1, 1])
    a2, b2 = _v(1, 2), _v(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', UserWarning)
        F.sum((a2 + b2) ** 2).backward(create_graph=True)  # both get the one array 2 (a + b)
        assert not np.shares_memory(a2.grad.data, b2.grad.data)
        np.testing.assert_array_equal(b2.grad.data, [8, 12])
        gb = b2.grad
        a2.cleargrad()
        F.sum(gb).backward()  # the copy kept its graph: d(sum 2 (a + b)) / da = 2
    np.testing.assert_array_equal(a2.grad.data, [2, 2])


# =============================================================================
# clear errors
# =============================================================================
def test_an_op_on_a_variable_without_data_names_the_function():
    with pytest.raises(ValueError, match=r'AddConstant: input #0 is a Variable with no data'):
        Variable(None) + 1
    with pytest.raises(ValueError, match=r"Exp: input #0 is Parameter 'W' with no data"):
        F.exp(C.Parameter(None, name='W'))
    with pytest.raises(ValueError, match=r'Reshape: input #0 is a Variable with no data'):
        C.Reshape((2,))(Variable(None))


@pytest.mark.parametrize('seed', ['a', [1.0], None.__class__, np.array(['a'])],
                         ids=['str', 'list', 'type', 'str array'])
def test_a_seed_gradient_that_is_not_numbers_is_a_type_error(seed):
    y = _v(1, 2) * 2
    y.grad = seed
    with pytest.raises(TypeError, match=r'backward: the seed gradient \(y.grad\)'):
        y.backward()


def test_a_hook_that_returns_a_non_array_fails_at_the_backward_naming_it():
    def to_text(g):
        return 'oops'
    x = _v(1, 2)
    x.register_hook(to_text)
    with pytest.raises(TypeError, match=r"the hook 'test_a_hook_that_returns_a_non_array_fails"
                                        r".*to_text'.*got str 'oops'"):
        F.sum(x * 2).backward()


def test_register_hook_refuses_a_non_callable_at_once():
    x = _v(1, 2)
    with pytest.raises(TypeError, match=r'register_hook: the hook must be callable.*got int 5'):
        x.register_hook(5)
    assert x not in C.variable_hooks  # nothing half-registered


def test_a_function_instance_called_twice_is_an_error_at_backward():
    f = F.Exp()
    a, b = _v(0.0), _v(1.0)
    y1 = f(a)
    f(b)
    with pytest.raises(RuntimeError, match=r'Exp: this Function instance was called more than '
                                           r'once'):
        y1.backward()
    g = F.Exp()
    x = _v(0.5)
    y = g(g(x))  # a chain through one instance: x got no gradient before, silently
    with pytest.raises(RuntimeError, match='called more than once'):
        y.backward()
    h = F.Exp()
    a, b = _v(0.0), _v(1.0)
    y = h(a) + h(b)  # both outputs in one graph: the first one's gradient was lost silently
    with pytest.raises(RuntimeError, match='called more than once'):
        F.sum(y).backward()


def test_a_function_instance_called_twice_fails_at_the_second_call_in_anomaly_mode():
    f = F.Exp()
    with detect_anomaly():
        y = f(_v(0.0))
        with pytest.raises(AnomalyError, match=r'this Exp instance was called a second time'):
            f(_v(1.0))
        del y
        f(_v(2.0))  # the first output is gone, so nothing can be corrupted: no error


@pytest.mark.parametrize('op,symbol', [
    (lambda v: v + 'a', '+'), (lambda v: 'a' + v, '+'), (lambda v: v - 'a', '-'),
    (lambda v: 'a' - v, '-'), (lambda v: v * None, '*'), (lambda v: v / 'a', '/'),
    (lambda v: 'a' / v, '/'), (lambda v: v ** 'a', '**'), (lambda v: {} ** v, '**'),
    (lambda v: v * np.str_('a'), '*'),
])
def test_an_unsupported_operand_names_the_operator(op, symbol):
    with pytest.raises(TypeError, match=rf"unsupported operand type\(s\) for {re.escape(symbol)}: "
                                        rf"'Variable' and '"):
        op(_v(1, 2))


def test_numpy_scalar_constants_still_keep_the_variables_dtype():
    x = Variable(np.ones(2, dtype=np.float32))
    assert (x * np.float64(2)).dtype == np.float32
    assert (x + np.int64(1)).dtype == np.float32


# =============================================================================
# hazards made visible
# =============================================================================
def test_anomaly_mode_detects_an_input_changed_in_place_after_forward():
    with detect_anomaly():
        x = Variable(np.array([1.0, 2.0]), name='x')
        y = x * x
        x.data[...] = 5
        with pytest.raises(AnomalyError, match=r"input #0 of Mul \(Variable 'x' \(shape \(2,\)\)\)"
                                               r" was modified after the forward pass.*values "
                                               r"were changed in place.*inplace operation"):
            y.backward()
        x2 = Variable(np.array([1.0, 2.0]))
        y2 = F.sin(x2)
        x2.data = x2.data + 1  # replacing the array is the same hazard
        with pytest.raises(AnomalyError, match=r'input #0 of Sin.*replaced by another array'):
            y2.backward()


def test_anomaly_mode_detects_an_output_changed_in_place():
    with detect_anomaly():
        x = _v(0.0, 1.0)
        y = F.exp(x)  # Exp's backward reads y
        y.data[0] = 3.0
        with pytest.raises(AnomalyError, match=r'output #0 of Exp'):
            F.sum(y).backward()


def test_anomaly_mode_accepts_changes_a_backward_does_not_read():
    with detect_anomaly():
        x = _v(1.0, 2.0)
        y = F.sum(x + 1)  # Add and Sum read only shapes
        x.data[...] = 5
        y.backward()
    np.testing.assert_array_equal(x.grad.data, [1.0, 1.0])
    with detect_anomaly():
        x = _v(1.0, 2.0)
        y = F.sum(x)
        x.data = np.ones(3)  # but a different shape breaks them
        with pytest.raises(AnomalyError, match=r'input #0 of Sum.*shape was changed'):
            y.backward()


def test_create_graph_on_leaves_is_quiet_while_gc_collects_cycles(monkeypatch):
    # leaf -> .grad -> graph -> leaf is freed by Python's cycle collector (measured in
    # tests/test_grad_cycle.py), so the learner's create_graph code prints nothing.
    monkeypatch.setattr(RP, '_grad_cycle_warned', False)
    assert gc.isenabled()
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        x = _v(1.0, 2.0)
        F.sum(x * x * x).backward(create_graph=True)
        assert x.grad.creator is not None  # the cycle is there
    assert RP._grad_cycle_warned is False


def test_create_graph_on_leaves_warns_once_with_gc_disabled(monkeypatch):
    monkeypatch.setattr(RP, '_grad_cycle_warned', False)
    x = _v(1.0, 2.0)
    gc.disable()
    try:
        with pytest.warns(UserWarning, match=r'reference cycle.*gc is disabled.*cleargrad\(\).*'
                                             r'autograd.grad'):
            F.sum(x * x * x).backward(create_graph=True)
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            x.cleargrad()
            F.sum(x * x * x).backward(create_graph=True)  # shown once
    finally:
        gc.enable()


def test_create_graph_on_leaves_warns_inside_detect_anomaly(monkeypatch):
    monkeypatch.setattr(RP, '_grad_cycle_warned', False)
    x = _v(1.0, 2.0)
    with detect_anomaly():
        with pytest.warns(UserWarning, match=r'reference cycle.*detect_anomaly\(\) is on'):
            F.sum(x * x * x).backward(create_graph=True)


def test_no_cycle_warning_where_there_is_no_cycle(monkeypatch):
    monkeypatch.setattr(RP, '_grad_cycle_warned', False)
    gc.disable()  # where a cycle would warn
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            x = _v(1.0, 2.0)
            F.sum(x * x).backward()                                   # no graph in .grad
            g, = autograd.grad(F.sum(x * x * x), x, create_graph=True)  # stores nothing
            assert g.creator is not None
    finally:
        gc.enable()
    assert RP._grad_cycle_warned is False


def test_anomaly_mode_catches_a_nan_returned_by_a_hook_on_a_leaf():
    x = Variable(np.array([1.0, 2.0]), name='w')
    x.register_hook(lambda g: np.full(g.shape, np.nan))
    with detect_anomaly():
        with pytest.raises(AnomalyError, match=r"the hook '.*<lambda>' on Variable 'w' "
                                               r"\(shape \(2,\)\) returned a gradient with nan"):
            F.sum(x * 2).backward()
    assert x.grad is None


def test_anomaly_mode_catches_a_nan_returned_by_a_hook_on_an_intermediate():
    x = _v(1.0, 2.0)
    h = x * 2
    h.register_hook(lambda g: np.array([np.inf, 0.0]))
    with detect_anomaly():
        with pytest.raises(AnomalyError, match=r"returned a gradient with inf"):
            F.sum(h * 3).backward()
