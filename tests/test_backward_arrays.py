"""``backward_arrays``: each rule's plain-array entry gives ``backward``'s numbers bit for bit.

``Function.backward_arrays`` (see ``core.Function``) is the same formula as ``backward``
called on gradient arrays; static_graph's replay calls it instead of ``backward`` where
the class that defines ``backward`` defines it too.  Every such class of the package has a
case here (the first test fails for a new one without a case); each case compares the two
entries on random gradients, with broadcasting, 0-d and float32 where the op takes them.
"""
import importlib
import pkgutil

import numpy as np
import pytest

import dezero_kr
import dezero_kr.functions as F
from dezero_kr import Parameter, Variable, no_grad
from dezero_kr.core import Function
from dezero_kr.define_and_run.plan import has_array_rule
from dezero_kr.functions_attention import TokenPositionEmbedding


def _concrete_array_rules():
    for info in pkgutil.walk_packages(dezero_kr.__path__, 'dezero_kr.'):
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional extra (mpi4py, onnx) that is not installed
            pass
    found, todo = set(), list(Function.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not cls.__module__.startswith('dezero_kr.') or cls.__name__.startswith('_'):
            continue
        if has_array_rule(cls):  # the classes static_graph's replay calls backward_arrays on
            found.add(cls.__name__)
    return found - {'Elementwise', 'BinaryElementwise', 'Masking', 'BinaryMasking'}


def _p(rng, shape, dtype, low=None):
    a = rng.standard_normal(shape) if low is None else rng.uniform(low, low + 1.5, shape)
    return Parameter(np.asarray(a, dtype))


# name -> [builders(rng, dtype) -> output Variable]; several shapes where broadcasting matters
CASES = {
    'Add': [lambda r, d: _p(r, (3, 4), d) + _p(r, (4,), d), lambda r, d: _p(r, (), d) + _p(r, (), d)],
    'Sub': [lambda r, d: _p(r, (3, 1), d) - _p(r, (1, 4), d)],
    'Mul': [lambda r, d: _p(r, (3, 4), d) * _p(r, (3, 1), d), lambda r, d: _p(r, (), d) * _p(r, (), d)],
    'Div': [lambda r, d: _p(r, (2, 3), d) / _p(r, (3,), d, 0.5)],
    'Neg': [lambda r, d: -_p(r, (2, 3), d)],
    'AddConstant': [lambda r, d: _p(r, (2, 3), d) + 1.5, lambda r, d: _p(r, (3,), d) + np.ones((2, 3), d)],
    'SubConstant': [lambda r, d: _p(r, (2, 3), d) - 2.0],
    'RSubConstant': [lambda r, d: 2.0 - _p(r, (2, 3), d)],
    'MulConstant': [lambda r, d: _p(r, (2, 3), d) * 0.3, lambda r, d: _p(r, (), d) * 3.0],
    'DivConstant': [lambda r, d: _p(r, (2, 3), d) / 0.7],
    'RDivConstant': [lambda r, d: 2.0 / _p(r, (2, 3), d, 0.5)],
    'Pow': [lambda r, d: _p(r, (2, 3), d, 0.5) ** 3, lambda r, d: _p(r, (2, 3), d) ** 0],
    'RPow': [lambda r, d: 2.0 ** _p(r, (2, 3), d), lambda r, d: 0.0 ** _p(r, (2, 3), d, 0.0)],
    'PowVariable': [lambda r, d: _p(r, (2, 3), d, 0.5) ** _p(r, (3,), d)],
    'Log': [lambda r, d: F.log(_p(r, (2, 3), d, 0.5))],
    'Sin': [lambda r, d: F.sin(_p(r, (2, 3), d)), lambda r, d: F.sin(_p(r, (), d))],
    'Cos': [lambda r, d: F.cos(_p(r, (2, 3), d))],
    'Tan': [lambda r, d: F.tan(_p(r, (2, 3), d))],
    'Tanh': [lambda r, d: F.tanh(_p(r, (2, 3), d))],
    'Exp': [lambda r, d: F.exp(_p(r, (2, 3), d))],
    'Sqrt': [lambda r, d: F.sqrt(_p(r, (2, 3), d, 0.5))],
    'Abs': [lambda r, d: F.abs(_p(r, (2, 3), d))],
    'Sigmoid': [lambda r, d: F.sigmoid(_p(r, (2, 3), d))],
    'ReLU': [lambda r, d: F.relu(_p(r, (2, 3), d))],
    'LeakyReLU': [lambda r, d: F.leaky_relu(_p(r, (2, 3), d))],
    'GELU': [lambda r, d: F.gelu(_p(r, (2, 3), d))],
    'Dropout': [lambda r, d: F.dropout(_p(r, (4, 5), d), 0.5)],
    'MaskedFill': [lambda r, d: F.masked_fill(_p(r, (2, 3), d), np.array([True, False, True]), -1.0)],
    'Clip': [lambda r, d: F.clip(_p(r, (2, 3), d), -0.5, 0.5)],
    'Maximum': [lambda r, d: F.maximum(_p(r, (2, 3), d), _p(r, (3,), d))],
    'Minimum': [lambda r, d: F.minimum(_p(r, (2, 3), d), _p(r, (2, 1), d))],
    'Where': [lambda r, d: F.where(np.array([[True, False, True]]), _p(r, (2, 3), d), _p(r, (3,), d))],
    'SumTo': [lambda r, d: F.sum_to(_p(r, (2, 3), d), (1, 3))],
    'BroadcastTo': [lambda r, d: F.broadcast_to(_p(r, (1, 3), d), (2, 3))],
    'Reshape': [lambda r, d: F.reshape(_p(r, (2, 3), d), (3, 2))],
    'Transpose': [lambda r, d: F.transpose(_p(r, (2, 3, 4), d), (2, 0, 1)),
                  lambda r, d: F.transpose(_p(r, (2, 3), d))],
    'GetItem': [lambda r, d: _p(r, (4, 3), d)[np.array([0, 2, 0])], lambda r, d: _p(r, (4, 3), d)[1:, 0]],
    'Sum': [lambda r, d: F.sum(_p(r, (2, 3), d), axis=1),
            lambda r, d: F.sum(_p(r, (2, 3), d), keepdims=True)],
    'MatMul': [lambda r, d: F.matmul(_p(r, (2, 3), d), _p(r, (3, 4), d)),
               lambda r, d: F.matmul(_p(r, (2, 2, 3), d), _p(r, (3, 4), d)),
               lambda r, d: F.matmul(_p(r, (3,), d), _p(r, (3, 4), d))],
    'Linear': [lambda r, d: F.linear(_p(r, (5, 3), d), _p(r, (3, 4), d), _p(r, (4,), d)),
               lambda r, d: F.linear(np.asarray(r.standard_normal((2, 5, 3)), d), _p(r, (3, 4), d))],
    'SoftmaxCrossEntropy': [lambda r, d: F.softmax_cross_entropy(_p(r, (4, 3), d), np.array([0, 2, 1, 2]))],
    'LayerNorm': [lambda r, d: F.layer_norm(_p(r, (3, 4), d), _p(r, (4,), d), _p(r, (4,), d)),
                  lambda r, d: F.layer_norm(_p(r, (3, 4), d))],
    'RMSNorm': [lambda r, d: F.rms_norm(_p(r, (3, 4), d), _p(r, (4,), d)),
                lambda r, d: F.rms_norm(_p(r, (3, 4), d))],
    'BatchNorm': [lambda r, d: F.batch_norm(_p(r, (5, 3), d), _p(r, (3,), d), _p(r, (3,), d),
                                            np.zeros(3, d), np.ones(3, d))],
    'MultiHeadAttention': [lambda r, d: F.multi_head_attention(_p(r, (2, 5, 12), d), 2, causal=True)],
    'TokenPositionEmbedding': [lambda r, d: TokenPositionEmbedding(np.array([[1, 0, 1]]))(
        _p(r, (4, 6), d), _p(r, (5, 6), d))],
}


def test_every_rule_with_backward_arrays_has_a_case():
    assert _concrete_array_rules() == set(CASES)


@pytest.mark.parametrize('dtype', [np.float64, np.float32])
@pytest.mark.parametrize('name,i', [(n, i) for n, builders in CASES.items() for i in range(len(builders))])
def test_backward_arrays_equals_backward_bit_for_bit(name, i, dtype):
    rng = np.random.default_rng(7)
    y = CASES[name][i](rng, dtype)
    f = y.creator
    assert type(f).__name__ == name
    gy = np.asarray(rng.standard_normal(y.shape), y.dtype)
    with no_grad():  # as the engine's first-order pass calls a rule
        want = f.backward(Variable(gy.copy()))
        got = f.backward_arrays(gy.copy())
    if len(f.inputs) == 1:  # the contract: one input, the array itself
        assert not isinstance(got, tuple)
        want, got = (want[0] if isinstance(want, tuple) else want,), (got,)
    assert len(got) == len(want) == len(f.inputs)
    for x, w, g in zip(f.inputs, want, got):
        if w is None:
            assert g is None
            continue
        assert type(g) is np.ndarray and g.shape == x.shape and g.dtype == w.data.dtype
        np.testing.assert_array_equal(g, w.data)
    assert not np.array_equal(gy, 0)  # (a zero gradient would make every rule agree)


def test_a_case_with_a_wrong_rule_fails():
    # the comparison above can fail: a backward_arrays that forgets gy differs from backward
    rng = np.random.default_rng(0)
    y = F.sin(_p(rng, (2, 3), np.float64))
    f = y.creator
    gy = rng.standard_normal(y.shape)
    with no_grad():
        want = f.backward(Variable(gy)).data
        forgot_gy = f.backward_arrays(np.ones_like(gy))
    assert not np.array_equal(want, forgot_gy)
