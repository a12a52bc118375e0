"""optimizers: update rules against hand-computed values, hooks, schedules, saved state."""
import math

import numpy as np
import pytest

import dezero_kr.layers as L
import dezero_kr.optimizers as O
from dezero_kr import Parameter, Variable
from dezero_kr.core import broadcast_to

rng = np.random.default_rng(2)


class Two(L.Layer):
    def __init__(self, dtype=np.float64):
        super().__init__()
        self.p = Parameter(np.array([1.0, -2.0, 3.0], dtype=dtype), name='p')
        self.q = Parameter(np.array([[0.5, -0.5]], dtype=dtype), name='q')


GRADS = [(np.array([0.1, -0.2, 0.3]), np.array([[1.0, -1.0]])),
         (np.array([-0.3, 0.1, 0.2]), np.array([[0.5, 2.0]])),
         (np.array([0.2, 0.2, -0.1]), np.array([[-1.0, 0.25]]))]


def _run(opt, steps=3, dtype=np.float64):
    model = Two(dtype)
    opt.setup(model)
    for gp, gq in GRADS[:steps]:
        model.p.grad = Variable(gp.astype(dtype))
        model.q.grad = Variable(gq.astype(dtype))
        opt.update()
    return model


def _reference(rule, state=None):
    """Apply ``rule(param, grad, state, t) -> new param`` with numpy, per parameter."""
    out = []
    for i, start in enumerate((np.array([1.0, -2.0, 3.0]), np.array([[0.5, -0.5]]))):
        p, st = start.copy(), {}
        for t, grads in enumerate(GRADS, start=1):
            p = rule(p, grads[i], st, t)
        out.append(p)
    return out


def _zeros(st, name, like):
    if name not in st:
        st[name] = np.zeros_like(like)
    return st[name]


def sgd(p, g, st, t):
    return p - 0.1 * g


def momentum(p, g, st, t):
    st['v'] = 0.9 * _zeros(st, 'v', p) - 0.1 * g
    return p + st['v']


def adagrad(p, g, st, t):
    st['h'] = _zeros(st, 'h', p) + g * g
    return p - 0.1 * g / (np.sqrt(st['h']) + 1e-8)


def adadelta(p, g, st, t):
    msg = 0.95 * _zeros(st, 'msg', p) + 0.05 * g * g
    dx = np.sqrt((_zeros(st, 'msdx', p) + 1e-6) / (msg + 1e-6)) * g
    st['msg'], st['msdx'] = msg, 0.95 * st['msdx'] + 0.05 * dx * dx
    return p - dx


def rmsprop(p, g, st, t):
    st['v'] = 0.99 * _zeros(st, 'v', p) + 0.01 * g * g
    return p - 0.01 * g / (np.sqrt(st['v']) + 1e-8)


def adam(p, g, st, t):
    m = 0.9 * _zeros(st, 'm', p) + 0.1 * g
    v = 0.999 * _zeros(st, 'v', p) + 0.001 * g * g
    st['m'], st['v'] = m, v
    mhat, vhat = m / (1 - 0.9 ** t), v / (1 - 0.999 ** t)
    # DeZero adds eps outside the bias correction: lr * m / (sqrt(v) + eps)
    return p - 0.01 * mhat / (np.sqrt(vhat) + 1e-8 / math.sqrt(1 - 0.999 ** t))


def torch_adamw(lr, wd, b1=0.9, b2=0.999, eps=1e-8):
    """torch.optim.AdamW as its documentation states the algorithm (amsgrad=False, maximize=False)."""
    def rule(p, g, st, t):
        p = p - lr * wd * p                      # theta_t <- theta_{t-1} - gamma lambda theta_{t-1}
        m = b1 * _zeros(st, 'm', p) + (1 - b1) * g
        v = b2 * _zeros(st, 'v', p) + (1 - b2) * g * g
        st['m'], st['v'] = m, v
        mhat, vhat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        return p - lr * mhat / (np.sqrt(vhat) + eps)
    return rule


CASES = [
    ('SGD', lambda: O.SGD(lr=0.1), sgd),
    ('MomentumSGD', lambda: O.MomentumSGD(lr=0.1, momentum=0.9), momentum),
    ('AdaGrad', lambda: O.AdaGrad(lr=0.1), adagrad),
    ('AdaDelta', lambda: O.AdaDelta(), adadelta),
    ('RMSprop', lambda: O.RMSprop(), rmsprop),
    ('Adam', lambda: O.Adam(alpha=0.01), adam),
    ('AdamW', lambda: O.AdamW(alpha=0.01, weight_decay=0.1), torch_adamw(0.01, 0.1)),
    # a large eps: where PyTorch's placement (after the bias correction) and DeZero's differ most
    ('AdamW-eps', lambda: O.AdamW(alpha=0.05, beta2=0.95, eps=0.1, weight_decay=0.3),
     torch_adamw(0.05, 0.3, b2=0.95, eps=0.1)),
    ('AdamW-no-decay', lambda: O.AdamW(alpha=0.01, eps=1e-3, weight_decay=0), torch_adamw(0.01, 0, eps=1e-3)),
]


@pytest.mark.parametrize('name,make,rule', CASES, ids=[c[0] for c in CASES])
def test_update_rule_matches_hand_computation(name, make, rule):
    model = _run(make())
    ref = _reference(rule)
    np.testing.assert_allclose(model.p.data, ref[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(model.q.data, ref[1], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize('name,make,rule', CASES, ids=[c[0] for c in CASES])
def test_float32_parameters_and_state_stay_float32(name, make, rule):
    opt = make()
    model = _run(opt, dtype=np.float32)
    assert model.p.dtype == model.q.dtype == np.float32
    for slots in opt._state.values():
        assert all(a.dtype == np.float32 for a in slots.values())
    ref = _reference(rule)
    np.testing.assert_allclose(model.p.data, ref[0], rtol=1e-5, atol=1e-6)


def test_defaults_and_adam_lr_property():
    assert O.SGD().lr == 0.01
    assert (O.MomentumSGD().lr, O.MomentumSGD().momentum) == (0.01, 0.9)
    assert (O.AdaGrad().lr, O.AdaGrad().eps) == (0.001, 1e-8)
    assert (O.AdaDelta().rho, O.AdaDelta().eps) == (0.95, 1e-6)
    assert (O.RMSprop().lr, O.RMSprop().alpha, O.RMSprop().eps) == (0.01, 0.99, 1e-8)
    adam = O.Adam()
    assert (adam.alpha, adam.beta1, adam.beta2, adam.eps) == (0.001, 0.9, 0.999, 1e-8)
    assert O.AdamW().weight_decay == 0.01
    adam.t = 3
    assert adam.lr == pytest.approx(0.001 * math.sqrt(1 - 0.999 ** 3) / (1 - 0.9 ** 3), rel=1e-15)


def test_adam_keeps_dezero_eps_and_differs_from_adamw_without_decay():
    # Same hyper-parameters, weight_decay=0: Adam is DeZero's, AdamW is torch's; with eps
    # near sqrt(v_hat) the two placements give visibly different steps.
    a = _run(O.Adam(alpha=0.01, eps=0.05), steps=1)
    w = _run(O.AdamW(alpha=0.01, eps=0.05, weight_decay=0), steps=1)
    g = GRADS[0][0]
    bc2 = math.sqrt(1 - 0.999)
    np.testing.assert_allclose(a.p.data, [1, -2, 3] - 0.01 * bc2 / 0.1 * (0.1 * g) / (np.abs(g) * bc2 + 0.05),
                               rtol=1e-13)
    np.testing.assert_allclose(w.p.data, [1, -2, 3] - 0.01 * g / (np.abs(g) + 0.05), rtol=1e-13)
    assert np.max(np.abs(a.p.data - w.p.data)) > 1e-3


def test_adamw_decay_is_decoupled_from_the_gradient():
    # A zero gradient leaves Adam's step at zero: only the decay moves the weights.
    model = Two()
    opt = O.AdamW(alpha=0.1, weight_decay=0.5).setup(model)
    model.p.grad = Variable(np.zeros(3))
    opt.update()
    np.testing.assert_allclose(model.p.data, np.array([1.0, -2.0, 3.0]) * (1 - 0.05))
    np.testing.assert_array_equal(model.q.data, [[0.5, -0.5]])  # no gradient: not touched


def test_setup_returns_self_and_update_needs_setup():
    opt = O.SGD()
    assert opt.setup(Two()) is opt
    with pytest.raises(RuntimeError, match=r'SGD.update: call setup\(model\) first'):
        O.SGD().update()


def test_params_without_gradient_are_skipped():
    model = Two()
    opt = O.MomentumSGD().setup(model)
    model.p.grad = Variable(np.ones(3))
    opt.update()
    np.testing.assert_array_equal(model.q.data, [[0.5, -0.5]])
    assert model.q not in opt._state


# =============================================================================
# Hooks
# =============================================================================
def test_weight_decay_hook():
    model = Two()
    opt = O.SGD(lr=0.1).setup(model)
    opt.add_hook(O.WeightDecay(0.2))
    model.p.grad = Variable(np.array([0.1, 0.1, 0.1]))
    opt.update()
    p0 = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(model.p.data, p0 - 0.1 * (0.1 + 0.2 * p0), rtol=1e-15)


def test_weight_decay_with_shared_and_read_only_gradients():
    model = Two()
    shared = Variable(np.array([0.1, 0.2, 0.3]))
    model.q.data = np.array([2.0, 4.0, 6.0])
    model.p.grad = shared
    model.q.grad = shared  # one gradient Variable for two parameters
    O.WeightDecay(0.5)([model.p, model.q])
    np.testing.assert_allclose(model.p.grad.data, [0.1 + 0.5, 0.2 - 1.0, 0.3 + 1.5])
    np.testing.assert_allclose(model.q.grad.data, [0.1 + 1.0, 0.2 + 2.0, 0.3 + 3.0])
    np.testing.assert_array_equal(shared.data, [0.1, 0.2, 0.3])  # never written twice (or at all)
    # the gradient of sum() is a read-only broadcast view
    p = Parameter(np.ones(3))
    p.grad = broadcast_to(Variable(np.array(1.0)), (3,))
    assert not p.grad.data.flags.writeable
    O.WeightDecay(0.1)([p])
    np.testing.assert_allclose(p.grad.data, 1.1)


def test_clip_grad_hook_uses_the_global_norm():
    model = Two()
    model.p.grad = Variable(np.array([3.0, 0.0, 0.0]))
    model.q.grad = Variable(np.array([[0.0, 4.0]]))
    O.ClipGrad(1.0)([model.p, model.q])  # global norm 5 -> 1
    np.testing.assert_allclose(model.p.grad.data, [0.6, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(model.q.grad.data, [[0, 0.8]], rtol=1e-6)
    small = Two()
    small.p.grad = Variable(np.array([0.3, 0.0, 0.0]))
    O.ClipGrad(1.0)([small.p])
    np.testing.assert_array_equal(small.p.grad.data, [0.3, 0, 0])


def test_clip_hooks_are_re_exported():
    from dezero_kr import grad_clip
    assert O.ClipGradNorm is grad_clip.ClipGradNorm
    assert O.ClipGradValue is grad_clip.ClipGradValue
    assert O.AdaptiveClipGrad is grad_clip.AdaptiveClipGrad
    with pytest.raises(AttributeError):
        O.NoSuchHook  # noqa: B018


def test_freeze_param_works_with_update():
    class Net(L.Layer):
        def __init__(self):
            super().__init__()
            self.a = L.Linear(2, in_size=2)
            self.b = L.Linear(2, in_size=2)

    net = Net()
    frozen = [p.data.copy() for p in net.a.params()]
    opt = O.SGD(0.1).setup(net)
    opt.add_hook(O.FreezeParam(net.a, net.b.b))
    y = net.b(net.a(np.ones((1, 2), dtype=np.float32)))
    y.sum().backward()
    b_W = net.b.W.data.copy()
    opt.update()  # DeZero crashed here
    for p, before in zip(net.a.params(), frozen):
        np.testing.assert_array_equal(p.data, before)
    assert not np.array_equal(net.b.W.data, b_W)
    np.testing.assert_array_equal(net.b.b.data, 0)


# =============================================================================
# Learning-rate schedule
# =============================================================================
def test_warmup_cosine_values():
    s = O.WarmupCosine(base_lr=1.0, warmup_steps=4, total_steps=12, min_lr=0.1)
    assert [s.lr_at(t) for t in (1, 2, 4)] == [0.25, 0.5, 1.0]
    assert s.lr_at(8) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert s.lr_at(12) == s.lr_at(100) == 0.1
    no_warmup = O.WarmupCosine(2.0, 0, 10)
    assert no_warmup.lr_at(0) == 2.0 and no_warmup.lr_at(5) == pytest.approx(1.0)
    with pytest.raises(ValueError, match='0 <= warmup_steps <= total_steps'):
        O.WarmupCosine(1.0, 5, 3)


@pytest.mark.parametrize('make,attr', [(O.SGD, 'lr'), (O.MomentumSGD, 'lr'), (O.Adam, 'alpha'),
                                       (O.AdamW, 'alpha'), (O.RMSprop, 'lr'), (O.AdaGrad, 'lr')])
def test_warmup_cosine_sets_the_learning_rate_attribute(make, attr):
    model = Two()
    opt = make().setup(model)
    sched = O.WarmupCosine(0.5, warmup_steps=2, total_steps=5)
    opt.add_hook(sched)
    seen = []
    for _ in range(6):
        model.p.grad = Variable(np.ones(3))
        opt.update()
        seen.append(getattr(opt, attr))
    assert seen == [sched.lr_at(t) for t in range(1, 7)]
    assert seen[:2] == [0.25, 0.5] and seen[-1] == 0.0


def test_warmup_cosine_errors():
    with pytest.raises(ValueError, match='AdaDelta has no learning rate to schedule'):
        O.AdaDelta().add_hook(O.WarmupCosine(1.0, 1, 2))
    with pytest.raises(RuntimeError, match=r'register it with optimizer.add_hook'):
        O.WarmupCosine(1.0, 1, 2)([])


# =============================================================================
# Saved state
# =============================================================================
def test_state_dict_is_keyed_by_path_and_restores_into_a_new_model():
    opt = O.Adam(alpha=0.01)
    _run(opt, steps=2)
    d = opt.state_dict()
    assert d['t'] == 2 and set(d['state']) == {'p', 'q'} and set(d['state']['p']) == {'m', 'v'}
    assert d['hyperparams'] == {'alpha': 0.01, 'beta1': 0.9, 'beta2': 0.999, 'eps': 1e-8}
    fresh = O.Adam().setup(Two())
    fresh.load_state_dict(d)
    assert fresh.t == 2 and fresh.alpha == 0.01
    np.testing.assert_array_equal(fresh._state[fresh.target.p]['m'], d['state']['p']['m'])
    d['state']['p']['m'][0] = 123.0  # the optimizer holds its own copies
    assert fresh._state[fresh.target.p]['m'][0] != 123.0


def test_save_and_load_npz_without_pickle(tmp_path):
    opt = O.MomentumSGD(lr=0.05)
    _run(opt, steps=2)
    opt.save(tmp_path / 'opt')
    with np.load(tmp_path / 'opt.npz', allow_pickle=False) as f:
        assert sorted(f.files) == ['hyperparams/lr', 'hyperparams/momentum', 'optimizer', 'state/p/v',
                                   'state/q/v', 't']
    fresh = O.MomentumSGD().setup(Two())
    fresh.load(tmp_path / 'opt')
    assert fresh.t == 2 and fresh.lr == 0.05
    np.testing.assert_array_equal(fresh._state[fresh.target.q]['v'], opt._state[opt.target.q]['v'])
    with pytest.raises(ValueError, match='Adam.load: .* holds the state of MomentumSGD'):
        O.Adam().setup(Two()).load(tmp_path / 'opt.npz')


def test_load_state_errors_name_paths_and_shapes():
    opt = O.MomentumSGD()
    _run(opt, steps=1)
    d = opt.state_dict()

    class Other(L.Layer):
        def __init__(self):
            super().__init__()
            self.p = Parameter(np.zeros(4))

    with pytest.raises(ValueError, match=r"'p/v' has shape \(3,\) .* the parameter has shape \(4,\)"):
        O.MomentumSGD().setup(Other()).load_state_dict(d)
    with pytest.raises(ValueError, match="the state has parameter 'q', which the target does not have"):
        O.MomentumSGD().setup(Other()).load_state_dict({'t': 1, 'state': {'q': d['state']['q']}})
    with pytest.raises(ValueError, match=r"unknown state 'w' for parameter 'p' \(Adam keeps \['m', 'v'\]\)"):
        O.Adam().setup(Two()).load_state_dict({'t': 1, 'state': {'p': {'w': np.zeros(3)}}})
    target = Two()
    keep = O.MomentumSGD().setup(target)
    with pytest.raises(ValueError):
        keep.load_state_dict({'t': 5, 'state': {'p': {'v': np.zeros(7)}}})
    assert keep.t == 0 and keep._state == {}  # nothing changed on error
