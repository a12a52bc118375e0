"""Every Function, forward and backward, on the device: equal to the CPU run.

Each case is run twice from the same host arrays: on NumPy, and with every array moved to
the device (``cupy.asarray``).  The outputs and the gradients of ``sum(y * w)`` (``w`` a
fixed random weight, so every output element matters) must be device arrays and equal the
CPU's (bit for bit on the stand-in).  The cases mirror ``tests/test_jvp_coverage.py``; a
coverage test checks that every Function class the package defines ran on the device, the
backward-only ones through double-backprop cases, as the CPU coverage test does.
"""
import importlib
import inspect
import pkgutil
import warnings

import cupy
import numpy as np
import pytest
from _device import STANDIN, assert_same

import dezero_kr
from dezero_kr import Function, Variable, core, using_config
from dezero_kr import functions_conv as C2
from dezero_kr import functions_math as M
from dezero_kr import functions_nn as N
from dezero_kr.reverse_mode import grad
from dezero_kr.transformer import TokenPositionEmbedding


def _r(*shape, low=-1.0, high=1.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def _pos(*shape, seed=0):
    return _r(*shape, low=0.5, high=1.5, seed=seed)


def _labels(n, classes, seed=0):
    return np.random.default_rng(seed).integers(0, classes, size=n)


X34, Y34, W4 = _r(3, 4), _r(3, 4, seed=1), _r(4, seed=2)
IMG = _r(2, 3, 5, 5, seed=20)
IMG_NAN = IMG.copy()
IMG_NAN[0, 1, 2, 3] = np.nan  # NaN is the maximum: its window sends the gradient there


def _double(loss):
    """The gradient of ``loss`` with create_graph: runs the backward-only Functions."""
    def gradient(xp, *xs):
        return grad(loss(xp, *xs), list(xs), create_graph=True, materialize_grads=True)
    return gradient


# (name, fn(xp, *variables), *host arrays).  `xp.asarray(c)` puts a host constant where the
# inputs are, as user code on a GPU would.
CASES = [
    ('add broadcast', lambda xp, a, b: a + b, X34, W4),
    ('sub broadcast', lambda xp, a, b: a - b, W4, X34),
    ('mul broadcast', lambda xp, a, b: a * b, X34, _r(3, 1, seed=3)),
    ('div broadcast', lambda xp, a, b: a / b, X34, _pos(4)),
    ('constants', lambda xp, a: 2 - (a + 1) * 3 / 4 - 1 / (a + 2) + 2 ** a, X34),
    ('array constants', lambda xp, a: a * xp.asarray(W4) + xp.asarray(W4) - a / xp.asarray(
        _pos(4)), X34),
    ('pow constant', lambda xp, a: a ** 3, X34),
    ('pow variable', lambda xp, a, e: a ** e, _pos(3, 4), _r(3, 4, seed=4)),
    ('neg', lambda xp, a: -a, X34),
    ('matmul 2-D', lambda xp, a, b: a @ b, X34, _r(4, 2, seed=5)),
    ('matmul batched', lambda xp, a, b: core.matmul(a, b), _r(2, 3, 4), _r(4, 5, seed=6)),
    ('reshape', lambda xp, a: core.reshape(a, (2, 6)), X34),
    ('transpose axes', lambda xp, a: core.transpose(a, (2, 0, 1)), _r(2, 3, 4)),
    ('get_item basic', lambda xp, a: a[1:, ::2], X34),
    ('get_item fancy repeated', lambda xp, a: a[xp.asarray([0, 2, 0])], X34),
    ('sum axis keepdims', lambda xp, a: core.sum(a, axis=1, keepdims=True), X34),
    ('sum_to', lambda xp, a: core.sum_to(a, (1, 4)), X34),
    ('broadcast_to', lambda xp, a: core.broadcast_to(a, (3, 4)), W4),
    ('max axis', lambda xp, a: core.max(a, axis=0), X34),
    ('min axis keepdims', lambda xp, a: core.min(a, axis=1, keepdims=True), X34),
    ('copy', lambda xp, a: core._Copy()(a), X34),
    ('clip', lambda xp, a: M.clip(a, -0.5, 0.5), _r(3, 4, seed=7)),
    ('maximum', lambda xp, a, b: M.maximum(a, b), X34, Y34),
    ('maximum with a Python number', lambda xp, a: M.maximum(a, 0.3), X34),
    ('minimum', lambda xp, a, b: M.minimum(a, b), X34, Y34),
    ('where', lambda xp, a, b: M.where(xp.asarray(X34 > 0), a, b), X34, W4),
    ('concat', lambda xp, a, b: M.concat([a, b], axis=1), X34, _r(3, 2, seed=8)),
    ('stack', lambda xp, a, b: M.stack([a, b], axis=1), X34, Y34),
    ('expand_dims', lambda xp, a: M.expand_dims(a, 1), X34),
    ('average axis', lambda xp, a: M.average(a, axis=0), X34),
    ('linear', lambda xp, a, W, b: M.linear(a, W, b), X34, _r(4, 2, seed=9), _r(2, seed=10)),
    ('linear no bias', lambda xp, a, W: M.linear(a, W), X34, _r(4, 2, seed=9)),
    ('linear_simple', lambda xp, a, W, b: M.linear_simple(a, W, b), X34, _r(4, 2, seed=9),
     _r(2, seed=10)),
    ('softmax', lambda xp, a: N.softmax(a, axis=0), X34),
    ('log_softmax', lambda xp, a: N.log_softmax(a), X34),
    ('leaky_relu', lambda xp, a: N.leaky_relu(a, 0.1), X34),
    ('masked_fill', lambda xp, a: N.masked_fill(a, xp.asarray(X34 > 0.3), -2.0), X34),
    ('mean_squared_error', lambda xp, a, b: N.mean_squared_error(a, b), X34, Y34),
    ('mean_squared_error_simple', lambda xp, a, b: N.mean_squared_error_simple(a, b), X34, Y34),
    ('softmax_cross_entropy',
     lambda xp, a: N.softmax_cross_entropy(a, xp.asarray(_labels(3, 4))), X34),
    ('softmax_cross_entropy_simple',
     lambda xp, a: N.softmax_cross_entropy_simple(a, xp.asarray(_labels(3, 4))), X34),
    ('sigmoid_cross_entropy',
     lambda xp, a: N.sigmoid_cross_entropy(a, xp.asarray(_labels(12, 2).reshape(3, 4))), X34),
    ('binary_cross_entropy',
     lambda xp, a: N.binary_cross_entropy(a, xp.asarray(_labels(12, 2).reshape(3, 4))),
     _r(3, 4, low=0.1, high=0.9)),
    ('cross_entropy', lambda xp, a: N.cross_entropy(a, xp.asarray(_labels(3, 4))),
     _r(3, 4, low=0.1, high=0.9)),
    ('dropout (train)', lambda xp, a: N.dropout(a, 0.4), X34),
    ('accuracy', lambda xp, a, t: N.accuracy(a, t), X34, _labels(3, 4)),
    ('layer_norm', lambda xp, a, g, b: N.layer_norm(a, g, b), X34, _pos(4), _r(4, seed=11)),
    ('rms_norm', lambda xp, a, g: N.rms_norm(a, g), X34, _pos(4)),
    ('rms_norm without gain', lambda xp, a: N.rms_norm(a), X34),
    ('layer_norm without affine', lambda xp, a: N.layer_norm(a), X34),
    ('batch_norm (train)', lambda xp, a, g, b: N.batch_norm(a, g, b, xp.zeros(4), xp.ones(4)),
     _r(5, 4), _pos(4), _r(4, seed=12)),
    ('embed_id', lambda xp, W: N.embed_id(xp.asarray([[1, 0], [1, 2]]), W), _r(3, 4)),
    ('attention causal',
     lambda xp, q, k, v: N.scaled_dot_product_attention(q, k, v, causal=True),
     _r(2, 3, 4), _r(2, 3, 4, seed=1), _r(2, 3, 5, seed=2)),
    ('attention masked, broadcast k',
     lambda xp, q, k, v: N.scaled_dot_product_attention(
         q, k, v, mask=xp.asarray([[False, True, False]])),
     _r(2, 2, 3, 4, seed=3), _r(2, 1, 3, 4, seed=4), _r(2, 1, 3, 5, seed=5)),
    ('multi_head_attention causal', lambda xp, qkv: N.multi_head_attention(qkv, 2, causal=True),
     _r(2, 3, 12, seed=6)),
    ('conv2d', lambda xp, x, W, b: C2.conv2d(x, W, b, stride=2, pad=1), IMG,
     _r(4, 3, 3, 3, seed=21), _r(4, seed=22)),
    ('conv2d_simple', lambda xp, x, W: C2.conv2d_simple(x, W, pad=1), IMG,
     _r(4, 3, 3, 3, seed=21)),
    ('deconv2d', lambda xp, x, W, b: C2.deconv2d(x, W, b, stride=2, pad=1),
     _r(2, 3, 3, 3, seed=23), _r(3, 2, 3, 3, seed=24), _r(2, seed=25)),
    ('pooling', lambda xp, x: C2.pooling(x, 2, stride=2, pad=1), IMG),
    ('pooling, a NaN in a window', lambda xp, x: C2.pooling(x, 2, stride=2), IMG_NAN),
    ('pooling_simple', lambda xp, x: C2.pooling_simple(x, 2, stride=2), IMG),
    ('average_pooling', lambda xp, x: C2.average_pooling(x, 3, stride=2, pad=1), IMG),
    ('im2col', lambda xp, x: C2.im2col(x, 3, stride=2, pad=1), IMG),
    ('col2im', lambda xp, c: C2.col2im(c, (2, 3, 5, 5), 3, stride=2, pad=1, to_matrix=False),
     _r(2, 3, 3, 3, 3, 3, seed=26)),
    ('token + position embedding',
     lambda xp, wte, wpe: TokenPositionEmbedding(xp.asarray([[1, 0, 1], [2, 2, 0]]))(wte, wpe),
     _r(3, 4, seed=27), _r(5, 4, seed=28)),
    # double backprop: the Functions only a backward pass builds (GetItemGrad, Conv2DGradW, ...)
    ('gradient of pow variable', _double(lambda xp, a, e: core.sum((a ** e) ** 2)),
     _pos(3, 2), _r(3, 2, seed=1)),
    ('gradient of get_item', _double(lambda xp, a: core.sum(a[xp.asarray([0, 1, 0])] ** 3)),
     _r(3, 2)),
    ('gradient of max', _double(lambda xp, a: core.sum(core.max(a, axis=1) ** 2)), _r(3, 4)),
    ('gradient of conv2d', _double(lambda xp, x, W: core.sum(C2.conv2d(x, W, pad=1) ** 2)),
     _r(1, 2, 4, 4, seed=30), _r(2, 2, 3, 3, seed=31)),
    ('gradient of deconv2d',
     _double(lambda xp, x, W: core.sum(C2.deconv2d(x, W, stride=2) ** 2)),
     _r(1, 2, 3, 3, seed=33), _r(2, 2, 3, 3, seed=34)),
    ('gradient of pooling', _double(lambda xp, x: core.sum(C2.pooling(x, 2, stride=2) ** 3)),
     _r(1, 2, 4, 4, seed=32)),
    ('gradient of pooling gradient',
     _double(lambda xp, x: core.sum(_double(
         lambda xp, x: core.sum(C2.pooling(x, 2, stride=2) ** 3))(xp, x)[0] ** 2)),
     _r(1, 2, 4, 4, seed=32)),
    ('gradient of im2col', _double(lambda xp, x: core.sum(C2.im2col(x, 3, pad=1) ** 3)),
     _r(1, 2, 4, 4, seed=35)),
    ('gradient of layer_norm', _double(lambda xp, x, g, b: core.sum(N.layer_norm(x, g, b) ** 3)),
     _r(3, 4), _pos(4), _r(4, seed=36)),
]


def _unary_public_functions():
    """Public one-argument functions of every module, found by calling them (as on the CPU)."""
    found = []
    probe = _pos(3, 4, seed=99)
    for module in _modules():
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith('_') or fn.__module__ != module.__name__:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore')
                    y = fn(Variable(probe.copy()))
            except Exception:
                continue
            if isinstance(y, Variable) and y.creator is not None and y.data.dtype.kind == 'f':
                found.append((f'{module.__name__}.{name}', fn))
    return found


def _modules():
    out = []
    for info in pkgutil.walk_packages(dezero_kr.__path__, 'dezero_kr.'):
        try:
            out.append(importlib.import_module(info.name))
        except ModuleNotFoundError as e:
            if e.name and e.name.split('.')[0] == 'dezero_kr':
                raise
    return out


UNARY = [(f'unary {name}', (lambda fn: lambda xp, a: fn(a))(fn), _pos(3, 4))
         for name, fn in _unary_public_functions()]
ALL = CASES + UNARY
_ran_on_device = set()


class _Recorder:
    def on_forward(self, f, inputs, outputs):
        if any(isinstance(y.data, cupy.ndarray) for y in outputs):
            _ran_on_device.add(type(f))

    def on_backward(self, f, gys, gxs):
        pass


def _run(fn, xp, arrays):
    """Outputs and the gradients of sum(y * w) for each input, on xp's device."""
    np.random.seed(0)
    cupy.random.seed(0)
    xs = [Variable(xp.asarray(a)) for a in arrays]
    with core.observing(_Recorder()):
        ys = fn(xp, *xs)
        ys = list(ys) if isinstance(ys, (tuple, list)) else [ys]
        loss = 0
        for i, y in enumerate(ys):
            w = xp.asarray(_r(*y.shape, seed=100 + i))
            loss = loss + core.sum(y * w)
        for x in xs:
            x.cleargrad()
        loss.backward()
    return [y.data for y in ys], [x.grad.data if x.grad is not None else None for x in xs]


@pytest.mark.parametrize('case', ALL, ids=[c[0] for c in ALL])
def test_forward_and_backward_on_the_device_equal_the_cpu(case):
    name, fn, *arrays = case
    host_ys, host_gs = _run(fn, np, arrays)
    dev_ys, dev_gs = _run(fn, cupy, arrays)
    for i, (d, h) in enumerate(zip(dev_ys, host_ys)):
        assert_same(d, h, f'{name}: output {i}')
    for i, (d, h) in enumerate(zip(dev_gs, host_gs)):
        assert (d is None) == (h is None), f'{name}: gradient {i} missing on one side'
        if h is not None:
            assert_same(d, h, f'{name}: gradient {i}')


def _function_classes():
    classes = set()
    for module in _modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (issubclass(cls, Function) and cls is not Function
                    and cls.__module__ == module.__name__ and cls.forward is not Function.forward):
                classes.add(cls)
    return classes


def test_every_function_ran_on_the_device():
    with using_config('enable_backprop', True), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for _, fn, *arrays in ALL:
            _run(fn, cupy, arrays)
    missing = sorted(f'{c.__module__}.{c.__name__}' for c in _function_classes()
                     if c not in _ran_on_device)
    assert not missing, f'no case of tests/gpu_suite/test_ops_device.py runs {missing} on the device'


@pytest.mark.skipif(not STANDIN, reason='a deliberate break shown on the stand-in (not a GPU skip)')
def test_a_numpy_call_on_a_device_array_fails_here(monkeypatch):
    """The suite catches `np.*` on a device array: break Exp's forward and watch it fail."""
    monkeypatch.setattr(M.Exp, 'forward', lambda self, x: np.exp(x))
    with pytest.raises(TypeError, match='does not support ufuncs'):
        _run(lambda xp, a: M.exp(a), cupy, [X34])
    assert _run(lambda xp, a: M.exp(a), np, [X34])  # the same break passes on the CPU
