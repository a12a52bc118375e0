"""static_graph on device arrays: only NumPy arrays are traced and replayed, so a step on
GPU arrays runs eagerly, with one warning naming the GPU array (strict: an error, nothing
run), and its numbers are eager's."""
import cupy
import numpy as np
import pytest

import dezero_kr.functions as F
from dezero_kr import optimizers as O
from dezero_kr.models import MLP
from dezero_kr.static_graph import StaticGraphError, StaticGraphWarning, static_graph


def _run(static, **options):
    np.random.seed(0)
    model = MLP((16, 3))
    opt = O.SGD(0.1).setup(model)
    model.to_gpu()

    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss
    if static:
        step = static_graph(step, **options)
    rng = np.random.RandomState(0)
    losses = []
    for _ in range(4):
        x = cupy.asarray(rng.randn(8, 5).astype(np.float32))
        losses.append(float(step(x, cupy.asarray(rng.randint(0, 3, 8))).data))
    return losses, step, [cupy.asnumpy(p.data) for p in model.params()]


def test_a_step_on_gpu_arrays_runs_eagerly_with_one_warning_naming_the_array():
    eager_losses, _, eager_params = _run(False)
    with pytest.warns(StaticGraphWarning, match="the argument 'x' is a GPU array") as record:
        losses, step, params = _run(True)
    assert len([w for w in record if issubclass(w.category, StaticGraphWarning)]) == 1
    assert losses == eager_losses
    for a, b in zip(params, eager_params):
        np.testing.assert_array_equal(a, b)
    assert step.stats == {'traces': 0, 'replays': 0, 'eager': 4, 'evictions': 0}


def test_strict_refuses_a_step_on_gpu_arrays_before_running_it():
    with pytest.raises(StaticGraphError, match="the argument 'x' is a GPU array"):
        _run(True, strict=True)
