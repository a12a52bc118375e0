"""End-to-end training: an MLP on the spiral, RNN/LSTM on a sine wave, a small CNN on
8x8 digits, float32 throughout, and a checkpoint that resumes training exactly."""
import numpy as np
import pytest

import dezero_kr
import dezero_kr.functions_nn as N
import dezero_kr.layers as L
import dezero_kr.models as M
import dezero_kr.optimizers as O
from dezero_kr.datasets import Digits, SinCurve, get_spiral
from dezero_kr.functions_conv import pooling
from dezero_kr.functions_math import flatten


def _train_spiral(model, optimizer, epochs, batch_size=30, seed=0):
    x, t = get_spiral(train=True)
    order_rng = np.random.RandomState(seed)
    for _ in range(epochs):
        index = order_rng.permutation(len(x))
        for i in range(0, len(x), batch_size):
            b = index[i:i + batch_size]
            loss = N.softmax_cross_entropy(model(x[b]), t[b])
            model.cleargrads()
            loss.backward()
            optimizer.update()
    return float(loss.data)


def test_mlp_learns_the_spiral():
    # DeZero's step 48 setting: 2-10-3 sigmoid MLP, SGD lr=1, batch 30, 300 epochs.
    np.random.seed(0)
    model = M.MLP((10, 3))
    _train_spiral(model, O.SGD(lr=1.0).setup(model), epochs=300)
    x, t = get_spiral(train=True)
    x_test, t_test = get_spiral(train=False)
    with dezero_kr.no_grad():
        train_acc = float(N.accuracy(model(x), t).data)
        test_acc = float(N.accuracy(model(x_test), t_test).data)
    assert train_acc >= 0.95
    assert test_acc >= 0.90


def test_float32_model_trains_in_float32_everywhere():
    np.random.seed(1)
    model = M.MLP((16, 3), activation=N.relu)
    opt = O.Adam(alpha=0.01).setup(model)
    opt.add_hook(O.WeightDecay(1e-4))
    _train_spiral(model, opt, epochs=3)
    x, t = get_spiral()
    y = model(x)
    loss = N.softmax_cross_entropy(y, t)
    model.cleargrads()
    loss.backward()
    assert y.dtype == loss.dtype == np.float32
    for p in model.params():
        assert p.dtype == p.grad.dtype == np.float32
        assert all(a.dtype == np.float32 for a in opt._state[p].values())


@pytest.mark.parametrize('layer_cls', [L.RNN, L.LSTM])
def test_recurrent_layer_reduces_loss_on_a_sine_wave(layer_cls):
    class Net(M.Model):
        def __init__(self):
            super().__init__()
            self.rnn = layer_cls(10)
            self.fc = L.Linear(1)

        def reset_state(self):
            self.rnn.reset_state()

        def forward(self, x):
            return self.fc(self.rnn(x))

    np.random.seed(0)
    data = SinCurve(train=True)
    xs = data.data.astype(np.float32)
    ts = data.label.astype(np.float32)
    model = Net()
    opt = O.Adam(alpha=0.01).setup(model)
    bptt = 30
    epoch_losses = []
    for _ in range(6):
        model.reset_state()
        loss, total, count = 0, 0.0, 0
        for i, (x, t) in enumerate(zip(xs, ts)):
            y = model(x.reshape(1, 1))
            loss += N.mean_squared_error(y, t.reshape(1, 1))
            count += 1
            if count % bptt == 0 or i == len(xs) - 1:
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()  # truncated BPTT
                opt.update()
                total += float(loss.data)
                loss = 0
        epoch_losses.append(total / count)
    assert epoch_losses[-1] < 0.2 * epoch_losses[0]


def test_small_cnn_reduces_loss_on_digits():
    class CNN(M.Model):
        def __init__(self):
            super().__init__()
            self.conv = L.Conv2d(8, kernel_size=3, pad=1)
            self.bn = L.BatchNorm()
            self.fc = L.Linear(10)

        def forward(self, x):
            h = pooling(N.relu(self.bn(self.conv(x))), 2, 2)
            return self.fc(flatten(h))

    np.random.seed(0)
    digits = Digits(train=True, flatten=False)
    x, t = digits.data[:320], digits.label[:320]
    model = CNN()
    opt = O.MomentumSGD(lr=0.1).setup(model)
    losses = []
    for epoch in range(6):
        for i in range(0, len(x), 32):
            loss = N.softmax_cross_entropy(model(x[i:i + 32]), t[i:i + 32])
            model.cleargrads()
            loss.backward()
            opt.update()
            losses.append(float(loss.data))
    assert np.mean(losses[-10:]) < 0.25 * np.mean(losses[:10])
    with dezero_kr.test_mode():
        acc = float(N.accuracy(model(digits.data[1000:1300]), digits.label[1000:1300]).data)
    assert acc > 0.8  # digits the network never saw


def _checkpoint_setup():
    np.random.seed(42)
    model = M.MLP((12, 3), activation=N.gelu)
    opt = O.AdamW(alpha=0.02, weight_decay=0.01).setup(model)
    opt.add_hook(O.WarmupCosine(0.02, warmup_steps=5, total_steps=40, min_lr=0.001))
    opt.add_hook(O.ClipGrad(5.0))
    return model, opt


def _steps(model, opt, batches):
    x, t = get_spiral()
    for b in batches:
        loss = N.softmax_cross_entropy(model(x[b]), t[b])
        model.cleargrads()
        loss.backward()
        opt.update()


def test_training_resumed_from_a_checkpoint_matches_uninterrupted_training(tmp_path):
    order = np.random.RandomState(7)
    batches = [order.choice(300, 30, replace=False) for _ in range(30)]

    model, opt = _checkpoint_setup()
    _steps(model, opt, batches)  # 30 uninterrupted steps
    expected = [p.data.copy() for p in model.params()]

    model, opt = _checkpoint_setup()
    _steps(model, opt, batches[:12])
    model.save_weights(tmp_path / 'model.npz')
    opt.save(tmp_path / 'opt.npz')
    del model, opt

    np.random.seed(999)  # a different initialisation, overwritten by the checkpoint
    model = M.MLP((12, 3), activation=N.gelu)
    model(np.zeros((1, 2), dtype=np.float32))  # create the lazy weights
    model.load_weights(tmp_path / 'model.npz')
    opt = O.AdamW().setup(model)
    opt.add_hook(O.WarmupCosine(0.02, warmup_steps=5, total_steps=40, min_lr=0.001))
    opt.add_hook(O.ClipGrad(5.0))
    opt.load(tmp_path / 'opt.npz')
    assert opt.t == 12 and opt.weight_decay == 0.01
    _steps(model, opt, batches[12:])
    for p, e in zip(model.params(), expected):
        np.testing.assert_array_equal(p.data, e)
