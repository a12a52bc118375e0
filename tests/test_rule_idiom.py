"""One rule idiom (issue 13): every derivative is written once.

* A first-order ``backward()`` runs each rule on plain arrays: it calls no
  ``Function`` (no node is built), and its gradients equal those of the same
  rule run on Variables (``create_graph=True``), which also must be
  differentiable again.
* Only the rule helpers of ``dezero_kr.operators`` read the recording switch:
  no rule in ``functions_math``/``functions_nn``/``functions_conv`` does.
"""
import pathlib

import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import Function, Variable
from dezero_kr.autograd import grad
from dezero_kr.transformer import TokenPositionEmbedding

ROOT = pathlib.Path(__file__).resolve().parent.parent / 'dezero_kr'
rng = np.random.default_rng(7)


def _x(*shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, shape)


LABELS = np.array([0, 2, 1])
CASES = {
    'sin': (F.sin, [_x(3, 4)]),
    'cos': (F.cos, [_x(3, 4)]),
    'tan': (F.tan, [_x(3, 4, low=-1, high=1)]),
    'tanh': (F.tanh, [_x(3, 4)]),
    'exp': (F.exp, [_x(3, 4)]),
    'log': (F.log, [_x(3, 4, low=0.5)]),
    'sqrt': (F.sqrt, [_x(3, 4, low=0.5)]),
    'abs': (F.abs, [_x(3, 4)]),
    'clip': (lambda x: F.clip(x, -0.5, 0.5), [_x(3, 4)]),
    'sigmoid': (F.sigmoid, [_x(3, 4)]),
    'relu': (F.relu, [_x(3, 4)]),
    'leaky_relu': (F.leaky_relu, [_x(3, 4)]),
    'gelu': (F.gelu, [_x(3, 4)]),
    'softmax': (F.softmax, [_x(3, 4)]),
    'log_softmax': (F.log_softmax, [_x(3, 4)]),
    'mul': (lambda a, b: a * b, [_x(3, 4), _x(1, 4)]),
    'div': (lambda a, b: a / b, [_x(3, 4), _x(4, low=0.5)]),
    'pow': (lambda a: a ** 3, [_x(3, 4)]),
    'rpow': (lambda a: 2.0 ** a, [_x(3, 4)]),
    'rdiv': (lambda a: 2.0 / a, [_x(3, 4, low=0.5)]),
    'pow_variable': (lambda a, b: a ** b, [_x(3, 4, low=0.5), _x(3, 4)]),
    'maximum': (F.maximum, [_x(3, 4), _x(3, 4)]),
    'where': (lambda a, b: F.where(a.data > 0, a, b), [_x(3, 4), _x(4)]),
    'sum': (lambda a: F.sum(a, axis=1), [_x(3, 4)]),
    'sum_to': (lambda a: F.sum_to(a, (1, 4)), [_x(3, 4)]),
    'broadcast_to': (lambda a: F.broadcast_to(a, (3, 4)), [_x(1, 4)]),
    'get_item': (lambda a: a[np.array([0, 0, 2])], [_x(3, 4)]),
    'max': (lambda a: F.max(a, axis=0), [_x(3, 4)]),
    'concat': (lambda a, b: F.concat([a, b], axis=1), [_x(3, 2), _x(3, 4)]),
    'matmul': (F.matmul, [_x(2, 3, 4), _x(4, 2)]),
    'matmul_1d': (F.matmul, [_x(4), _x(2, 4, 3)]),
    'linear': (F.linear, [_x(3, 4), _x(4, 2), _x(2)]),
    'mean_squared_error': (F.mean_squared_error, [_x(3, 4), _x(3, 4)]),
    'softmax_cross_entropy': (lambda a: F.softmax_cross_entropy(a, LABELS), [_x(3, 4)]),
    'sigmoid_cross_entropy': (lambda a: F.sigmoid_cross_entropy(a, (LABELS > 0).astype(int)),
                              [_x(3, 1)]),
    'layer_norm': (F.layer_norm, [_x(3, 4), _x(4), _x(4)]),
    'attention': (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, causal=True),
                  [_x(2, 3, 4), _x(2, 3, 4), _x(2, 3, 5)]),
    'multi_head_attention': (lambda qkv: F.multi_head_attention(qkv, 2, causal=True), [_x(1, 3, 12)]),
    'token_position_embedding': (lambda e, p: TokenPositionEmbedding(np.array([[1, 0, 1]]))(e, p),
                                 [_x(3, 4), _x(5, 4)]),
}


def _loss(f, arrays):
    xs = [Variable(a.copy()) for a in arrays]
    y = f(*xs)
    w = Variable(rng.standard_normal(y.shape))  # a random upstream gradient
    return xs, F.sum(y * w)


@pytest.mark.parametrize('name', sorted(CASES))
def test_first_order_backward_builds_no_function_and_matches_the_recorded_rule(name, monkeypatch):
    f, arrays = CASES[name]
    state = rng.bit_generator.state
    xs, loss = _loss(f, arrays)
    called = []
    original = Function.__call__

    def counting(self, *args, **kwargs):
        called.append(type(self).__name__)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Function, '__call__', counting)
    loss.backward()
    monkeypatch.setattr(Function, '__call__', original)
    assert called == [], f'{name}: the plain backward built {called}'
    plain = [x.grad.data for x in xs]

    rng.bit_generator.state = state
    xs, loss = _loss(f, arrays)
    recorded = grad(loss, xs, create_graph=True)
    for r, g in zip(recorded, plain):
        np.testing.assert_allclose(r.data, g, rtol=1e-12, atol=1e-12)
        assert r.creator is not None, f'{name}: the recorded gradient is not differentiable'


@pytest.mark.parametrize('module', ['functions_math.py', 'functions_nn.py', 'functions_conv.py'])
def test_rules_do_not_read_the_recording_switch(module):
    text = (ROOT / module).read_text(encoding='utf-8')
    assert 'enable_backprop' not in text
