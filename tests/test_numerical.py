"""numerical: the one central-differences routine and the gradient checks built on it
(utils.numerical_grad, utils.gradient_check, autograd.gradcheck)."""
import re

import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import Variable, utils
from dezero_kr.autograd import numerical
from dezero_kr.autograd import GradcheckError, gradcheck


def test_central_differences_is_the_closed_form_derivative():
    x = np.array([[0.3, -1.2], [2.0, 0.5]])
    # d sum(x^3) / dx = 3 x^2; the O(eps^2) error is eps^2 * f''' / 6 = 1e-8
    g = numerical.central_differences(lambda: np.sum(x ** 3), x, 1e-4)
    assert g.shape == (2, 2) and g.dtype == np.float64
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-7)
    # a vector output gives one row per element of x: d sin(x)_j / dx_i = cos(x_i) if i == j
    jac = numerical.central_differences(lambda: np.sin(x).reshape(-1), x, 1e-5, (4,))
    assert jac.shape == (2, 2, 4)
    np.testing.assert_allclose(jac.reshape(4, 4), np.diag(np.cos(x).reshape(-1)), atol=1e-9)


def test_central_differences_puts_every_element_back_even_after_an_error():
    x = np.array([1.0, 2.0, 3.0])
    calls = []

    def evaluate():
        calls.append(x.copy())
        if len(calls) == 4:
            raise RuntimeError('boom')
        return np.sum(x)

    with pytest.raises(RuntimeError, match='boom'):
        numerical.central_differences(evaluate, x, 0.5)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    # the perturbations: +eps, -eps on element 0, then on element 1 (C order)
    np.testing.assert_array_equal(calls, [[1.5, 2, 3], [0.5, 2, 3], [1, 2.5, 3], [1, 1.5, 3]])


def test_central_differences_accepts_only_float64_arrays():
    with pytest.raises(TypeError, match=r'central_differences: x must be a float64 ndarray.*'
                                        r'float32'):
        numerical.central_differences(lambda: 0.0, np.ones(2, np.float32), 1e-4)
    with pytest.raises(TypeError, match='central_differences: x must be a float64 ndarray'):
        numerical.central_differences(lambda: 0.0, [1.0, 2.0], 1e-4)


def test_float64_copy_never_aliases_and_keeps_the_layout():
    x = np.arange(6.0).reshape(2, 3).T  # Fortran-ordered
    c = numerical.float64_copy(Variable(x))
    assert c.dtype == np.float64 and c.flags['F_CONTIGUOUS']
    c[0, 0] = 99
    assert x[0, 0] == 0
    c32 = numerical.float64_copy(np.ones(3, np.float32))
    assert c32.dtype == np.float64


@pytest.mark.parametrize('x, message', [
    (Variable(None), 'a Variable with data, got NoneType'),
    ([1.0, 2.0], 'got list'),
    (np.array([1 + 2j]), 'real numbers, got dtype complex128'),  # was: imaginary part dropped
    ('ab', 'real numbers, got dtype <U2'),
])
def test_numerical_grad_names_a_bad_x(x, message):
    # These leaked an AttributeError (None, list) or differentiated another function (complex).
    with pytest.raises(TypeError, match=r'numerical_grad: x must .*' + re.escape(message)):
        utils.numerical_grad(lambda v: v * 2, x)
    with pytest.raises(TypeError, match=r'gradient_check: x must .*' + re.escape(message)):
        utils.gradient_check(lambda v: v * 2, x)


def test_numerical_grad_of_numbers_and_integer_arrays_is_taken_in_float64():
    np.testing.assert_allclose(utils.numerical_grad(lambda v: v ** 3, 2.0), 12.0, rtol=1e-7)
    g = utils.numerical_grad(lambda v: v ** 3, np.array([1, 2]))
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, [3.0, 12.0], rtol=1e-7)


def test_numerical_grad_and_gradcheck_give_the_same_numbers():
    # One implementation: for a one-element output, sum(f) is f, so DeZero's numerical_grad
    # and gradcheck's numerical Jacobian are the same evaluations divided the same way.
    x = np.random.default_rng(3).standard_normal((3, 2))

    def f(v):
        return F.sum(F.tanh(v) * v)

    eps = 1e-6
    g = utils.numerical_grad(f, x, eps=eps)
    xv = Variable(x.copy())
    (jac,), = numerical._numerical_jacobians(f, [xv], [xv], [f(xv)], eps)
    assert jac.shape == (1, 6)
    np.testing.assert_array_equal(g.reshape(-1), jac[0])
    # and the value is the derivative: d sum(tanh(x) x) / dx = tanh(x) + x (1 - tanh(x)^2)
    np.testing.assert_allclose(g, np.tanh(x) + x * (1 - np.tanh(x) ** 2), rtol=1e-8)


def test_numerical_jacobians_split_several_outputs_correctly():
    a, b = np.array([1.0, -2.0, 0.5]), np.array([3.0, 4.0, -1.0])
    args = [Variable(a.copy()), Variable(b.copy())]

    def f(a, b):
        return a * b, F.sum(a)

    jac = numerical._numerical_jacobians(f, args, args, f(*args), 1e-6)
    np.testing.assert_allclose(jac[0][0], np.diag(b), atol=1e-8)    # d(ab)/da
    np.testing.assert_allclose(jac[0][1], np.diag(a), atol=1e-8)    # d(ab)/db
    np.testing.assert_allclose(jac[1][0], np.ones((1, 3)), atol=1e-8)  # d sum(a)/da
    np.testing.assert_array_equal(jac[1][1], np.zeros((1, 3)))      # d sum(a)/db


def test_gradcheck_perturbs_a_transposed_input():
    # A Fortran-ordered float64 copy has no flat view to write into: gradcheck used to perturb
    # a temporary copy, saw a numerical Jacobian of zeros and failed a correct gradient.
    x = np.random.default_rng(4).standard_normal((3, 4)).T
    assert gradcheck(F.sin, (x,)) is True
    np.testing.assert_allclose(utils.numerical_grad(F.sin, x), np.cos(x), rtol=1e-7)


def test_gradcheck_still_fails_a_wrong_gradient_of_a_transposed_input():
    class HalfSin(F.Sin):
        def backward(self, gy):
            return gy * F.cos(self.inputs[0]) * 0.5

    x = np.random.default_rng(5).standard_normal((2, 3)).T
    with pytest.raises(GradcheckError, match=r'input #0 \(shape \(3, 2\)\)'):
        gradcheck(lambda v: HalfSin()(v), (x,))


def test_gradcheck_of_a_function_with_no_outputs_is_an_error():
    with pytest.raises(ValueError, match='gradcheck: f returned no outputs'):
        gradcheck(lambda x: (), np.ones(2))


def test_empty_inputs_give_empty_gradients():
    g = utils.numerical_grad(F.sum, np.zeros((0, 3)))
    assert g.shape == (0, 3) and g.dtype == np.float64
    xv = Variable(np.zeros((0, 3)))
    y = Variable(np.ones(2))
    (jac,), = numerical._numerical_jacobians(lambda x: y * 2, [xv], [xv], [y * 2], 1e-6)
    assert jac.shape == (2, 0)
