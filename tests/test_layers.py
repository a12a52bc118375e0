"""layers: the Layer container (order, paths, weights files) and every layer type."""
import math
import os

import numpy as np
import pytest

import dezero_kr
import dezero_kr.functions_nn as N
import dezero_kr.layers as L
from dezero_kr import Parameter, Variable, cuda
from dezero_kr.functions_conv import conv2d, deconv2d
from _checks import check_backward

rng = np.random.default_rng(5)


class Net(L.Layer):
    def __init__(self):
        super().__init__()
        self.z = Parameter(np.zeros(2), name='z')  # names chosen so that hash or alphabetical
        self.inner = L.Linear(3, in_size=2)       # order would differ from assignment order
        self.a = Parameter(np.ones(1), name='a')

    def forward(self, x):
        return self.inner(x) + self.a


# =============================================================================
# Layer: registration order, paths, caching
# =============================================================================
def test_params_in_registration_order_with_paths():
    net = Net()
    assert [k for k, _ in net.named_params()] == ['z', 'inner/W', 'inner/b', 'a']
    assert [p for p in net.params()] == [net.z, net.inner.W, net.inner.b, net.a]
    flat = {}
    net._flatten_params(flat, 'root')
    assert list(flat) == ['root/z', 'root/inner/W', 'root/inner/b', 'root/a']
    assert flat['root/inner/W'] is net.inner.W


def test_reassigning_and_deleting_registered_attributes():
    net = Net()
    list(net.params())  # fill the cache
    net.z = None
    assert [k for k, _ in net.named_params()] == ['inner/W', 'inner/b', 'a']
    net.extra = L.Linear(1, in_size=1)
    assert [k for k, _ in net.named_params()][-2:] == ['extra/W', 'extra/b']
    del net.extra
    assert 'extra/W' not in dict(net.named_params())
    net.inner.b = None  # a change deep inside is seen by the parent too
    assert [k for k, _ in net.named_params()] == ['inner/W', 'a']


def test_shared_parameter_and_shared_layer_are_yielded_once():
    net = Net()
    net.tied = net.inner  # a layer registered twice
    net.same = net.a      # a parameter registered twice
    assert [k for k, _ in net.named_params()] == ['z', 'inner/W', 'inner/b', 'a']


def test_missing_super_init_is_a_clear_error():
    class Bad(L.Layer):
        def __init__(self):
            self.W = Parameter(np.zeros(1))

    with pytest.raises(AttributeError, match=r"Bad: call super\(\).__init__\(\) before assigning .* 'W'"):
        Bad()


def test_call_keeps_weak_references_and_cleargrads():
    net = Net()
    x = np.ones((4, 2))
    y = net(x)
    assert net.inputs[0]() is x and net.outputs[0]() is y
    y.sum().backward()
    assert all(p.grad is not None for p in net.params() if p is not net.z)
    net.cleargrads()
    assert all(p.grad is None for p in net.params())


def test_to_gpu_without_cupy_is_a_clear_error():
    if cuda.gpu_enable:
        pytest.skip('a GPU is available')
    with pytest.raises(RuntimeError, match='Net.to_gpu needs a GPU'):
        Net().to_gpu()
    assert Net().to_cpu() is not None


# =============================================================================
# Linear
# =============================================================================
def test_linear_lazy_init_uses_global_numpy_rng_in_float32():
    np.random.seed(3)
    layer = L.Linear(4)
    assert layer.W.data is None
    y = layer(np.ones((2, 5), dtype=np.float32))
    np.random.seed(3)
    expected = np.random.randn(5, 4).astype(np.float32) * math.sqrt(1 / 5)
    np.testing.assert_array_equal(layer.W.data, expected)
    assert layer.W.dtype == layer.b.dtype == y.dtype == np.float32
    assert layer.in_size == 5
    assert L.Linear(3, nobias=True, in_size=2).b is None
    assert L.Linear(3, dtype=np.float64, in_size=2).W.dtype == np.float64


def test_linear_affine_example_from_the_seed_text():
    layer = L.Linear(3, dtype=np.float64, in_size=2)
    layer.W.data = np.array([[0.3, 0.5, 0.1], [0.2, 0.4, 0.6]])
    layer.b.data = np.array([0.1, 0.0, -0.1])
    x = Variable(np.array([[1.0, 2.0]]))
    y = layer(x)
    np.testing.assert_allclose(y.data, [[0.8, 1.3, 1.2]], rtol=1e-15)
    y.sum().backward()
    np.testing.assert_allclose(layer.W.grad.data, [[1, 1, 1], [2, 2, 2]])
    np.testing.assert_allclose(layer.b.grad.data, [1, 1, 1])
    np.testing.assert_allclose(x.grad.data, [[0.9, 1.2]], rtol=1e-15)


def test_linear_maps_over_leading_axes():
    layer = L.Linear(3, dtype=np.float64, in_size=4)
    x = rng.normal(size=(2, 5, 4))
    y = layer(x)
    assert y.shape == (2, 5, 3)
    np.testing.assert_allclose(y.data, x @ layer.W.data + layer.b.data, rtol=1e-14)
    check_backward(lambda a: layer(a), x)


def test_linear_float32_end_to_end():
    layer = L.Linear(2, in_size=3)
    x = Variable(np.ones((4, 3), dtype=np.float32))
    y = layer(x)
    (y * 2.5).sum().backward()
    assert y.dtype == x.grad.dtype == layer.W.grad.dtype == layer.b.grad.dtype == np.float32


# =============================================================================
# Convolutions
# =============================================================================
def test_conv2d_layer_lazy_init_and_values():
    np.random.seed(1)
    layer = L.Conv2d(4, kernel_size=3, stride=2, pad=1)
    x = rng.normal(size=(2, 3, 7, 7)).astype(np.float32)
    y = layer(x)
    np.random.seed(1)
    W = np.random.randn(4, 3, 3, 3).astype(np.float32) * math.sqrt(1 / 27)
    np.testing.assert_array_equal(layer.W.data, W)
    assert y.shape == (2, 4, 4, 4) and y.dtype == np.float32
    np.testing.assert_allclose(y.data, conv2d(x, W, layer.b.data, 2, 1).data, rtol=1e-6)
    eager = L.Conv2d(5, (3, 2), nobias=True, in_channels=2)
    assert eager.W.shape == (5, 2, 3, 2) and eager.b is None


def test_deconv2d_layer_shapes_and_values():
    layer = L.Deconv2d(4, kernel_size=3, stride=2, pad=1)
    x = rng.normal(size=(2, 3, 4, 4)).astype(np.float32)
    y = layer(x)
    assert layer.W.shape == (3, 4, 3, 3)
    assert y.shape == (2, 4, 7, 7)
    np.testing.assert_allclose(y.data, deconv2d(x, layer.W.data, layer.b.data, 2, 1).data, rtol=1e-6)


# =============================================================================
# Recurrent layers
# =============================================================================
def test_rnn_with_in_size_different_from_hidden_size():
    layer = L.RNN(4, in_size=3)  # DeZero built h2h with in_size and failed at step 2
    assert layer.h2h.W.shape == (4, 4)
    xs = rng.normal(size=(3, 2, 3)).astype(np.float32)
    h = None
    for x in xs:
        y = layer(x)
        z = x @ layer.x2h.W.data + layer.x2h.b.data
        h = np.tanh(z if h is None else z + h @ layer.h2h.W.data)
        np.testing.assert_allclose(y.data, h, rtol=1e-5, atol=1e-6)
    layer.reset_state()
    assert layer.h is None


def test_rnn_gradient_through_time():
    layer = L.RNN(3, in_size=2)
    for p in layer.params():
        p.data = p.data.astype(np.float64)
    xs = rng.normal(size=(3, 2, 2))

    def unroll(x0):
        layer.reset_state()
        out = layer(x0)
        for x in xs[1:]:
            out = layer(x)
        return out
    check_backward(unroll, xs[0])


def test_lstm_matches_the_equations():
    layer = L.LSTM(3, in_size=2)
    names = [k for k, _ in layer.named_params()]
    assert names[:2] == ['x2f/W', 'x2f/b'] and 'h2u/W' in names and 'h2u/b' not in names
    xs = rng.normal(size=(3, 4, 2)).astype(np.float32)
    h = c = None

    def lin(name, v):
        sub = getattr(layer, name)
        out = v @ sub.W.data
        return out + sub.b.data if sub.b is not None else out
    for x in xs:
        y = layer(x)
        pre = {g: lin('x2' + g, x) + (0 if h is None else lin('h2' + g, h)) for g in 'fiou'}
        f, i, o = (1 / (1 + np.exp(-pre[g])) for g in 'fio')
        u = np.tanh(pre['u'])
        c = i * u if c is None else f * c + i * u
        h = o * np.tanh(c)
        np.testing.assert_allclose(y.data, h, rtol=1e-5, atol=1e-6)


# =============================================================================
# Embedding and normalisation layers
# =============================================================================
def test_embed_id_and_embedding():
    np.random.seed(0)
    layer = L.EmbedID(5, 3)
    assert layer.W.dtype == np.float32 and layer.W.shape == (5, 3)
    ids = np.array([[4, 0], [1, 1]])
    np.testing.assert_array_equal(layer(ids).data, layer.W.data[ids])
    emb = L.Embedding(num_embeddings=7, embedding_dim=2)
    assert isinstance(emb, L.EmbedID) and emb.W.shape == (7, 2)


@pytest.mark.parametrize('shape', [(8, 3), (4, 3, 2, 2)])
def test_batch_norm_layer(shape):
    layer = L.BatchNorm()
    assert [k for k, _ in layer.named_params()] == ['avg_mean', 'avg_var', 'gamma', 'beta']
    x = rng.normal(2.0, 3.0, size=shape).astype(np.float32)
    y = layer(x)
    axes = (0,) + tuple(range(2, len(shape)))
    assert layer.gamma.dtype == np.float32 and layer.avg_mean.shape == (3,)
    np.testing.assert_allclose(y.data.mean(axis=axes), 0, atol=1e-5)
    np.testing.assert_allclose(layer.avg_mean.data, 0.1 * x.mean(axis=axes), rtol=1e-5)
    with dezero_kr.test_mode():
        y_test = layer(x)
    ref = (x - layer.avg_mean.data.reshape((1, 3) + (1,) * (len(shape) - 2))) / np.sqrt(
        layer.avg_var.data.reshape((1, 3) + (1,) * (len(shape) - 2)) + 2e-5)
    np.testing.assert_allclose(y_test.data, ref, rtol=1e-5)
    y.sum().backward()
    assert layer.avg_mean.grad is None and layer.gamma.grad is not None


def test_layer_norm_and_rms_norm_layers():
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    ln = L.LayerNorm()
    y = ln(x)
    assert ln.gamma.shape == (4,) and ln.beta.shape == (4,) and y.dtype == np.float32
    np.testing.assert_allclose(y.data.mean(-1), 0, atol=1e-6)
    rms = L.RMSNorm(4)
    assert [k for k, _ in rms.named_params()] == ['gamma']
    np.testing.assert_allclose(rms(x).data, x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5), rtol=1e-5)
    np.testing.assert_allclose(N.rms_norm(x, np.ones(4, np.float32)).data, rms(x).data)


# =============================================================================
# Weights files
# =============================================================================
def _filled_net(seed):
    net = Net()
    r = np.random.default_rng(seed)
    for p in net.params():
        p.data = r.normal(size=p.shape)
    return net


def test_save_and_load_weights_round_trip(tmp_path):
    src, dst = _filled_net(1), _filled_net(2)
    data_before = [p.data for p in src.params()]
    src.save_weights(tmp_path / 'w.npz')
    assert [p.data for p in src.params()] == data_before  # saving changes nothing
    dst.load_weights(tmp_path / 'w.npz')
    for a, b in zip(src.params(), dst.params()):
        np.testing.assert_array_equal(a.data, b.data)
    with np.load(tmp_path / 'w.npz', allow_pickle=False) as f:
        assert f.files == ['z', 'inner/W', 'inner/b', 'a']


def test_npz_suffix_is_added_like_numpy(tmp_path):
    net = _filled_net(1)
    net.save_weights(str(tmp_path / 'model'))
    assert os.path.exists(tmp_path / 'model.npz')
    other = _filled_net(2)
    other.load_weights(str(tmp_path / 'model'))
    np.testing.assert_array_equal(other.a.data, net.a.data)


def test_load_into_a_fresh_lazy_model_and_dtype_kept(tmp_path):
    np.random.seed(0)
    src = L.Linear(3)
    src(np.ones((1, 4), dtype=np.float32))
    src.save_weights(tmp_path / 'lin.npz')
    fresh = L.Linear(3)  # W not created yet
    fresh.load_weights(tmp_path / 'lin.npz')
    np.testing.assert_array_equal(fresh.W.data, src.W.data)
    y = fresh(np.ones((1, 4), dtype=np.float32))
    np.testing.assert_array_equal(y.data, src(np.ones((1, 4), dtype=np.float32)).data)
    f64 = L.Linear(3, dtype=np.float64, in_size=4)
    f64.load_weights(tmp_path / 'lin.npz')
    assert f64.W.dtype == np.float64  # values cast to the parameter's dtype


def test_saving_an_uninitialised_lazy_parameter_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="save_weights: parameter 'W' is not initialised yet"):
        L.Linear(3).save_weights(tmp_path / 'x.npz')
    assert not os.listdir(tmp_path)


def test_load_errors_name_keys_and_shapes_and_change_nothing(tmp_path):
    net = _filled_net(1)
    before = [p.data.copy() for p in net.params()]
    np.savez(tmp_path / 'missing.npz', z=np.zeros(2), **{'inner/W': np.zeros((2, 3)), 'extra': np.ones(1)})
    with pytest.raises(ValueError, match=r"missing keys \['inner/b', 'a'\], unexpected keys \['extra'\]"):
        net.load_weights(tmp_path / 'missing.npz')
    np.savez(tmp_path / 'shape.npz', z=np.zeros(2), a=np.ones(1),
             **{'inner/W': np.zeros((3, 3)), 'inner/b': np.zeros(3)})
    with pytest.raises(ValueError, match=r"'inner/W' has shape \(3, 3\) .* the parameter has shape \(2, 3\)"):
        net.load_weights(tmp_path / 'shape.npz')
    for p, b in zip(net.params(), before):
        np.testing.assert_array_equal(p.data, b)


def test_load_never_unpickles(tmp_path):
    np.savez(tmp_path / 'obj.npz', z=np.array([{'evil': 1}], dtype=object), a=np.ones(1),
             **{'inner/W': np.zeros((2, 3)), 'inner/b': np.zeros(3)})
    with pytest.raises(ValueError, match="'z' holds Python objects .* never loaded"):
        Net().load_weights(tmp_path / 'obj.npz')


def test_save_is_atomic_under_a_crash_mid_write(tmp_path, monkeypatch):
    path = tmp_path / 'w.npz'
    _filled_net(1).save_weights(path)
    old_bytes = path.read_bytes()
    real_write_array = np.lib.format.write_array

    def crashing_write_array(f, array, **kw):
        real_write_array(f, array, **kw)  # the first member is written ...
        raise OSError('disk full')        # ... then the disk fills up

    monkeypatch.setattr(np.lib.format, 'write_array', crashing_write_array)
    with pytest.raises(OSError, match='disk full'):
        _filled_net(2).save_weights(path)
    assert path.read_bytes() == old_bytes
    assert os.listdir(tmp_path) == ['w.npz']  # no temporary file left behind
    monkeypatch.undo()
    new = _filled_net(3)
    new.save_weights(path)  # and a later save works
    check = _filled_net(4)
    check.load_weights(path)
    np.testing.assert_array_equal(check.inner.W.data, new.inner.W.data)



def test_linear_first_order_fast_path_equals_the_recorded_backward():
    # Without create_graph the Linear function takes plain-array products; with it,
    # differentiable ops.  Both must give the same gradients.
    layer = L.Linear(3, dtype=np.float64, in_size=4)
    x0 = rng.normal(size=(5, 4))
    grads = []
    for create_graph in (False, True):
        layer.cleargrads()
        x = Variable(x0.copy())
        (layer(x) ** 2).sum().backward(create_graph=create_graph)
        assert (layer.W.grad.creator is not None) == create_graph
        grads.append([x.grad.data, layer.W.grad.data, layer.b.grad.data])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-15)


@pytest.mark.parametrize('make, match', [
    (lambda: L.Linear(-3), r'Linear: out_size must be a positive int, got -3'),
    (lambda: L.Linear(0), r'Linear: out_size must be a positive int, got 0'),
    (lambda: L.Linear(3, in_size=-1), r'Linear: in_size must be a positive int, got -1'),
    (lambda: L.Conv2d(-8, 3), r'Conv2d: out_channels must be a positive int, got -8'),
    (lambda: L.Deconv2d(4, 3, in_channels=0), r'Deconv2d: in_channels must be a positive int, got 0'),
])
def test_layer_sizes_must_be_positive(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_layer_size_types():
    with pytest.raises(TypeError, match=r"Linear: out_size must be a positive int, got '3' of type str"):
        L.Linear('3')
    with pytest.raises(TypeError, match=r'Linear: out_size must be a positive int, got 3.0 of type float'):
        L.Linear(3.0)
    assert L.Linear(np.int64(3), in_size=np.int32(2)).W.shape == (2, 3)
