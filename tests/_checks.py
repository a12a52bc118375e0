"""Gradient checks shared by the tests: backprop (and double backprop) against
central differences in float64, with random output weights so that errors a
plain ``sum`` would hide (softmax rows always sum to 1) still show up."""
import struct

import numpy as np

from dezero_kr import Variable


def numeric_grad(g, arrays, index, eps=1e-6):
    """d g(*arrays) / d arrays[index] by central differences (g returns a float)."""
    x = arrays[index]
    grad = np.zeros_like(x, dtype=np.float64)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        plus = g(*arrays)
        x[idx] = old - eps
        minus = g(*arrays)
        x[idx] = old
        grad[idx] = (plus - minus) / (2 * eps)
    return grad


def _weights_like(shape, seed):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def check_backward(f, *arrays, rtol=1e-5, atol=1e-7, seed=0, wrt=None):
    """Assert backprop of ``sum(f(*xs) * w)`` matches central differences for each input.

    ``arrays`` are float64 ndarrays (copied); ``wrt`` limits which inputs are checked.
    """
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    xs = [Variable(a.copy()) for a in arrays]
    y = f(*xs)
    w = _weights_like(y.shape, seed)
    (y * w).sum().backward()

    def loss(*arrs):
        return float((f(*[Variable(a) for a in arrs]).data * w).sum())

    for i in (range(len(arrays)) if wrt is None else wrt):
        num = numeric_grad(loss, arrays, i)
        assert xs[i].grad is not None, f'input {i} got no gradient'
        got = xs[i].grad.data
        assert got.shape == arrays[i].shape
        np.testing.assert_allclose(got, num, rtol=rtol, atol=atol,
                                   err_msg=f'gradient of input {i}')


def check_double_backward(f, *arrays, rtol=1e-4, atol=1e-6, seed=1, wrt=None):
    """Assert the gradient of ``sum(grad_x_i(sum(f(xs) * w)) * v)`` matches central differences.

    The inner gradient is built with ``create_graph=True``, so this checks the
    backward of every backward involved (second derivatives).
    """
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    rng = np.random.default_rng(seed)

    def inner(xs):
        y = f(*xs)
        w = _weights_like(y.shape, seed)
        for x in xs:
            x.cleargrad()
        (y * w).sum().backward(create_graph=True)
        return [x.grad for x in xs]

    probe = inner([Variable(a.copy()) for a in arrays])
    vs = [rng.uniform(0.5, 1.5, a.shape) for a in arrays]
    checked = range(len(arrays)) if wrt is None else wrt

    def second(*arrs):
        xs = [Variable(a.copy()) for a in arrs]
        gs = inner(xs)
        return float(sum((g.data * v).sum() for g, v in zip(gs, vs) if g is not None))

    xs = [Variable(a.copy()) for a in arrays]
    gs = inner(xs)
    for x in xs:
        x.cleargrad()
    total = None
    for g, v in zip(gs, vs):
        if g is None:
            continue
        term = (g * v).sum()
        total = term if total is None else total + term
    total.backward()
    for i in checked:
        assert probe[i] is not None
        num = numeric_grad(second, arrays, i, eps=1e-5)
        got = xs[i].grad.data if xs[i].grad is not None else np.zeros_like(arrays[i])
        np.testing.assert_allclose(got, num, rtol=rtol, atol=atol,
                                   err_msg=f'second derivative wrt input {i}')


def png_size(path):
    """(width, height) from the PNG signature and IHDR chunk; fails on anything else."""
    with open(path, 'rb') as f:
        head = f.read(24)
    assert head[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG file'
    assert head[12:16] == b'IHDR'
    return struct.unpack('>II', head[16:24])
