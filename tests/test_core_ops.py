"""The operations defined in core.py: forward against NumPy, backward (and double
backward) against central differences in float64, broadcasting and axis variants."""
import numpy as np
import pytest

import dezero_kr.core as C
from dezero_kr import Variable
from _checks import check_backward, check_double_backward

rng = np.random.default_rng(42)


def randn(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


BINARY = [
    ('add', lambda a, b: a + b, np.add),
    ('sub', lambda a, b: a - b, np.subtract),
    ('mul', lambda a, b: a * b, np.multiply),
    ('div', lambda a, b: a / b, np.divide),
    ('pow', lambda a, b: a ** b, np.power),
]
SHAPE_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3)), ((3, 1), (1, 5))]


@pytest.mark.parametrize('name,op,ref', BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize('shapes', SHAPE_PAIRS, ids=str)
def test_binary_ops_with_broadcasting(name, op, ref, shapes):
    a, b = positive(*shapes[0]), positive(*shapes[1])
    y = op(Variable(a), Variable(b))
    np.testing.assert_allclose(y.data, ref(a, b), rtol=1e-15)
    check_backward(op, a, b)
    check_double_backward(op, a, b)


CONSTANT_OPS = [
    ('x + c', lambda x: x + 1.5, lambda x: x + 1.5),
    ('c + x', lambda x: 1.5 + x, lambda x: 1.5 + x),
    ('x - c', lambda x: x - 1.5, lambda x: x - 1.5),
    ('c - x', lambda x: 1.5 - x, lambda x: 1.5 - x),
    ('x * c', lambda x: x * 1.5, lambda x: x * 1.5),
    ('x / c', lambda x: x / 1.5, lambda x: x / 1.5),
    ('c / x', lambda x: 1.5 / x, lambda x: 1.5 / x),
    ('x ** 3', lambda x: x ** 3, lambda x: x ** 3),
    ('x ** -0.5', lambda x: x ** -0.5, lambda x: x ** -0.5),
    ('2 ** x', lambda x: 2 ** x, lambda x: 2 ** x),
    ('-x', lambda x: -x, lambda x: -x),
    ('x + arr', lambda x: x + np.arange(4.0), lambda x: x + np.arange(4.0)),
    ('arr * x', lambda x: np.arange(1.0, 5.0) * x, lambda x: np.arange(1.0, 5.0) * x),
    ('arr - x', lambda x: np.ones((2, 3, 4)) - x, lambda x: np.ones((2, 3, 4)) - x),
    ('x / arr', lambda x: x / np.full((2, 1, 4), 3.0), lambda x: x / np.full((2, 1, 4), 3.0)),
]


@pytest.mark.parametrize('name,op,ref', CONSTANT_OPS, ids=[c[0] for c in CONSTANT_OPS])
def test_ops_with_constants(name, op, ref):
    x = positive(3, 4)
    np.testing.assert_allclose(op(Variable(x)).data, ref(x), rtol=1e-15)
    check_backward(op, x)
    check_double_backward(op, x)


def test_rpow_with_a_constant_array_base():
    base = np.array([2.0, 3.0, 0.5])
    x = positive(3)
    check_backward(lambda v: base ** v, x)


def test_constant_operands_get_no_graph_input():
    x = Variable(positive(3))
    y = x * 2.0
    assert y.creator.inputs == (x,)  # the scalar is kept on the function, not a graph input


@pytest.mark.parametrize('shape,new', [((2, 3), (3, 2)), ((2, 3, 4), (6, -1)), ((6,), (1, 2, 3))])
def test_reshape(shape, new):
    x = randn(*shape)
    np.testing.assert_array_equal(C.reshape(Variable(x), new).data, x.reshape(new))
    check_backward(lambda v: C.reshape(v, new), x)


def test_reshape_to_same_shape_returns_the_input():
    x = Variable(randn(2, 3))
    assert C.reshape(x, (2, 3)) is x


@pytest.mark.parametrize('shape,axes', [((2, 3), None), ((2, 3, 4), (1, 2, 0)),
                                        ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, 1))])
def test_transpose(shape, axes):
    x = randn(*shape)
    np.testing.assert_array_equal(C.transpose(Variable(x), axes).data, x.transpose(axes))
    check_backward(lambda v: C.transpose(v, axes), x)
    check_double_backward(lambda v: C.transpose(v, axes) ** 2, x)


@pytest.mark.parametrize('index', [
    1, -1, slice(1, 3), (slice(None), 2), (Ellipsis, 1), (None, 0),
    np.array([0, 2, 0, 1]), (np.array([0, 1, 1]), np.array([2, 2, 0])), np.array([True, False, True]),
], ids=str)
def test_get_item_including_repeated_indices(index):
    x = randn(3, 4)
    np.testing.assert_array_equal(Variable(x)[index].data, x[index])
    check_backward(lambda v: v[index], x)
    check_double_backward(lambda v: v[index] ** 2, x)


def test_get_item_repeated_index_accumulates():
    x = Variable(np.array([1.0, 2.0, 3.0]))
    y = x[np.array([0, 0, 2])]
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 0.0, 1.0])


@pytest.mark.parametrize('axis', [None, 0, 1, -1, (0, 2), (2, 0)])
@pytest.mark.parametrize('keepdims', [False, True])
def test_sum(axis, keepdims):
    x = randn(2, 3, 4)
    np.testing.assert_allclose(C.sum(Variable(x), axis, keepdims).data,
                               x.sum(axis=axis, keepdims=keepdims))
    check_backward(lambda v: C.sum(v, axis, keepdims), x)
    check_double_backward(lambda v: C.sum(v * v, axis, keepdims), x)


@pytest.mark.parametrize('shape,target', [((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3, 4), (1, 4)),
                                          ((2, 3), ()), ((4,), (1,))])
def test_sum_to_and_broadcast_to(shape, target):
    x = randn(*shape)
    y = C.sum_to(Variable(x), target)
    assert y.shape == target
    check_backward(lambda v: C.sum_to(v, target), x)
    t = randn(*target)
    z = C.broadcast_to(Variable(t), shape)
    np.testing.assert_array_equal(z.data, np.broadcast_to(t, shape))
    check_backward(lambda v: C.broadcast_to(v, shape), t)
    check_double_backward(lambda v: C.broadcast_to(v * v, shape), t)


@pytest.mark.parametrize('dtype', [np.float64, np.float32, np.float16])
@pytest.mark.parametrize('shape,target', [((5, 3), (3,)), ((2, 5, 3), (3,)), ((2, 5, 3), (5, 3)),
                                          ((2, 3), ()), ((2, 3), (2, 1)), ((2, 5, 3), (1, 3))])
def test_sum_to_array_sums_as_numpy_and_returns_a_fresh_array(shape, target, dtype):
    # the values are numpy's sum over the summed axes, bit for bit, and the result owns its
    # memory (a leaf's .grad then need not copy it): a bias's gradient (N, O) -> (O,) included
    from dezero_kr.array_utils import array_sum, sum_to
    x = np.asarray(randn(*shape) * 3, dtype)
    got = sum_to(x, target)
    lead = len(shape) - len(target)
    axes = tuple(range(lead)) + tuple(i + lead for i, t in enumerate(target) if t == 1 != shape[i + lead])
    want = array_sum(x, axes, keepdims=True).reshape(target)
    assert type(got) is np.ndarray and got.shape == target and got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)
    if lead and len(axes) == lead and target:
        assert got.base is None


def test_sum_to_rejects_incompatible_shapes():
    with pytest.raises(ValueError, match=r'SumTo.*\(2, 3\).*\(4,\)'):
        C.sum_to(Variable(randn(2, 3)), (4,))


@pytest.mark.parametrize('a_shape,b_shape', [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)),
                                             ((3,), (3,)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 4)),
                                             ((1, 2, 3), (4, 3, 2))])
def test_matmul_all_numpy_cases(a_shape, b_shape):
    a, b = randn(*a_shape), randn(*b_shape)
    np.testing.assert_allclose(C.matmul(Variable(a), Variable(b)).data, a @ b)
    check_backward(C.matmul, a, b)
    check_double_backward(C.matmul, a, b)


def test_matmul_skips_gradient_of_a_constant_input():
    W = Variable(randn(3, 2))
    y = C.matmul(randn(4, 3), W)
    gx, gW = y.creator.backward(Variable(np.ones((4, 2))))
    assert gx is None and gW.shape == (3, 2)


@pytest.mark.parametrize('fn', [C.max, C.min], ids=['max', 'min'])
@pytest.mark.parametrize('axis,keepdims', [(None, False), (0, False), (1, True), ((0, 2), False),
                                           (-1, True)])
def test_max_min(fn, axis, keepdims):
    x = rng.permutation(24).reshape(2, 3, 4).astype(np.float64)  # no ties
    ref = x.max if fn is C.max else x.min
    np.testing.assert_array_equal(fn(Variable(x), axis, keepdims).data, ref(axis=axis, keepdims=keepdims))
    check_backward(lambda v: fn(v, axis, keepdims), x)


def test_max_ties_split_the_gradient_evenly():
    # Issue 11 changed DeZero's rule (every tie got the whole gradient, sum 2)
    # to PyTorch's amax / JAX rule: the ties share it.  Details in test_trust_core.py.
    x = Variable(np.array([1.0, 3.0, 3.0]))
    C.max(x).backward()
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.5, 0.5])


def test_elementwise_dtype_and_grad_dtype_float32():
    x = Variable(positive(3, 4).astype(np.float32))
    w = Variable(positive(4).astype(np.float32))
    y = C.sum((x * w - x / w + x ** 2 + 2 ** x) @ C.transpose(x), axis=0)
    y.backward()
    assert y.dtype == x.grad.dtype == w.grad.dtype == np.float32
