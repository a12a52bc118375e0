"""The fused ("foreach") optimizer update (issue 32, item 3): the loop's numbers bit for bit.

Every comparison runs the same training twice, once with ``foreach=False`` (the
per-parameter loop) and once fused (the default), and compares parameters and
state with ``np.array_equal`` after every update.
"""
import copy
import pickle

import numpy as np
import pytest

import dezero_kr.layers as L
import dezero_kr.optimizers as O
from dezero_kr import Parameter, Variable


class Net(L.Layer):
    """Parameters of several shapes: a matrix, vectors, a 0-d one, an empty one, a sublayer."""

    def __init__(self, dtype=np.float64, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w = Parameter(rng.standard_normal((4, 3)).astype(dtype), name='w')
        self.b = Parameter(rng.standard_normal(3).astype(dtype), name='b')
        self.s = Parameter(np.array(0.5, dtype=dtype), name='s')
        self.e = Parameter(np.zeros((0, 2), dtype=dtype), name='e')
        self.sub = L.Layer()
        self.sub.u = Parameter(rng.standard_normal((2, 5)).astype(dtype), name='u')
        self.sub.c = Parameter(rng.standard_normal(5).astype(dtype), name='c')


OPTIMIZERS = {
    'SGD': lambda **kw: O.SGD(0.1, **kw),
    'MomentumSGD': lambda **kw: O.MomentumSGD(0.1, 0.8, **kw),
    'AdaGrad': lambda **kw: O.AdaGrad(0.1, **kw),
    'AdaDelta': lambda **kw: O.AdaDelta(**kw),
    'RMSprop': lambda **kw: O.RMSprop(0.05, **kw),
    'Adam': lambda **kw: O.Adam(0.05, **kw),
    'AdamW': lambda **kw: O.AdamW(0.05, weight_decay=0.1, **kw),
}


def _grads(model, step, dtype, skip=()):
    """Deterministic gradients for ``step``; the parameters named in ``skip`` get none."""
    rng = np.random.default_rng(100 + step)
    for name, p in sorted(model.named_params()):
        g = rng.standard_normal(p.data.shape).astype(dtype)
        p.grad = None if name in skip else Variable(g)


def _arrays(model, opt):
    out = {f'param/{k}': np.array(p.data) for k, p in model.named_params()}
    for key, slots in opt.state_dict()['state'].items():
        out.update({f'state/{key}/{n}': a for n, a in slots.items()})
    return out


def _assert_same(a, b):
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k


def _hooked(name, opt, model, hooks):
    if 'decay' in hooks:
        opt.add_hook(O.WeightDecay(0.01))
    if 'clip' in hooks:
        opt.add_hook(O.ClipGrad(0.5))
    if 'freeze' in hooks:
        opt.add_hook(O.FreezeParam(model.sub.c))
    if 'schedule' in hooks and name != 'AdaDelta':
        lr = 0.05 if name in ('Adam', 'AdamW') else 0.1
        opt.add_hook(O.WarmupCosine(lr, 2, 6, min_lr=0.001))
    return opt


def _train_both(name, dtype=np.float64, steps=6, hooks=(), skip_at=None, prepare=None):
    """Train a loop copy and a fused copy (``foreach=True``: every optimizer groups) alike;
    compare after every update."""
    runs = []
    for foreach in (False, True):
        model = Net(dtype)
        if prepare is not None:
            prepare(model)
        opt = _hooked(name, OPTIMIZERS[name](foreach=foreach).setup(model), model, hooks)
        runs.append((model, opt))
    for step in range(steps):
        skip = skip_at(step) if skip_at else ()
        for model, opt in runs:
            _grads(model, step, dtype, skip)
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))
    return runs


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('name', sorted(OPTIMIZERS))
def test_fused_equals_the_loop_bit_for_bit_with_hooks_and_missing_grads(name, dtype):
    (_, loop), (model, fused) = _train_both(
        name, dtype, hooks=('decay', 'clip', 'freeze', 'schedule'),
        skip_at=lambda step: ('b', 'sub.u') if step % 3 == 1 else ('w',) if step == 4 else ())
    assert fused.fused and not loop.fused
    assert fused._flat is not None and loop._flat is None
    assert len(fused._flat.groups) == 1 and len(fused._flat.groups[0].params) == 6  # all in one group


@pytest.mark.parametrize('name', sorted(OPTIMIZERS))
def test_fused_equals_the_loop_without_hooks(name):
    _train_both(name, np.float32, steps=4)


def test_both_paths_update_the_parameters_arrays_in_place():
    """``param.data`` keeps its identity, as in DeZero: an array the user holds sees the update."""
    for foreach in (False, None, True):
        model = Net()
        held = [p.data for p in model.params()]
        opt = O.Adam(0.05, foreach=foreach).setup(model)
        for step in range(3):
            _grads(model, step, np.float64)
            before = [a.copy() for a in held]
            opt.update()
            assert all(p.data is a for p, a in zip(model.params(), held))
            changed = [not np.array_equal(a, b) for a, b in zip(held, before)]
            assert changed == [a.size > 0 for a in held], (foreach, step)


def _mixed(model):
    model.b.data = model.b.data.astype(np.float32)      # another dtype: its own group
    model.sub.c.data = model.sub.c.data[::-1]            # a non-contiguous view
    model.s.data = np.asarray(model.s.data).copy()


def test_mixed_dtypes_and_non_contiguous_arrays():
    (_, _), (model, fused) = _train_both('Adam', steps=4, prepare=_mixed, hooks=('clip',))
    assert model.b.data.dtype == np.float32
    assert len(fused._flat.groups) == 2


def _tied(model):
    model.sub.u.data = model.w.data[:2, :]  # overlapping memory: both must go one after the other


def test_parameters_sharing_memory_are_updated_one_after_the_other():
    for name in ('SGD', 'Adam', 'AdaDelta'):
        (_, _), (model, fused) = _train_both(name, steps=4, prepare=_tied)
        assert np.shares_memory(model.sub.u.data, model.w.data)  # still tied
        assert model.w not in fused._flat.where and model.sub.u not in fused._flat.where


def test_foreach_none_groups_the_small_parameters_true_all_of_them():
    big = O.Adam._flat_max_size + 1
    runs = []
    for foreach in (False, None, True):
        model = Net()
        model.w.data = np.random.default_rng(3).standard_normal(big)
        runs.append((model, O.Adam(0.05, foreach=foreach).setup(model)))
    for step in range(3):
        for model, opt in runs:
            _grads(model, step, np.float64)
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))
        _assert_same(_arrays(*runs[0]), _arrays(*runs[2]))
    (_, _), (auto_model, auto), (all_model, forced) = runs
    assert auto_model.w not in auto._flat.where and auto_model.b in auto._flat.where
    assert all_model.w in forced._flat.where
    assert not O.SGD().fused and O.SGD(foreach=True).fused  # SGD's loop is the faster one


def test_large_groups_are_split_and_still_equal_the_loop():
    runs = []
    for foreach in (False, True):
        model = Net()
        model.w.data = np.random.default_rng(4).standard_normal((O._FLAT_GROUP_SIZE - 10,))
        model.sub.u.data = np.random.default_rng(5).standard_normal((30, 2))
        runs.append((model, O.RMSprop(foreach=foreach).setup(model)))
    for step in range(3):
        for model, opt in runs:
            _grads(model, step, np.float64)
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))
    groups = runs[1][1]._flat.groups
    assert len(groups) == 2 and all(g.offsets[-1] <= O._FLAT_GROUP_SIZE for g in groups)


def test_gradients_of_another_dtype_or_shape_fall_back_to_the_loop():
    runs = [(m, O.MomentumSGD(foreach=f).setup(m)) for f, m in ((False, Net(np.float32)), (None, Net(np.float32)))]
    for step in range(3):
        for model, opt in runs:
            _grads(model, step, np.float32)
            model.w.grad = Variable(model.w.grad.data.astype(np.float64))  # promoted by the loop
            model.b.grad = Variable(np.array(0.25, np.float32))              # broadcast by the loop
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))


def test_replaced_arrays_are_detected_and_used():
    runs = [(m, O.Adam(0.05, foreach=f).setup(m)) for f, m in ((False, Net()), (None, Net()))]
    for step in range(6):
        for model, opt in runs:
            if step == 2:
                model.w.data = np.full((4, 3), 0.25)            # assignment
            if step == 3:
                model.sub.c.data = model.sub.c.data.astype(np.float32)  # another dtype
                model.s.data = model.w.data[1, 1:2].reshape(())          # tied to w
            if step == 4:
                model.sub.u.data[...] = 1.0                      # in place
                model.b.data = np.arange(3.0)
            _grads(model, step, np.float64)
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))


def test_load_weights_into_a_fused_model(tmp_path):
    src = Net(seed=5)
    src.save_weights(tmp_path / 'w.npz')
    runs = [(m, O.RMSprop(foreach=f).setup(m)) for f, m in ((False, Net()), (None, Net()))]
    for step in range(4):
        for model, opt in runs:
            if step == 2:
                model.load_weights(tmp_path / 'w.npz')
            _grads(model, step, np.float64)
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))
    assert np.array_equal(runs[1][0].w.data, runs[0][0].w.data)


@pytest.mark.parametrize('first,then', [(False, None), (None, False), (None, None)])
def test_state_continues_across_the_two_paths(first, then, tmp_path):
    """Train 3 steps, save (state_dict and file), restore into a fresh model and optimizer of the
    other kind, train 3 more: the same as 6 uninterrupted loop steps."""
    ref_model = Net(np.float32)
    ref = _hooked('Adam', O.Adam(0.05, foreach=False).setup(ref_model), ref_model, ('clip', 'schedule'))
    for step in range(6):
        _grads(ref_model, step, np.float32)
        ref.update()
    for via_file in (False, True):
        model = Net(np.float32)
        opt = _hooked('Adam', O.Adam(0.05, foreach=first).setup(model), model, ('clip', 'schedule'))
        for step in range(3):
            _grads(model, step, np.float32)
            opt.update()
        resumed = Net(np.float32)
        for (_, a), (_, b) in zip(sorted(resumed.named_params()), sorted(model.named_params())):
            a.data = b.data.copy()
        opt2 = _hooked('Adam', O.Adam(foreach=then).setup(resumed), resumed, ('clip', 'schedule'))
        if via_file:
            opt.save(tmp_path / 'opt.npz')
            opt2.load(tmp_path / 'opt.npz')
        else:
            opt2.load_state_dict(opt.state_dict())
        for step in range(3, 6):
            _grads(resumed, step, np.float32)
            opt2.update()
        _assert_same(_arrays(ref_model, ref), _arrays(resumed, opt2))


def test_loading_state_into_a_running_fused_optimizer_replaces_its_views():
    runs = [(m, O.Adam(0.05, foreach=f).setup(m)) for f, m in ((False, Net()), (None, Net()))]
    saved = None
    for step in range(6):
        for i, (model, opt) in enumerate(runs):
            if step == 2 and i == 0:
                saved = opt.state_dict()
            if step == 4:
                opt.load_state_dict(saved)  # back to the state after two steps (weights kept)
            _grads(model, step, np.float64)
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))


def test_switching_foreach_between_updates():
    runs = [(m, O.AdaGrad(0.1, foreach=f).setup(m)) for f, m in ((False, Net()), (None, Net()))]
    for step in range(6):
        runs[1][1].foreach = step % 2 == 0 or None if step < 4 else False if step == 4 else True
        for model, opt in runs:
            _grads(model, step, np.float64, skip=('b',) if step < 3 else ())
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))


def test_copies_and_pickles_of_a_fused_optimizer_keep_training_alike():
    model = Net()
    opt = O.Adam(0.05).setup(model)
    for step in range(2):
        _grads(model, step, np.float64)
        opt.update()
    pair = copy.deepcopy((model, opt))
    unpickled = pickle.loads(pickle.dumps((model, opt)))
    for m, o in ((model, opt), pair, unpickled):
        for step in range(2, 4):
            _grads(m, step, np.float64)
            o.update()
    _assert_same(_arrays(model, opt), _arrays(*pair))
    _assert_same(_arrays(model, opt), _arrays(*unpickled))


class DeZeroStyle(O.Optimizer):
    """A user's optimizer as DeZero's book writes them: only update_one."""

    def __init__(self, lr=0.1):
        super().__init__()
        self.lr = lr
        self.calls = 0

    def update_one(self, param):
        self.calls += 1
        param.data -= self.lr * param.grad.data


class CountingAdam(O.Adam):
    def update_one(self, param):
        self.calls = getattr(self, 'calls', 0) + 1
        super().update_one(param)


class ScaledRuleSGD(O.SGD):
    def _rule(self, p, g):
        p -= self.lr * g * (p.size ** 0.5)  # depends on the array's size: not elementwise
        return p


def test_a_subclass_that_overrides_update_one_or_the_rule_uses_the_loop():
    for cls, expected_calls in ((DeZeroStyle, 6 * 3), (CountingAdam, 6 * 3), (ScaledRuleSGD, None)):
        model = Net()
        ids = [id(p.data) for p in model.params()]
        opt = cls().setup(model)
        assert opt.fused is False
        for step in range(3):
            _grads(model, step, np.float64)
            opt.update()
        assert [id(p.data) for p in model.params()] == ids and opt._flat is None
        if expected_calls is not None:
            assert opt.calls == expected_calls
    plain = O.Adam()
    assert plain.fused is True and O.Adam(foreach=True).fused and not O.Adam(foreach=False).fused


def test_scaled_rule_subclass_gets_its_per_parameter_numbers():
    model = Net()
    start = model.w.data.copy()
    opt = ScaledRuleSGD(0.1).setup(model)
    _grads(model, 0, np.float64)
    g = model.w.grad.data.copy()
    opt.update()
    assert np.array_equal(model.w.data, start - 0.1 * g * (12 ** 0.5))


def test_the_gpt_example_adamw_subclass_still_updates_per_parameter():
    class NoDecayForVectors(O.AdamW):
        def update_one(self, param):
            self._adamw_step(param, self.weight_decay if param.data.ndim >= 2 else 0.0)

    model, ref = Net(), Net()
    opt = NoDecayForVectors(0.05, weight_decay=0.5).setup(model)
    ref_opt = O.AdamW(0.05, weight_decay=0.5, foreach=False).setup(ref)
    for step in range(3):
        _grads(model, step, np.float64)
        _grads(ref, step, np.float64)
        opt.update()
        ref_opt.update()
    assert not opt.fused
    assert np.array_equal(model.w.data, ref.w.data)  # matrices: the same decay
    assert not np.array_equal(model.b.data, ref.b.data)  # vectors: none


@pytest.mark.parametrize('bad', [1, 0, 'yes', np.bool_(True)])
def test_foreach_must_be_none_or_a_bool(bad):
    with pytest.raises(TypeError, match=r'Adam: foreach must be None, True or False, got'):
        O.Adam(foreach=bad)


def test_positional_signatures_stay_dezeros():
    opt = O.AdamW(0.1, 0.8, 0.9, 1e-6, 0.2)
    assert (opt.alpha, opt.beta1, opt.beta2, opt.eps, opt.weight_decay) == (0.1, 0.8, 0.9, 1e-6, 0.2)
    with pytest.raises(TypeError):
        O.SGD(0.1, True)  # foreach is keyword only


def test_read_only_parameter_is_refused_before_anything_changes():
    model = Net()
    opt = O.Adam().setup(model)
    _grads(model, 0, np.float64)
    opt.update()
    before = {k: p.data.copy() for k, p in model.named_params()}
    model.b.data = model.b.data.copy()
    model.b.data.flags.writeable = False
    _grads(model, 1, np.float64)
    with pytest.raises(ValueError, match="parameter 'b'"):
        opt.update()
    assert all(np.array_equal(before[k], p.data) for k, p in model.named_params())


def _tiny_adam_mlp(foreach):
    import dezero_kr.functions as F
    from dezero_kr.models import MLP
    np.random.seed(0)
    model = MLP((32, 32, 10))
    opt = O.Adam(foreach=foreach).setup(model)
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((8, 16)).astype(np.float32), rng.integers(0, 10, 8)
    model(x)
    for p in model.params():
        p.data = p.data.astype(np.float32)

    def step():
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss
    return model, opt, step


def test_a_static_graph_replay_of_the_fused_update_equals_the_eager_loop():
    import dezero_kr
    (ref, ref_opt, ref_step), (model, opt, step) = _tiny_adam_mlp(False), _tiny_adam_mlp(None)
    step = dezero_kr.static_graph(step)
    for i in range(5):
        a, b = ref_step(), step()
        assert np.array_equal(a.data, b.data), i
        _assert_same(_arrays(ref, ref_opt), _arrays(model, opt))
    assert step.stats['replays'] >= 3  # the later steps were replays
    assert opt._flat is not None and len(opt._flat.groups) == 1


class PerTensorAdaGrad(O.AdaGrad):
    """Overrides a helper of the built-in rule, not the rule: the sum over the array is no
    elementwise operation, so a group would mix the parameters."""

    def _accumulate(self, h, g):
        h += (g * g).sum()


class NoDecayForVectorsRule(O.AdamW):
    def _adamw_rule(self, p, g, m, v, weight_decay):
        return super()._adamw_rule(p, g, m, v, weight_decay if p.ndim >= 2 else 0.0)


class OnesAccumulatorAdaGrad(O.AdaGrad):
    """PyTorch's initial_accumulator_value, by the state's first value."""

    def _slot(self, param, name):
        slots = self._state.setdefault(param, {})
        if name not in slots:
            slots[name] = np.ones_like(param.data)
        return slots[name]


@pytest.mark.parametrize('cls', [PerTensorAdaGrad, NoDecayForVectorsRule, OnesAccumulatorAdaGrad],
                         ids=lambda c: c.__name__)
def test_a_subclass_that_overrides_a_helper_of_the_rule_uses_the_loop(cls):
    runs = [(m, cls(foreach=f).setup(m)) for f, m in ((False, Net()), (True, Net()))]
    assert not runs[1][1].fused
    for step in range(3):
        for model, opt in runs:
            _grads(model, step, np.float64)
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))
    assert runs[1][1]._flat is None


@pytest.mark.parametrize('new_dtype', [np.float16, np.float64])
@pytest.mark.parametrize('name', sorted(set(OPTIMIZERS) - {'SGD'}))
def test_the_state_follows_a_parameter_given_another_dtype(name, new_dtype):
    """``p.data = p.data.astype(...)`` between updates: the state takes the new dtype in both
    paths (the fused groups convert it; the loop kept the old dtype and computed in it)."""
    runs = [(m, OPTIMIZERS[name](foreach=f).setup(m)) for f, m in ((False, Net(np.float32)),
                                                                   (True, Net(np.float32)))]
    for step in range(5):
        for model, opt in runs:
            if step == 2:
                for p in model.params():
                    p.data = p.data.astype(new_dtype)
            _grads(model, step, new_dtype if step >= 2 else np.float32)
            opt.update()
        _assert_same(_arrays(*runs[0]), _arrays(*runs[1]))
    for model, opt in runs:
        for p in model.params():
            assert all(a.dtype == new_dtype for a in opt._state[p].values())


@pytest.mark.parametrize('foreach', [False, True])
@pytest.mark.parametrize('name', sorted(set(OPTIMIZERS) - {'SGD'}))
def test_a_parameter_given_another_shape_is_refused_naming_it(name, foreach):
    """The old state cannot follow a new shape: a clear error, never a silent broadcast of it."""
    model = Net()
    opt = OPTIMIZERS[name](foreach=foreach).setup(model)
    for step in range(3):
        if step == 2:
            model.b.data = np.ones((4, 3))
        _grads(model, step, np.float64)
        if step < 2:
            opt.update()
    with pytest.raises(ValueError, match=r"update: parameter 'b' has shape \(4, 3\) but its state '\w+' "
                                         r"has shape \(3,\)"):
        opt.update()
