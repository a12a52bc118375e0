"""Training on the device: models, optimizers, clipping, loaders, files, transfers.

Each test trains (or moves) the same model on the CPU and on the device from the same seed
and compares every number: losses, parameters, optimizer state (bit for bit on the
stand-in, whose random draws are NumPy's).  The stand-in also counts host transfers, so a
hidden per-step ``float()`` or ``.get()`` fails ``test_one_training_step_moves_nothing``.
"""
import copy
import sys
from pathlib import Path

import cupy
import numpy as np
import pytest
from _device import STANDIN, assert_same

import dezero_kr.functions as F
import dezero_kr.layers as L
import dezero_kr
from dezero_kr import DataLoader, Variable, cuda, grad_clip, optimizers
from dezero_kr.datasets import Digits
from dezero_kr.models import MLP, Model
from dezero_kr.transformer import GPT

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'examples'))
from digits_cnn import DigitsCNN  # noqa: E402  (the example's own model)


class LSTMNet(Model):
    def __init__(self):
        super().__init__()
        self.rnn = L.LSTM(8)
        self.fc = L.Linear(1)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


def _digits(n, flatten):
    data = Digits(train=True, flatten=flatten)
    return data.data[:n].astype(np.float32), data.label[:n]


def _mlp_step(model, x, t):
    return F.softmax_cross_entropy(model(x), t)


def _lstm_loss(model, xs, ts):
    """Truncated BPTT over a sequence: the loss of 4 steps, then unchain."""
    loss = 0
    for x, t in zip(xs, ts):
        loss = loss + F.mean_squared_error(model(x), t)
    return loss


def _gpt_loss(model, ids, targets):
    logits = model(ids)
    B, T, V = logits.shape
    return F.softmax_cross_entropy(F.reshape(logits, (B * T, V)), targets.reshape(B * T))


def _sine_batches(xp):
    t = np.linspace(0, 4 * np.pi, 9, dtype=np.float32)
    wave = np.sin(t).reshape(9, 1, 1) * np.ones((1, 2, 1), np.float32)
    return [xp.asarray(w) for w in wave[:-1]], [xp.asarray(w) for w in wave[1:]]


def _build(kind):
    np.random.seed(1)
    if kind == 'mlp':
        return MLP((32, 10), activation=F.relu), _digits(16, True)
    if kind == 'cnn':
        x, t = _digits(8, False)
        return DigitsCNN(dropout_ratio=0.3), (x, t)
    if kind == 'lstm':
        return LSTMNet(), None
    if kind == 'gpt':
        model = GPT(vocab_size=11, block_size=6, n_embd=16, n_head=2, n_layer=2, dropout=0.1,
                    dtype=np.float64)
        ids = np.random.default_rng(0).integers(0, 11, size=(3, 7))
        return model, (ids[:, :-1], ids[:, 1:])
    raise ValueError(kind)


def _train(kind, xp, optimizer_cls=optimizers.Adam, steps=3, clip=None):
    model, data = _build(kind)
    if data is not None:  # make the lazily sized weights now, from NumPy's RNG on both runs
        with dezero_kr.test_mode():
            model(data[0])
    if xp is cupy:
        model.to_gpu()
    opt = optimizer_cls().setup(model)
    np.random.seed(2)
    cupy.random.seed(2)
    losses = []
    for _ in range(steps):
        if kind == 'lstm':
            model.reset_state()
            xs, ts = _sine_batches(xp)
            loss = _lstm_loss(model, xs[:4], ts[:4])
            model.cleargrads()
            loss.backward()
            loss.unchain_backward()
            loss = loss + _lstm_loss(model, xs[4:], ts[4:])
        else:
            args = [xp.asarray(a) for a in data]
            loss = _gpt_loss(model, *args) if kind == 'gpt' else _mlp_step(model, *args)
        model.cleargrads()
        loss.backward()
        if clip is not None:
            clip(model.params())
        opt.update()
        losses.append(loss.data)
    return model, opt, losses


@pytest.mark.parametrize('kind', ['mlp', 'cnn', 'lstm', 'gpt'])
def test_training_steps_on_the_device_equal_the_cpu(kind):
    host_model, host_opt, host_losses = _train(kind, np)
    dev_model, dev_opt, dev_losses = _train(kind, cupy)
    for i, (d, h) in enumerate(zip(dev_losses, host_losses)):
        assert_same(d, h, f'{kind}: loss of step {i}')
    host_params = dict(host_model.named_params())
    for name, p in dev_model.named_params():
        assert_same(p.data, host_params[name].data, f'{kind}: parameter {name}')
        assert_same(p.grad.data, host_params[name].grad.data, f'{kind}: gradient of {name}')


OPTIMIZERS = [optimizers.SGD, optimizers.MomentumSGD, optimizers.AdaGrad, optimizers.AdaDelta,
              optimizers.RMSprop, optimizers.Adam, optimizers.AdamW]


@pytest.mark.parametrize('cls', OPTIMIZERS, ids=lambda c: c.__name__)
def test_every_optimizer_and_its_state_on_the_device(cls):
    host_model, host_opt, _ = _train('mlp', np, cls)
    dev_model, dev_opt, _ = _train('mlp', cupy, cls)
    host_state, dev_state = host_opt.state_dict(), dev_opt.state_dict()
    assert set(host_state) == set(dev_state)
    assert dev_state['t'] == host_state['t'] and dev_state['hyperparams'] == host_state['hyperparams']
    assert set(dev_state['state']) == set(host_state['state'])
    for key, slots in host_state['state'].items():
        for name, h in slots.items():  # state_dict hands back host copies
            np.testing.assert_allclose(dev_state['state'][key][name], h, rtol=0 if STANDIN else 1e-10,
                                       err_msg=f'{cls.__name__} state {key}/{name}')
    for slots in dev_opt._state.values():
        assert all(isinstance(a, cupy.ndarray) for a in slots.values())
    for p in dev_model.params():
        assert isinstance(p.data, cupy.ndarray)


class _HostAndDevice(L.Layer):
    """Two float32 and one float64 parameter on the device, two on the host."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(7)
        for i, (shape, dtype, dev) in enumerate([((3, 4), np.float32, True), ((4,), np.float32, True),
                                                 ((2, 2), np.float64, True), ((5,), np.float32, False),
                                                 ((), np.float32, False)]):
            a = rng.standard_normal(shape).astype(dtype)
            setattr(self, f'p{i}', dezero_kr.Parameter(cupy.asarray(a) if dev else a))


@pytest.mark.parametrize('cls', OPTIMIZERS, ids=lambda c: c.__name__)
def test_the_fused_update_groups_by_dtype_and_device_and_equals_the_loop(cls):
    runs = [(m, cls(foreach=f).setup(m)) for f, m in ((False, _HostAndDevice()), (True, _HostAndDevice()))]
    for step in range(3):
        rng = np.random.default_rng(step)
        for model, opt in runs:
            for _, p in sorted(model.named_params()):
                g = rng.standard_normal(p.data.shape).astype(p.data.dtype)
                p.grad = Variable(cuda.get_array_module(p.data).asarray(g))
            rng = np.random.default_rng(step)  # the same gradients for the second run
            opt.update()
        (loop_model, loop), (model, fused) = runs
        for name, p in model.named_params():
            q = dict(loop_model.named_params())[name]
            a, b = cuda.as_numpy(p.data), cuda.as_numpy(q.data)
            assert type(p.data) is type(q.data) and a.dtype == b.dtype and np.array_equal(a, b), \
                f'{cls.__name__}: {name} after step {step}'
        for key, slots in loop.state_dict()['state'].items():
            for slot, a in slots.items():
                assert np.array_equal(fused.state_dict()['state'][key][slot], a), (key, slot)
    groups = {(g.flat.dtype, g.xp) for g in fused._flat.groups}
    assert groups == {(np.dtype(np.float32), cupy), (np.dtype(np.float64), cupy), (np.dtype(np.float32), np)}


@pytest.mark.parametrize('foreach', [False, True])
@pytest.mark.parametrize('cls', OPTIMIZERS[1:], ids=lambda c: c.__name__)
def test_the_state_follows_a_model_moved_to_the_device_between_updates(cls, foreach):
    """``model.to_gpu()`` after two updates on the host: the state moves with the parameters
    (it crashed on host arrays mixed with device ones), the same numbers as on the host."""
    runs = [(m, cls(foreach=foreach).setup(m)) for m in (_HostAndDevice(), _HostAndDevice())]
    for m, _ in runs:
        m.to_cpu()
    for step in range(4):
        if step == 2:
            runs[1][0].to_gpu()
        for model, opt in runs:
            rng = np.random.default_rng(step)
            for _, p in sorted(model.named_params()):
                g = rng.standard_normal(p.data.shape).astype(p.data.dtype)
                p.grad = Variable(cuda.get_array_module(p.data).asarray(g))
            opt.update()
    (host, host_opt), (dev, dev_opt) = runs
    for (name, p), (_, q) in zip(sorted(dev.named_params()), sorted(host.named_params())):
        assert_same(p.data, q.data, name)
        for slot, a in host_opt._state[q].items():
            assert_same(dev_opt._state[p][slot], a, f'{name}/{slot}')


@pytest.mark.parametrize('clip', [
    lambda ps: grad_clip.clip_grad_norm(ps, 0.5),
    lambda ps: grad_clip.clip_grad_value(ps, 0.01),
    lambda ps: grad_clip.clip_grad_norm_per_tensor(ps, 0.1),
    lambda ps: grad_clip.adaptive_clip_grad(ps, 0.01),
], ids=['norm', 'value', 'norm per tensor', 'adaptive'])
def test_gradient_clipping_on_the_device(clip):
    _, _, host_losses = _train('mlp', np, optimizers.SGD, clip=clip)
    dev_model, _, dev_losses = _train('mlp', cupy, optimizers.SGD, clip=clip)
    host_model, _, _ = _train('mlp', np, optimizers.SGD, clip=clip)
    host_params = dict(host_model.named_params())
    for name, p in dev_model.named_params():
        assert_same(p.data, host_params[name].data, f'clipped {name}')


def test_variables_and_layers_move_both_ways():
    x = Variable(np.arange(6.0).reshape(2, 3))
    x.to_gpu()
    assert isinstance(x.data, cupy.ndarray)
    y = F.sum(F.exp(x))
    y.backward()
    assert isinstance(x.grad.data, cupy.ndarray)
    x.to_cpu()
    assert isinstance(x.data, np.ndarray)
    np.testing.assert_array_equal(x.data, np.arange(6.0).reshape(2, 3))

    np.random.seed(3)
    model = MLP((5, 2))
    model(np.ones((1, 4)))
    before = {k: p.data.copy() for k, p in model.named_params()}
    model.to_gpu()
    assert all(isinstance(p.data, cupy.ndarray) for p in model.params())
    model.to_cpu()
    for k, p in model.named_params():
        assert isinstance(p.data, np.ndarray)
        np.testing.assert_array_equal(p.data, before[k])


def test_save_from_the_device_load_on_the_cpu(tmp_path):
    dev_model, _, _ = _train('mlp', cupy, steps=2)
    path = tmp_path / 'mlp.npz'
    dev_model.save_weights(str(path))
    cpu_model, data = _build('mlp')
    cpu_model(data[0])  # create the lazily sized weights
    cpu_model.load_weights(str(path))
    for (name, d), (_, h) in zip(dev_model.named_params(), cpu_model.named_params()):
        assert isinstance(h.data, np.ndarray)
        assert_same(d.data, h.data, name)
    x = data[0]
    with dezero_kr.test_mode():
        assert_same(dev_model(cupy.asarray(x)).data, cpu_model(x).data, 'outputs after load')


def test_optimizer_state_saved_from_the_device_loads_on_the_cpu(tmp_path):
    _, dev_opt, _ = _train('mlp', cupy, optimizers.Adam, steps=2)
    path = tmp_path / 'adam.npz'
    dev_opt.save(str(path))
    host_model, host_opt, _ = _train('mlp', np, optimizers.Adam, steps=2)
    fresh_model, data = _build('mlp')
    fresh_model(data[0])
    fresh = optimizers.Adam().setup(fresh_model)
    fresh.load(str(path))
    got = fresh.state_dict()
    assert got['t'] == host_opt.state_dict()['t'] == 2
    for key, slots in host_opt.state_dict()['state'].items():
        for name, h in slots.items():
            np.testing.assert_allclose(got['state'][key][name], h, rtol=0 if STANDIN else 1e-10,
                                       err_msg=f'{key}/{name}')
    assert all(isinstance(a, np.ndarray) for s in fresh._state.values() for a in s.values())


def test_dataloader_gpu_batches():
    data = Digits(train=True)
    loader = DataLoader(data, batch_size=10, shuffle=False, gpu=True)
    x, t = next(iter(loader))
    assert isinstance(x, cupy.ndarray) and isinstance(t, cupy.ndarray)
    assert_same(x, data.data[:10], 'x batch')
    assert_same(t, data.label[:10], 't batch')
    loader.to_cpu()
    x, t = next(iter(loader))
    assert isinstance(x, np.ndarray)


# The reads a training step makes on purpose, one each (docs/gpu.md): the label check of
# softmax_cross_entropy and the token-id check of GPT (a bad label is a clear error, where
# CuPy's indexing would wrap it silently), and clip_grad_norm's returned norm (all the
# per-parameter norms come back in one transfer).
EXPECTED_READS = {'mlp': 2, 'cnn': 2, 'gpt': 3}


@pytest.mark.parametrize('kind', ['mlp', 'cnn', 'gpt'])
def test_one_training_step_reads_only_what_it_must(kind, transfers):
    """Data already on the device: forward, backward, clip and update make no hidden
    ``float()``/``.get()``: only the reads listed in EXPECTED_READS, and no upload."""
    model, data = _build(kind)
    model.to_gpu()
    opt = optimizers.Adam().setup(model)
    args = [cupy.asarray(a) for a in data]
    loss_fn = _gpt_loss if kind == 'gpt' else _mlp_step
    loss_fn(model, *args).backward()  # lazily sized weights are made on the first call
    opt.update()
    cupy.reset_transfers()
    loss = loss_fn(model, *args)
    model.cleargrads()
    loss.backward()
    grad_clip.clip_grad_norm(model.params(), 1.0)
    opt.update()
    assert dict(transfers) == {'to_host': EXPECTED_READS[kind], 'to_device': 0}


def test_a_dataloader_epoch_moves_each_batch_once(transfers):
    loader = DataLoader(Digits(train=True), batch_size=100, shuffle=True, gpu=True, seed=0)
    cupy.reset_transfers()
    n = sum(1 for _ in loader)
    assert transfers == {'to_host': 0, 'to_device': 2 * n}


def test_deepcopy_of_a_device_model_stays_on_the_device():
    model, data = _build('mlp')
    model(data[0])
    model.to_gpu()
    twin = copy.deepcopy(model)
    assert all(isinstance(p.data, cupy.ndarray) for p in twin.params())


def test_require_gpu_is_quiet_with_a_device():
    cuda.require_gpu('this test')
    assert cuda.get_array_module(cupy.ones(2)) is cupy
    assert cuda.get_array_module(np.ones(2)) is np
