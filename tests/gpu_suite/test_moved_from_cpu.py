"""The device cases that used to sit, always skipped, in the CPU suite (grad_clip, layers,
dataloaders); here they run on every CI run."""
import cupy
import numpy as np
from _device import RTOL, assert_same

from dezero_kr import DataLoader, Parameter, Variable
from dezero_kr.datasets import Digits
from dezero_kr.grad_clip import adaptive_clip_grad, clip_grad_norm, clip_grad_value
from dezero_kr.models import MLP


def test_clipping_float32_on_the_device_matches_the_cpu():
    rng = np.random.default_rng(2)
    grads = [rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(3,)).astype(np.float32)]
    cpu = [Parameter(np.ones(g.shape, np.float32)) for g in grads]
    dev = [Parameter(cupy.ones(g.shape, dtype=np.float32)) for g in grads]
    for c, d, g in zip(cpu, dev, grads):
        c.grad, d.grad = Variable(g.copy()), Variable(cupy.asarray(g))
    for fn in (lambda ps: clip_grad_norm(ps, 0.5, norm_type=3), lambda ps: clip_grad_value(ps, 0.3),
               lambda ps: adaptive_clip_grad(ps, 0.1)):
        assert fn(cpu) == fn(dev)  # the returned norms too
    for c, d in zip(cpu, dev):
        assert d.grad.data.dtype == np.float32
        assert_same(d.grad.data, c.grad.data, 'clipped gradient')


def test_saving_and_loading_keeps_a_device_model_on_the_device(tmp_path):
    np.random.seed(1)
    net = MLP((3, 2))
    net(np.ones((1, 4)))
    net.to_gpu()
    net.save_weights(tmp_path / 'g.npz')
    assert all(isinstance(p.data, cupy.ndarray) for p in net.params())
    np.random.seed(2)
    other = MLP((3, 2))
    other(np.ones((1, 4)))
    other.to_gpu()
    other.load_weights(tmp_path / 'g.npz')
    for (name, a), (_, b) in zip(net.named_params(), other.named_params()):
        assert isinstance(b.data, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(b.data), cupy.asnumpy(a.data), rtol=RTOL,
                                   err_msg=name)


def test_gpu_batches_keep_the_order_and_the_values():
    data = Digits(train=False)
    loader = DataLoader(data, batch_size=4, shuffle=False, gpu=True)
    x, t = next(loader)
    assert isinstance(x, cupy.ndarray) and isinstance(t, cupy.ndarray)
    assert_same(x, data.data[:4], 'x')
    loader.to_cpu()
    x, _ = next(loader)
    assert isinstance(x, np.ndarray)
