"""utils: numerical gradients, gradient_check, array comparisons, array helpers."""
import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import Variable, utils


def test_numerical_grad_is_central_difference_and_does_not_mutate_input():
    x = np.array([3.0, 4.0])
    before = x.copy()
    g = utils.numerical_grad(lambda v: (v * v).sum(), x)
    np.testing.assert_allclose(g, [6.0, 8.0], rtol=1e-9)  # seed 000: f = x^2 + y^2 at (3, 4)
    np.testing.assert_array_equal(x, before)
    v = Variable(np.array([1.0, 2.0], np.float32))
    utils.numerical_grad(F.sin, v)
    assert v.data.dtype == np.float32 and v.data.tolist() == [1.0, 2.0]


def test_numerical_grad_restores_input_after_an_exception():
    x = np.array([1.0, 2.0])
    calls = []

    def f(v):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError('boom')
        return v

    with pytest.raises(RuntimeError):
        utils.numerical_grad(f, x)
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_gradient_check_passes_and_fails_and_keeps_caller_data(capsys):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    before = x.copy()
    assert utils.gradient_check(F.tanh, x)
    assert x.dtype == np.float32 and np.array_equal(x, before)

    class BadSin(F.Sin):
        def backward(self, gy):
            return gy * F.cos(self.inputs[0]) * 1.01

    assert not utils.gradient_check(lambda v: BadSin()(v), x)
    assert 'max abs error' in capsys.readouterr().out


def test_gradient_check_with_extra_args():
    x = np.random.default_rng(1).standard_normal((2, 3))
    assert utils.gradient_check(F.sum, x, axis=1, keepdims=True)


def test_array_equal_and_allclose_accept_variables():
    a = np.array([1.0, 2.0])
    assert utils.array_equal(Variable(a), a)
    assert utils.array_allclose(Variable(a), a + 1e-7)
    assert not utils.array_allclose(a, a + 1e-3)
    # Shapes that do not broadcast: DeZero's np.allclose raised; here the error names both shapes.
    with pytest.raises(ValueError, match=r'array_allclose: shapes \(2,\) and \(3,\)'):
        utils.array_allclose(a, np.ones(3))
    assert not utils.array_allclose_strict(a, np.ones(3))


def test_sum_to_reshape_sum_backward_logsumexp_and_shapes():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(utils.sum_to(x, (3, 1)), x.sum(axis=(0, 2)).reshape(3, 1))
    g = utils.reshape_sum_backward(np.ones((2, 4)), (2, 3, 4), 1, False)
    assert g.shape == (2, 1, 4)
    assert utils.reshape_sum_backward(np.ones(()), (2, 3), None, False).shape == ()
    assert utils.max_backward_shape(x, (0, 2)) == [1, 3, 1]
    big = np.array([[1e4, 1e4 + 1.0], [-np.inf, 0.0]])
    np.testing.assert_allclose(utils.logsumexp(big, axis=1).ravel(),
                               [1e4 + 1 + np.log1p(np.exp(-1.0)), 0.0])
    assert np.isneginf(utils.logsumexp(np.full((1, 2), -np.inf))).all()


def test_pair_and_conv_sizes():
    assert utils.pair(3) == (3, 3) and utils.pair((1, 2)) == (1, 2)
    for bad in [[1, 2], (1, 2, 3), 1.5, True]:
        with pytest.raises(ValueError):
            utils.pair(bad)
    assert utils.get_conv_outsize(32, 3, 1, 1) == 32
    assert utils.get_conv_outsize(7, 3, 2, 0) == 3
    assert utils.get_deconv_outsize(3, 3, 2, 0) == 7
