"""models: Model.plot, Sequential, MLP, VGG16, ResNet and the pretrained-weights path."""
import numpy as np
import pytest

import dezero_kr
import dezero_kr.download as download
import dezero_kr.functions_nn as N
import dezero_kr.layers as L
import dezero_kr.models as M
from dezero_kr import Variable

rng = np.random.default_rng(3)


def test_mlp_structure_and_forward():
    np.random.seed(0)
    model = M.MLP((5, 4, 3), activation=N.relu)
    x = rng.normal(size=(2, 6)).astype(np.float32)
    y = model(x)
    assert y.shape == (2, 3) and y.dtype == np.float32
    assert [k for k, _ in model.named_params()] == ['l0/W', 'l0/b', 'l1/W', 'l1/b', 'l2/W', 'l2/b']
    h = x
    for i, layer in enumerate(model.layers):
        h = h @ layer.W.data + layer.b.data
        if i < 2:
            h = np.maximum(h, 0)
    np.testing.assert_allclose(y.data, h, rtol=1e-5)


def test_mlp_default_activation_is_sigmoid():
    model = M.MLP((3, 2))
    x = rng.normal(size=(4, 2))
    y = model(x)
    h = 1 / (1 + np.exp(-(x @ model.l0.W.data + model.l0.b.data)))
    np.testing.assert_allclose(y.data, h @ model.l1.W.data + model.l1.b.data, rtol=1e-5)


def test_sequential_registers_layers_and_allows_functions():
    seq = M.Sequential(L.Linear(4), N.relu, L.Linear(2))
    assert [k for k, _ in seq.named_params()] == ['l0/W', 'l0/b', 'l2/W', 'l2/b']
    x = rng.normal(size=(3, 5)).astype(np.float32)
    y = seq(x)
    ref = np.maximum(x @ seq.l0.W.data + seq.l0.b.data, 0) @ seq.l2.W.data + seq.l2.b.data
    np.testing.assert_allclose(y.data, ref, rtol=1e-5)


def test_model_plot_labels_parameters_by_path(tmp_path):
    model = M.MLP((3, 2))
    out = tmp_path / 'model.dot'
    model.plot(np.ones((1, 4), dtype=np.float32), to_file=str(out))
    text = out.read_text()
    assert 'l0/W' in text and 'l1/b' in text and 'digraph' in text


def test_vgg16_reduced_forward():
    np.random.seed(0)
    model = M.VGG16()
    names = [k for k, _ in model.named_params()]
    assert names[:2] == ['conv1_1/W', 'conv1_1/b'] and names[-1] == 'fc8/b' and len(names) == 32
    with dezero_kr.test_mode():  # no dropout: deterministic
        y = model(rng.normal(size=(1, 3, 32, 32)).astype(np.float32))
    assert y.shape == (1, 1000) and y.dtype == np.float32
    assert model.fc6.W.shape == (512, 4096)  # 32 / 2^5 = 1: a 1x1x512 feature map
    assert model.conv5_3.W.shape == (512, 512, 3, 3)


@pytest.mark.slow
def test_vgg16_full_size_forward():  # the real input size; ~10 s
    model = M.VGG16()
    with dezero_kr.test_mode():
        y = model(rng.normal(size=(1, 3, 224, 224)).astype(np.float32))
    assert y.shape == (1, 1000)
    assert model.fc6.W.shape == (7 * 7 * 512, 4096)


def test_vgg16_preprocess():
    PIL = pytest.importorskip('PIL.Image')
    img = PIL.fromarray(np.full((10, 20, 3), [10, 20, 30], dtype=np.uint8))
    x = M.VGG16.preprocess(img, size=(8, 4))
    assert x.shape == (3, 4, 8) and x.dtype == np.float32
    np.testing.assert_allclose(x[:, 0, 0], [30 - 103.939, 20 - 116.779, 10 - 123.68], rtol=1e-6)


def test_bottlenecks_and_building_block_shapes():
    x = rng.normal(size=(2, 8, 6, 6)).astype(np.float32)
    a = M.BottleneckA(8, 4, 16, stride=2)
    assert a(x).shape == (2, 16, 3, 3)
    assert a.conv1.stride == 2 and a.conv2.stride == 1
    fb = M.BottleneckA(8, 4, 16, stride=2, downsample_fb=True)
    assert fb.conv1.stride == 1 and fb.conv2.stride == 2
    b = M.BottleneckB(8, 4)
    y = b(x)
    assert y.shape == x.shape and (y.data >= 0).all()
    block = M.BuildingBlock(3, 8, 4, 16, 1)
    assert block._forward == ['a', 'b1', 'b2']
    assert block(x).shape == (2, 16, 6, 6)


def test_resnet50_reduced_forward_and_backward():
    np.random.seed(0)
    model = M.ResNet50()
    x = rng.normal(size=(2, 3, 32, 32)).astype(np.float32)
    y = model(x)
    assert y.shape == (2, 1000) and y.dtype == np.float32
    N.softmax_cross_entropy(y, np.array([1, 2])).backward()
    assert model.conv1.W.grad is not None and model.conv1.W.grad.dtype == np.float32
    assert model.res5.a.conv4.W.shape == (2048, 1024, 1, 1)


@pytest.mark.parametrize('cls,n,blocks', [(M.ResNet50, 50, (3, 4, 6, 3)), (M.ResNet101, 101, (3, 4, 23, 3)),
                                          (M.ResNet152, 152, (3, 8, 36, 3))])
def test_resnet_depths(cls, n, blocks):
    model = cls()  # the convolutions are lazy: building is cheap
    got = tuple(len(getattr(model, f'res{i}')._forward) for i in range(2, 6))
    assert got == blocks
    assert 3 * sum(blocks) + 2 == n  # three convolutions per bottleneck, plus conv1 and fc6
    assert isinstance(M.ResNet(n), M.ResNet)
    with pytest.raises(ValueError, match='ResNet: n_layers must be 50, 101 or 152, got 34'):
        M.ResNet(34)


def test_no_squeezenet_stub():
    assert not hasattr(M, 'SqueezeNet')


def test_pretrained_offline_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv('DEZERO_KR_CACHE', str(tmp_path))

    def offline(url, file_name=None, sha256=None, **kw):
        raise download.DownloadError(f'could not download {url}: offline')

    monkeypatch.setattr(download, 'get_file', offline)
    with pytest.warns(UserWarning, match='no SHA-256 is pinned'):
        with pytest.raises(download.DownloadError, match=r'VGG16\(pretrained=True\) needs its weights file'):
            M.VGG16(pretrained=True)
    with pytest.warns(UserWarning):
        with pytest.raises(download.DownloadError, match='resnet50.npz'):
            M.ResNet50(pretrained=True)


def test_pretrained_loads_the_cached_file_and_checks_a_pinned_digest(tmp_path, monkeypatch):
    src = M.MLP((3, 2))
    src(np.ones((1, 4), dtype=np.float32))
    src.save_weights(tmp_path / 'mlp.npz')
    calls = []

    def cached(url, file_name=None, sha256=None, **kw):
        calls.append(sha256)
        return str(tmp_path / 'mlp.npz')

    monkeypatch.setattr(download, 'get_file', cached)
    dst = M.MLP((3, 2))
    M._load_pretrained(dst, 'https://example.invalid/mlp.npz', sha256='ab' * 32)  # pinned: no warning
    assert calls == ['ab' * 32]
    np.testing.assert_array_equal(dst.l1.W.data, src.l1.W.data)
    x = Variable(np.ones((1, 4), dtype=np.float32))
    np.testing.assert_array_equal(dst(x).data, src(x).data)
