"""Every Function in dezero_kr has a forward-mode rule, and every rule agrees with reverse mode.

Functions are discovered, not listed: every ``dezero_kr`` submodule is imported
(``pkgutil``) and the ``Function`` subclasses it defines are collected, so the
modules other engineers add (``functions_nn``, ``functions_conv``, ...) are
checked without editing this file.

* ``test_every_function_overrides_jvp``: no Function may fall back to the base
  ``jvp`` (which raises NotImplementedError).
* ``test_jvp_equals_J_v``: for each case, ``jvp(f, xs, vs)`` must equal
  ``sum_i J_i v_i`` with every ``J_i`` built by reverse mode on *the same graph*
  (so random ops such as dropout use one mask for both).  Unary public
  functions are found by calling each with one array; the others are listed
  in ``CASES``.  Inputs are float64 and random, away from kinks.
* ``test_every_function_rule_is_exercised``: each discovered class must have
  had its rule run by some case (the gradient-only Functions through
  forward-over-reverse cases), or be listed in ``NOT_EXERCISED`` with a reason.
"""
import importlib
import inspect
import pkgutil
import warnings

import numpy as np
import pytest

import dezero_kr
from dezero_kr import (Config, Constant, Function, Variable, core, forward_mode, reverse_mode,
                       using_config)
from dezero_kr.autograd import grad, jvp

# Private Function subclasses allowed to keep the base jvp, each with its reason.
# (Classes without their own ``forward`` are abstract bases and never called: they are
# skipped by rule, see ``_needs_rule``.)
NO_JVP_NEEDED = {}

# Classes whose rule no numeric case runs, each with its reason.
NOT_EXERCISED = {
    'dezero_kr.functions_nn._Accuracy': 'accuracy() is piecewise constant and called under '
                                        'no_grad: its tangent is zero (None), nothing to compare',
}


# =============================================================================
# Discovery
# =============================================================================
def _function_modules():
    modules, missing = [], []
    for info in pkgutil.walk_packages(dezero_kr.__path__, 'dezero_kr.'):
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as e:  # an optional dependency (cupy, matplotlib, ...)
            if e.name and e.name.split('.')[0] == 'dezero_kr':
                raise
            missing.append((info.name, e.name))
            continue
        if any(_defined_functions(module)):
            modules.append(module)
    return modules, missing


def _defined_functions(module):
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if issubclass(cls, Function) and cls is not Function and cls.__module__ == module.__name__:
            yield cls


def _needs_rule(cls):
    # A class with no forward of its own is an abstract base: calling it would fail first.
    return cls.forward is not Function.forward


MODULES, MISSING_DEPENDENCIES = _function_modules()
CLASSES = sorted({cls for m in MODULES for cls in _defined_functions(m) if _needs_rule(cls)},
                 key=lambda c: (c.__module__, c.__name__))


def test_discovery_finds_the_known_modules_and_classes():
    names = {m.__name__ for m in MODULES}
    assert {'dezero_kr.core', 'dezero_kr.functions_math'} <= names
    found = {c.__name__ for c in CLASSES}
    assert {'Add', 'MatMul', 'GetItemGrad', 'Sin', 'Linear', 'Concat'} <= found
    assert Function not in CLASSES


@pytest.mark.parametrize('cls', CLASSES, ids=lambda c: f'{c.__module__}.{c.__name__}')
def test_every_function_overrides_jvp(cls):
    if cls.jvp is Function.jvp:
        reason = NO_JVP_NEEDED.get(f'{cls.__module__}.{cls.__name__}')
        assert reason and cls.__name__.startswith('_'), (
            f'{cls.__module__}.{cls.__name__} has no forward-mode rule: define '
            f'jvp(self, *tangents) -> one tangent per output (None = zero)')


def test_no_jvp_exemptions_are_stale():
    names = {f'{c.__module__}.{c.__name__}' for c in CLASSES}
    assert set(NO_JVP_NEEDED) <= names and set(NOT_EXERCISED) <= names


# =============================================================================
# The check: jvp == J @ v, J from reverse mode on the same graph
# =============================================================================
_exercised = set()


class _RuleRecorder:
    """Registered inside the jvp level: after the level ran an op's rule, note its class."""

    def on_forward(self, f, inputs, outputs):
        level = forward_mode._thread_levels.list[-1]
        if not level.paused and any(level.tangents.get(y) is not None for y in outputs):
            _exercised.add(type(f))

    def on_backward(self, f, gys, gxs):
        pass


def _check_jvp(f, *args, seed=0):
    """Assert ``jvp(f) == sum_i J_i v_i`` for every float input (others pass through as is)."""
    rng = np.random.default_rng(seed)
    args = [Variable(a) if isinstance(a, np.ndarray) and a.dtype.kind == 'f' else a for a in args]
    diff = [i for i, a in enumerate(args) if isinstance(a, Variable) and a.requires_grad]
    tangents = [rng.uniform(-1, 1, size=args[i].shape) for i in diff]

    def g(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        with core.observing(_RuleRecorder()):
            return f(*full)

    with using_config('enable_backprop', True):
        ys, ts = jvp(g, [args[i] for i in diff], tangents)
    ys, ts = reverse_mode._as_tuple(ys), reverse_mode._as_tuple(ts)
    xs = [args[i] for i in diff]
    for y, t in zip(ys, ts):
        expected = np.zeros(y.data.size)
        for j in range(y.data.size):
            seed_vec = np.zeros(y.data.size)
            seed_vec[j] = 1
            gs = grad(y, xs, grad_outputs=seed_vec.reshape(y.shape), materialize_grads=True)
            expected[j] = sum(float((gx.data * v).sum()) for gx, v in zip(gs, tangents))
        assert t.data.shape == y.data.shape
        np.testing.assert_allclose(t.data.ravel(), expected, rtol=1e-9, atol=1e-11)


def _r(*shape, low=-1.0, high=1.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def _pos(*shape, seed=0):
    return _r(*shape, low=0.5, high=1.5, seed=seed)


def _labels(n, classes, seed=0):
    return np.random.default_rng(seed).integers(0, classes, size=n)


# --- unary public functions, found by calling ---------------------------------
def _unary_functions():
    found = []
    probe = _pos(3, 4, seed=99)
    for module in MODULES:
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith('_') or fn.__module__ != module.__name__:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore')
                    y = fn(Variable(probe.copy()))
            except Exception:
                continue  # needs more arguments: listed in CASES if it is differentiable
            if isinstance(y, Variable) and y.creator is not None and y.data.dtype.kind == 'f':
                found.append((f'{module.__name__}.{name}', fn))
    return found


UNARY = _unary_functions()


def test_unary_discovery_finds_the_known_functions():
    names = {n.rsplit('.', 1)[1] for n, _ in UNARY}
    assert {'sin', 'exp', 'log', 'sqrt', 'tanh', 'sum', 'transpose', 'flatten'} <= names


@pytest.mark.parametrize('name, fn', UNARY, ids=[n for n, _ in UNARY])
def test_unary_jvp_equals_J_v(name, fn):
    _check_jvp(fn, _pos(3, 4))


# --- functions that need more than one array -------------------------------------
def _opt(module, name):
    """``module.name`` if that module exists (other engineers' modules may not yet)."""
    try:
        return getattr(importlib.import_module(f'dezero_kr.{module}'), name)
    except (ImportError, AttributeError):
        return None


def _cases():
    from dezero_kr import core as C
    from dezero_kr import functions_math as M
    x34, y34, w4 = _r(3, 4), _r(3, 4, seed=1), _r(4, seed=2)
    cases = [
        ('add broadcast', lambda a, b: a + b, x34, w4),
        ('sub broadcast', lambda a, b: a - b, w4, x34),
        ('mul broadcast', lambda a, b: a * b, x34, _r(3, 1, seed=3)),
        ('div broadcast', lambda a, b: a / b, x34, _pos(4)),
        ('constants', lambda a: 2 - (a + 1) * 3 / 4 - 1 / (a + 2) + 2 ** a, x34),
        ('pow constant', lambda a: a ** 3, x34),
        ('pow variable', lambda a, e: a ** e, _pos(3, 4), _r(3, 4, seed=4)),
        ('neg', lambda a: -a, x34),
        ('matmul 2-D', C.matmul, x34, _r(4, 2, seed=5)),
        ('matmul 1-D', C.matmul, w4, _r(4, 2, seed=5)),
        ('matmul batched', C.matmul, _r(2, 3, 4), _r(4, 5, seed=6)),
        ('reshape', lambda a: C.reshape(a, (2, 6)), x34),
        ('transpose axes', lambda a: C.transpose(a, (2, 0, 1)), _r(2, 3, 4)),
        ('get_item basic', lambda a: a[1:, ::2], x34),
        ('get_item fancy repeated', lambda a: a[np.array([0, 2, 0])], x34),
        ('get_item_grad', lambda g: C.GetItemGrad(np.array([0, 2, 0]), (4, 4))(g), _r(3, 4)),
        ('sum axis keepdims', lambda a: C.sum(a, axis=1, keepdims=True), x34),
        ('sum_to', lambda a: C.sum_to(a, (1, 4)), x34),
        ('broadcast_to', lambda a: C.broadcast_to(a, (3, 4)), w4),
        ('max axis', lambda a: C.max(a, axis=0), x34),
        ('min axis keepdims', lambda a: C.min(a, axis=1, keepdims=True), x34),
        ('copy (a leaf gradient under create_graph)', lambda a: C._Copy()(a), x34),
        ('clip', lambda a: M.clip(a, -0.5, 0.5), _r(3, 4, seed=7)),
        ('maximum', M.maximum, x34, y34),
        ('minimum', M.minimum, x34, y34),
        ('where', lambda a, b: M.where(x34 > 0, a, b), x34, w4),
        ('concat', lambda a, b: M.concat([a, b], axis=1), x34, _r(3, 2, seed=8)),
        ('stack', lambda a, b: M.stack([a, b], axis=1), x34, y34),
        ('expand_dims', lambda a: M.expand_dims(a, 1), x34),
        ('average axis', lambda a: M.average(a, axis=0), x34),
        ('linear', M.linear, x34, _r(4, 2, seed=9), _r(2, seed=10)),
        ('linear no bias', M.linear, x34, _r(4, 2, seed=9)),
        ('linear_simple', M.linear_simple, x34, _r(4, 2, seed=9), _r(2, seed=10)),
    ]
    nn = [
        ('softmax', 'softmax', lambda f: (lambda a: f(a, axis=0)), x34),
        ('log_softmax', 'log_softmax', lambda f: f, x34),
        ('leaky_relu', 'leaky_relu', lambda f: (lambda a: f(a, 0.1)), x34),
        ('masked_fill', 'masked_fill', lambda f: (lambda a: f(a, x34 > 0.3, -2.0)), x34),
        ('mean_squared_error', 'mean_squared_error', lambda f: f, x34, y34),
        ('mean_squared_error_simple', 'mean_squared_error_simple', lambda f: f, x34, y34),
        ('softmax_cross_entropy', 'softmax_cross_entropy', lambda f: f, x34, _labels(3, 4)),
        ('softmax_cross_entropy_simple', 'softmax_cross_entropy_simple', lambda f: f, x34,
         _labels(3, 4)),
        ('sigmoid_cross_entropy', 'sigmoid_cross_entropy', lambda f: f, x34,
         _labels(12, 2).reshape(3, 4)),
        ('binary_cross_entropy', 'binary_cross_entropy', lambda f: f, _r(3, 4, low=0.1, high=0.9),
         _labels(12, 2).reshape(3, 4)),
        ('cross_entropy', 'cross_entropy', lambda f: f, _r(3, 4, low=0.1, high=0.9), _labels(3, 4)),
        ('dropout (train)', 'dropout', lambda f: (lambda a: f(a, 0.4)), x34),
        ('layer_norm', 'layer_norm', lambda f: f, x34, _pos(4), _r(4, seed=11)),
        ('rms_norm', 'rms_norm', lambda f: f, x34, _pos(4)),
        ('rms_norm without gain', 'rms_norm', lambda f: f, x34),
        ('layer_norm without affine', 'layer_norm', lambda f: f, x34),
        ('batch_norm (train)', 'batch_norm', lambda f: (lambda a, g, b: f(a, g, b, np.zeros(4),
                                                                          np.ones(4))),
         _r(5, 4), _pos(4), _r(4, seed=12)),
        ('embed_id', 'embed_id', lambda f: (lambda W: f(np.array([[1, 0], [1, 2]]), W)),
         _r(3, 4)),
        ('attention causal', 'scaled_dot_product_attention',
         lambda f: (lambda q, k, v: f(q, k, v, causal=True)), _r(2, 3, 4), _r(2, 3, 4, seed=1),
         _r(2, 3, 5, seed=2)),
        ('attention masked, broadcast k', 'scaled_dot_product_attention',
         lambda f: (lambda q, k, v: f(q, k, v, mask=np.array([[False, True, False]]))),
         _r(2, 2, 3, 4, seed=3), _r(2, 1, 3, 4, seed=4), _r(2, 1, 3, 5, seed=5)),
        ('multi_head_attention causal', 'multi_head_attention',
         lambda f: (lambda qkv: f(qkv, 2, causal=True)), _r(2, 3, 12, seed=6)),
    ]
    for name, fn_name, wrap, *arrays in nn:
        fn = _opt('functions_nn', fn_name)
        if fn is not None:
            cases.append((name, wrap(fn), *arrays))
    bn = _opt('functions_nn', 'batch_norm')
    if bn is not None:
        def bn_test(a, g, b):
            with using_config('train', False):
                return bn(a, g, b, _r(4, seed=13), _pos(4, seed=14))
        cases.append(('batch_norm (test)', bn_test, _r(5, 4), _pos(4), _r(4, seed=12)))
    img = _r(2, 3, 5, 5, seed=20)
    conv = [
        ('conv2d', 'conv2d', lambda f: (lambda x, W, b: f(x, W, b, stride=2, pad=1)), img,
         _r(4, 3, 3, 3, seed=21), _r(4, seed=22)),
        ('conv2d_simple', 'conv2d_simple', lambda f: (lambda x, W: f(x, W, pad=1)), img,
         _r(4, 3, 3, 3, seed=21)),
        ('deconv2d', 'deconv2d', lambda f: (lambda x, W, b: f(x, W, b, stride=2, pad=1)),
         _r(2, 3, 3, 3, seed=23), _r(3, 2, 3, 3, seed=24), _r(2, seed=25)),
        ('pooling', 'pooling', lambda f: (lambda x: f(x, 2, stride=2, pad=1)), img),
        ('pooling_simple', 'pooling_simple', lambda f: (lambda x: f(x, 2, stride=2)), img),
        ('average_pooling', 'average_pooling', lambda f: (lambda x: f(x, 3, stride=2, pad=1)), img),
        ('im2col', 'im2col', lambda f: (lambda x: f(x, 3, stride=2, pad=1)), img),
        ('col2im', 'col2im', lambda f: (lambda c: f(c, (2, 3, 5, 5), 3, stride=2, pad=1, to_matrix=False)),
         _r(2, 3, 3, 3, 3, 3, seed=26)),
    ]
    for name, fn_name, wrap, *arrays in conv:
        fn = _opt('functions_conv', fn_name)
        if fn is not None:
            cases.append((name, wrap(fn), *arrays))
    from dezero_kr.transformer import TokenPositionEmbedding
    ids = np.array([[1, 0, 1], [2, 2, 0]])
    cases.append(('token + position embedding', lambda wte, wpe: TokenPositionEmbedding(ids)(wte, wpe),
                  _r(3, 4, seed=27), _r(5, 4, seed=28)))
    # Forward over reverse: the Functions that only backward passes create (GetItemGrad,
    # Conv2DGradW, Pooling2DGrad, ...) get their rules run by the jvp of a gradient.
    for name, loss, *arrays in list(_second_order_losses()):
        cases.append((f'gradient of {name}', _gradient_of(loss), *arrays))
    return cases


def _gradient_of(loss):
    def gradient(*xs):
        xs_var = [x for x in xs if isinstance(x, Variable) and x.requires_grad]
        return grad(loss(*xs), xs_var, create_graph=True, materialize_grads=True)
    return gradient


def _second_order_losses():
    from dezero_kr import core as C
    yield 'pow variable', lambda a, e: C.sum((a ** e) ** 2), _pos(3, 2), _r(3, 2, seed=1)
    yield 'get_item', lambda a: C.sum(a[np.array([0, 1, 0])] ** 3), _r(3, 2)
    yield 'max', lambda a: C.sum(C.max(a, axis=1) ** 2), _r(3, 4)
    conv2d, deconv2d = _opt('functions_conv', 'conv2d'), _opt('functions_conv', 'deconv2d')
    pooling, im2col = _opt('functions_conv', 'pooling'), _opt('functions_conv', 'im2col')
    layer_norm = _opt('functions_nn', 'layer_norm')
    if conv2d is not None:
        yield ('conv2d', lambda x, W: C.sum(conv2d(x, W, stride=1, pad=1) ** 2),
               _r(1, 2, 4, 4, seed=30), _r(2, 2, 3, 3, seed=31))
    if deconv2d is not None:
        yield ('deconv2d', lambda x, W: C.sum(deconv2d(x, W, stride=2) ** 2),
               _r(1, 2, 3, 3, seed=33), _r(2, 2, 3, 3, seed=34))
    if pooling is not None:
        pool_loss = lambda x: C.sum(pooling(x, 2, stride=2) ** 3)  # noqa: E731
        yield 'pooling', pool_loss, _r(1, 2, 4, 4, seed=32)
        # one order higher: the backward of max pooling's gradient gathers by the argmax again
        yield ('pooling gradient', lambda x: C.sum(_gradient_of(pool_loss)(x)[0] ** 2),
               _r(1, 2, 4, 4, seed=32))
    if im2col is not None:
        yield 'im2col', lambda x: C.sum(im2col(x, 3, stride=1, pad=1) ** 3), _r(1, 2, 4, 4, seed=35)
    if layer_norm is not None:
        yield ('layer_norm', lambda x, g, b: C.sum(layer_norm(x, g, b) ** 3), _r(3, 4), _pos(4),
               _r(4, seed=36))


CASES = _cases()


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_jvp_equals_J_v(case):
    name, fn, *arrays = case
    _check_jvp(fn, *arrays)


def test_every_function_rule_is_exercised():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for _, fn in UNARY:
            _check_jvp(fn, _pos(3, 4))
        for _, fn, *arrays in CASES:
            _check_jvp(fn, *arrays)
    missing = [f'{c.__module__}.{c.__name__}' for c in CLASSES
               if c not in _exercised and f'{c.__module__}.{c.__name__}' not in NOT_EXERCISED]
    assert not missing, (f'no case of tests/test_jvp_coverage.py runs the jvp rule of {missing}: '
                         f'add one to CASES (or to NOT_EXERCISED with the reason)')
    assert Config.enable_backprop


def test_constant_inputs_get_no_tangent():
    c = Constant(_r(3))
    y, t = jvp(lambda x: x * c + c, (_r(3, seed=1),), (np.ones(3),))
    np.testing.assert_allclose(t.data, c.data)
