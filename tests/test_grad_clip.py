"""Gradient clipping against hand-computed values and the seed's definitions (seed 004)."""
import math

import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import Parameter, Variable, cuda
from dezero_kr.grad_clip import (AdaptiveClipGrad, ClipGradNorm, ClipGradValue, adaptive_clip_grad,
                                 clip_grad_norm, clip_grad_norm_per_tensor, clip_grad_value)


def _param(grad, data=None, dtype=np.float64):
    grad = np.asarray(grad, dtype=dtype)
    p = Parameter(np.ones_like(grad) if data is None else np.asarray(data, dtype=dtype))
    p.grad = Variable(grad)
    return p


def _two_params(dtype=np.float64):
    # Concatenated gradient vector: [3, -4, 0, 12]
    return _param([3.0, -4.0], dtype=dtype), _param([[0.0, 12.0]], dtype=dtype)


# =============================================================================
# Value clipping
# =============================================================================
def test_clip_grad_value_clips_each_element():
    a, b = _two_params()
    clip_grad_value([a, b], 3.5)
    np.testing.assert_array_equal(a.grad.data, [3.0, -3.5])
    np.testing.assert_array_equal(b.grad.data, [[0.0, 3.5]])


def test_clip_grad_value_accepts_a_generator_and_skips_none_grads():
    a, b = _two_params()
    frozen = Parameter(np.zeros(2))
    clip_grad_value((p for p in [a, frozen, b]), 1)
    np.testing.assert_array_equal(a.grad.data, [1.0, -1.0])
    assert frozen.grad is None


def test_clip_grad_value_rejects_a_negative_value():
    a, _ = _two_params()
    with pytest.raises(ValueError, match='clip_value must be >= 0'):
        clip_grad_value([a], -1.0)


# =============================================================================
# Global norm clipping
# =============================================================================
# |3| + |-4| + |0| + |12| = 19;  sqrt(9 + 16 + 144) = 13;  (27 + 64 + 1728)^(1/3);  max = 12
NORMS = [(1, 19.0), (2, 13.0), (3, 1819.0 ** (1 / 3)), (math.inf, 12.0), ('inf', 12.0)]


@pytest.mark.parametrize('norm_type, expected', NORMS)
def test_clip_grad_norm_returns_the_pre_clip_global_norm_and_scales_all(norm_type, expected):
    a, b = _two_params()
    total = clip_grad_norm([a, b], max_norm=2.0, norm_type=norm_type)
    assert type(total) is float
    assert total == pytest.approx(expected, rel=1e-12)
    coef = 2.0 / (expected + 1e-6)
    np.testing.assert_allclose(a.grad.data, [3.0 * coef, -4.0 * coef], rtol=1e-12)
    np.testing.assert_allclose(b.grad.data, [[0.0, 12.0 * coef]], rtol=1e-12)


@pytest.mark.parametrize('norm_type, expected', NORMS)
def test_clip_grad_norm_leaves_small_gradients_bit_identical(norm_type, expected):
    a, b = _two_params()
    before = [a.grad.data, b.grad.data]
    copies = [x.copy() for x in before]
    total = clip_grad_norm([a, b], max_norm=expected + 1e-3, norm_type=norm_type)
    assert total == pytest.approx(expected)
    assert a.grad.data is before[0] and b.grad.data is before[1]
    for now, old in zip([a.grad.data, b.grad.data], copies):
        assert now.tobytes() == old.tobytes()


def test_clip_grad_norm_seed_formula_on_random_gradients():
    rng = np.random.default_rng(0)
    params = [_param(rng.normal(size=s) * 5) for s in [(3, 4), (4,), (2, 3, 2)]]
    flat = np.concatenate([p.grad.data.ravel() for p in params])
    total = clip_grad_norm(params, 1.0)
    assert total == pytest.approx(np.linalg.norm(flat), rel=1e-12)
    clipped = np.concatenate([p.grad.data.ravel() for p in params])
    np.testing.assert_allclose(clipped, flat * min(1.0, 1.0 / (total + 1e-6)), rtol=1e-12)
    assert np.linalg.norm(clipped) == pytest.approx(1.0, abs=1e-5)  # direction kept, length c


def test_clip_grad_norm_keeps_float32_and_accepts_the_clipgrad_signature():
    a, b = _two_params(np.float32)
    total = clip_grad_norm(iter([a, b]), 1.0, eps=1e-6)
    assert total == pytest.approx(13.0)
    assert a.grad.data.dtype == np.float32 and b.grad.data.dtype == np.float32
    np.testing.assert_allclose(a.grad.data, [3 / 13, -4 / 13], rtol=1e-6)


def test_clip_grad_norm_without_gradients_returns_zero():
    assert clip_grad_norm([Parameter(np.ones(2))], 1.0) == 0.0
    assert clip_grad_norm([], 1.0) == 0.0
    zero = _param([0.0, 0.0])
    assert clip_grad_norm([zero], 1.0, eps=0.0) == 0.0
    assert clip_grad_norm_per_tensor([zero], 1.0, eps=0.0) == [0.0]
    np.testing.assert_array_equal(zero.grad.data, [0.0, 0.0])


@pytest.mark.parametrize('bad', [math.nan, math.inf])
def test_clip_grad_norm_error_if_nonfinite(bad):
    a, b = _two_params()
    b.grad.data[0, 0] = bad
    with pytest.raises(RuntimeError, match=r'total norm of order 2\.0 .* is (nan|inf).*cannot be '
                                           r'clipped.*error_if_nonfinite=False'):
        clip_grad_norm([a, b], 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(a.grad.data, [3.0, -4.0])  # nothing touched


@pytest.mark.filterwarnings('ignore:invalid value:RuntimeWarning')
def test_clip_grad_norm_scales_by_a_nonfinite_norm_like_pytorch():
    a, b = _two_params()
    b.grad.data[0, 0] = np.nan
    assert math.isnan(clip_grad_norm([a, b], 1.0))
    assert np.isnan(a.grad.data).all()  # clipping cannot repair a NaN: it spreads it
    a, b = _two_params()
    b.grad.data[0, 0] = np.inf
    assert clip_grad_norm([a, b], 1.0) == math.inf
    np.testing.assert_array_equal(a.grad.data, [0.0, -0.0])


def test_shared_gradient_object_is_counted_and_scaled_once():
    a, b = Parameter(np.ones(2)), Parameter(np.ones(2))
    a.grad = b.grad = Variable(np.array([3.0, 4.0]))
    total = clip_grad_norm([a, b], 1.0, eps=0.0)
    assert total == 5.0  # one vector [3, 4], not [3, 4, 3, 4]
    np.testing.assert_allclose(a.grad.data, [0.6, 0.8])
    assert a.grad is b.grad


def test_shared_gradient_array_is_scaled_once_and_seen_by_both():
    shared = np.array([3.0, 4.0])
    a, b = Parameter(np.ones(2)), Parameter(np.ones(2))
    a.grad, b.grad = Variable(shared), Variable(shared)
    total = clip_grad_norm([a, b], 1.0, eps=0.0)
    assert total == 5.0
    np.testing.assert_allclose(a.grad.data, [0.6, 0.8])
    assert b.grad.data is a.grad.data
    np.testing.assert_array_equal(shared, [3.0, 4.0])  # the old array itself is never written


def test_engine_gradients_of_two_leaves_are_clipped_separately():
    a, b = Parameter(np.array([1.0, 1.0])), Parameter(np.array([1.0, 1.0]))
    y = F.sum(a + b)  # one gradient object flows to both; the engine gives each leaf its own
    y.backward()
    assert a.grad is not b.grad
    total = clip_grad_norm([a, b], 1.0, eps=0.0)
    assert total == pytest.approx(2.0)
    np.testing.assert_allclose(a.grad.data, [0.5, 0.5])
    np.testing.assert_allclose(b.grad.data, [0.5, 0.5])


def test_read_only_engine_gradients_can_be_clipped():
    # sum's backward hands out a read-only broadcast view of the seed
    a = Parameter(np.zeros(4))
    F.sum(a * 1.0).backward()
    clip_grad_value([a], 0.5)
    np.testing.assert_array_equal(a.grad.data, [0.5] * 4)
    a.cleargrad()
    F.sum(a).backward()
    clip_grad_norm([a], 1.0, eps=0.0)
    np.testing.assert_allclose(a.grad.data, [0.5] * 4)


@pytest.mark.parametrize('kwargs, match', [
    (dict(max_norm=-1.0), 'max_norm must be >= 0'),
    (dict(max_norm=1.0, norm_type=0), 'norm_type must be a positive number'),
    (dict(max_norm=1.0, norm_type='fro'), 'norm_type must be a positive number'),
])
def test_clip_grad_norm_rejects_bad_arguments(kwargs, match):
    a, _ = _two_params()
    with pytest.raises(ValueError, match=match):
        clip_grad_norm([a], **kwargs)


def test_params_must_be_variables():
    with pytest.raises(TypeError, match='params must be Variables'):
        clip_grad_norm([np.ones(2)], 1.0)


# =============================================================================
# Per-tensor norm clipping
# =============================================================================
def test_clip_grad_norm_per_tensor_clips_each_gradient_alone():
    a = _param([3.0, 4.0])       # norm 5   -> scaled to 2
    b = _param([[0.6, 0.8]])     # norm 1   -> untouched
    frozen = Parameter(np.ones(1))
    before_b = b.grad.data
    norms = clip_grad_norm_per_tensor([a, frozen, b], 2.0, eps=0.0)
    assert norms == [5.0, None, pytest.approx(1.0)]
    np.testing.assert_allclose(a.grad.data, [1.2, 1.6])
    assert b.grad.data is before_b


def test_clip_grad_norm_per_tensor_other_orders_and_dtype():
    a = _param([3.0, -4.0], dtype=np.float32)
    norms = clip_grad_norm_per_tensor([a], 1.0, norm_type='inf', eps=0.0)
    assert norms == [4.0]
    np.testing.assert_allclose(a.grad.data, [0.75, -1.0])
    assert a.grad.data.dtype == np.float32
    a = _param([3.0, -4.0])
    assert clip_grad_norm_per_tensor([a], 100.0, norm_type=1) == [7.0]


# =============================================================================
# Adaptive gradient clipping (AGC)
# =============================================================================
def _agc_reference(W, G, lam, eps, unit_axes):
    """Seed 004's rule written unit by unit with explicit loops."""
    G = G.copy()
    units = [()] if unit_axes is None else np.ndindex(*[W.shape[a] for a in unit_axes])
    for u in units:
        index = [slice(None)] * W.ndim
        for axis, i in zip(unit_axes or (), u):
            index[axis] = i
        index = tuple(index)
        w_norm = max(np.linalg.norm(W[index]), eps)
        g_norm = np.linalg.norm(G[index])
        if g_norm / w_norm > lam:
            G[index] = lam * w_norm / g_norm * G[index]
    return G


@pytest.mark.parametrize('shape, unit_axes', [
    ((5,), None),          # bias / gain: the whole vector is one unit (NFNet reference)
    ((4, 3), (1,)),        # Linear W (in, out): one unit per output column
    ((3, 2, 2, 2), (0,)),  # Conv W (OC, C, KH, KW): one unit per output channel
])
def test_adaptive_clip_grad_matches_the_unitwise_rule(shape, unit_axes):
    rng = np.random.default_rng(1)
    W = rng.normal(size=shape)
    G = rng.normal(size=shape)
    first_unit = (slice(None),) * (unit_axes or (0,))[0] + (0,)
    if unit_axes is not None:
        G[first_unit] *= 1e-4  # this unit stays under λ, the others are clipped
    p = _param(G, data=W)
    adaptive_clip_grad([p], clipping=0.05)
    expected = _agc_reference(W, G, 0.05, 1e-3, unit_axes)
    changed = ~np.isclose(expected, G)
    assert changed.any()
    if unit_axes is not None:
        assert not changed[first_unit].any() and changed.sum() == G.size - G[first_unit].size
    np.testing.assert_allclose(p.grad.data, expected, rtol=1e-12)


def test_adaptive_clip_grad_by_hand_on_a_linear_weight():
    # W (in=2, out=2): column norms 5 and 0 (-> eps); G column norms 1 and sqrt(2)
    W = np.array([[3.0, 0.0], [4.0, 0.0]])
    G = np.array([[0.6, 1.0], [0.8, 1.0]])
    p = _param(G, data=W)
    adaptive_clip_grad([p], clipping=0.1)
    # column 0: 1/5 > 0.1 -> scaled to norm 0.1*5 = 0.5; column 1: scaled to 0.1*1e-3
    np.testing.assert_allclose(p.grad.data[:, 0], [0.3, 0.4])
    np.testing.assert_allclose(p.grad.data[:, 1], [1e-4 / np.sqrt(2)] * 2)


def test_adaptive_clip_grad_leaves_small_ratios_untouched_and_keeps_dtype():
    p = _param([[0.001, 0.002]], data=[[1.0, 1.0]], dtype=np.float32)
    before = p.grad.data
    adaptive_clip_grad([p])
    assert p.grad.data is before
    q = _param([[5.0, 0.0]], data=[[1.0, 1.0]], dtype=np.float32)
    adaptive_clip_grad([q], clipping=0.5)
    assert q.grad.data.dtype == np.float32
    np.testing.assert_allclose(q.grad.data, [[0.5, 0.0]])


def test_adaptive_clip_grad_rejects_bad_arguments():
    with pytest.raises(ValueError, match='clipping must be > 0'):
        adaptive_clip_grad([_param([1.0])], clipping=0)
    p = _param([1.0, 2.0], data=[1.0, 2.0])
    p.data = np.ones(3)
    with pytest.raises(ValueError, match=r'data of shape \(3,\) but a gradient of shape \(2,\)'):
        adaptive_clip_grad([p])


# =============================================================================
# Optimizer hooks
# =============================================================================
class _FakeOptimizer:
    """DeZero's Optimizer.update contract: hooks get the params that have a grad."""

    def __init__(self, params):
        self.params, self.hooks = params, []

    def add_hook(self, f):
        self.hooks.append(f)

    def update(self):
        params = [p for p in self.params if p.grad is not None]
        for f in self.hooks:
            f(params)
        for p in params:
            p.data -= 0.1 * p.grad.data


def test_clip_grad_norm_hook_clips_and_records_the_pre_clip_norm():
    a, b = _two_params()
    opt = _FakeOptimizer([a, b, Parameter(np.zeros(1))])
    hook = ClipGradNorm(1.0)
    assert hook.last_norm is None
    opt.add_hook(hook)
    opt.update()
    assert hook.last_norm == pytest.approx(13.0)
    np.testing.assert_allclose(a.data, 1 - 0.1 * np.array([3.0, -4.0]) / 13, rtol=1e-6)
    hook_inf = ClipGradNorm(1.0, norm_type='inf')
    hook_inf([_param([3.0, -4.0])])
    assert hook_inf.last_norm == 4.0


def test_clip_grad_value_and_agc_hooks():
    a, b = _two_params()
    opt = _FakeOptimizer([a, b])
    hook = ClipGradValue(1.0)
    opt.add_hook(hook)
    opt.update()
    assert hook.last_norm == pytest.approx(13.0)
    np.testing.assert_array_equal(a.grad.data, [1.0, -1.0])
    p = _param([[5.0, 0.0]], data=[[1.0, 1.0]])
    agc = AdaptiveClipGrad(clipping=0.5)
    agc([p])
    assert agc.last_norm == 5.0
    np.testing.assert_allclose(p.grad.data, [[0.5, 0.0]])


def test_hook_constructors_validate():
    with pytest.raises(ValueError):
        ClipGradNorm(-1.0)
    with pytest.raises(ValueError):
        ClipGradNorm(1.0, norm_type=-2)
    with pytest.raises(ValueError):
        ClipGradValue(-0.1)
    with pytest.raises(ValueError):
        AdaptiveClipGrad(clipping=0.0)

