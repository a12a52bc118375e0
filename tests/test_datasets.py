"""dezero_kr.datasets: exact contents of the generated and bundled datasets, and
the download-backed ones on small fake files (placed by hand or served on
127.0.0.1).  Nothing here reaches the real internet.
"""
import gzip
import hashlib
import http.server
import io
import os
import re
import socket
import subprocess
import sys
import tarfile
import threading

import numpy as np
import pytest

from dezero_kr import datasets
from dezero_kr.datasets import (
    CIFAR10, CIFAR100, MNIST, Dataset, Digits, ImageNet, Names, Shakespear, Shakespeare,
    SinCurve, Spiral, get_spiral, load_cache_npz, load_digits, load_names, save_cache_npz)
from dezero_kr.download import DownloadError
from _subproc import python_env


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    folder = tmp_path / 'cache'
    folder.mkdir()
    monkeypatch.setenv('DEZERO_KR_CACHE', str(folder))
    monkeypatch.setenv('DEZERO_KR_PROGRESS', '0')
    return folder


class _Files(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.requests.append(self.path)
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Files)
    httpd.files, httpd.requests = {}, []
    httpd.base = f'http://127.0.0.1:{httpd.server_address[1]}'
    threading.Thread(target=httpd.serve_forever, kwargs={'poll_interval': 0.01}, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def sha(data):
    return hashlib.sha256(data).hexdigest()


# =============================================================================
# Dataset base class
# =============================================================================
class Toy(Dataset):
    def prepare(self):
        self.data = np.arange(12, dtype=np.float32).reshape(6, 2)
        self.label = np.array([0, 1, 2, 0, 1, 2])


def test_scalar_index_matches_dezero():
    d = Toy()
    x, t = d[1]
    np.testing.assert_array_equal(x, [2.0, 3.0])
    assert x.dtype == np.float32 and t == 1 and isinstance(t, np.integer)
    assert len(d) == 6
    x, t = d[np.int64(-1)]
    np.testing.assert_array_equal(x, [10.0, 11.0])

    unlabeled = Toy()
    unlabeled.label = None
    x, t = unlabeled[0]
    assert t is None


def test_batch_index_slices_arrays_and_masks():
    d = Toy()
    x, t = d[1:4]
    np.testing.assert_array_equal(x, [[2, 3], [4, 5], [6, 7]])
    np.testing.assert_array_equal(t, [1, 2, 0])
    x, t = d[[5, 0]]
    np.testing.assert_array_equal(x, [[10, 11], [0, 1]])
    np.testing.assert_array_equal(t, [2, 0])
    x, t = d[np.array([True, False, False, False, False, True])]
    np.testing.assert_array_equal(t, [0, 2])
    x, t = d[[]]
    assert x.shape == (0, 2) and t.shape == (0,)
    with pytest.raises(IndexError):
        d[np.array([0.5])]
    with pytest.raises(IndexError):
        d[np.array([True, False])]


def test_batch_index_applies_transforms_per_sample():
    d = Toy(transform=lambda x: x.sum(), target_transform=lambda t: t * 10)
    x, t = d[[0, 2]]
    np.testing.assert_array_equal(x, [1.0, 9.0])
    np.testing.assert_array_equal(t, [0, 20])
    assert (x[0], t[0]) == d[0]


# =============================================================================
# Generated datasets
# =============================================================================
def _dezero_spiral(seed):
    """The spiral recipe of DeZero, drawn from a private RandomState(seed)."""
    rng = np.random.RandomState(seed)
    x = np.zeros((300, 2), dtype=np.float32)
    t = np.zeros(300, dtype=int)
    for j in range(3):
        for i in range(100):
            rate = i / 100
            theta = j * 4.0 + 4.0 * rate + rng.randn() * 0.2
            x[100 * j + i] = np.array([rate * np.sin(theta), rate * np.cos(theta)])
            t[100 * j + i] = j
    order = rng.permutation(300)
    return x[order], t[order]


def test_spiral_values_and_global_rng_untouched():
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    x, t = get_spiral(train=True)
    assert np.array_equal(np.random.get_state()[1], before)  # global RNG not reseeded
    assert x.dtype == np.float32 and x.shape == (300, 2)
    assert t.dtype == np.int64 and t.shape == (300,)
    assert x[:2].tolist() == [[-0.1398138850927353, -0.007216573692858219],
                              [0.37049391865730286, 0.5820947289466858]]
    assert t[:10].tolist() == [1, 1, 2, 0, 1, 2, 0, 0, 1, 2]
    assert np.bincount(t).tolist() == [100, 100, 100]
    rx, rt = _dezero_spiral(1984)
    assert np.array_equal(x, rx) and np.array_equal(t, rt)

    x, t = get_spiral(train=False)
    assert x[0].tolist() == [0.13246452808380127, 0.13620993494987488]
    assert t[:5].tolist() == [0, 1, 0, 1, 2]
    rx, rt = _dezero_spiral(2020)
    assert np.array_equal(x, rx) and np.array_equal(t, rt)


def test_spiral_dataset():
    d = Spiral()
    x, t = get_spiral()
    assert len(d) == 300 and np.array_equal(d.data, x) and np.array_equal(d.label, t)
    assert np.array_equal(Spiral(train=False).data, get_spiral(False)[0])


def test_sincurve_is_seeded_and_shifted():
    d = SinCurve()
    assert len(d) == 999 and d.data.shape == (999, 1) and d.data.dtype == np.float64
    assert np.array_equal(d.label[:-1], d.data[1:])
    assert d.data[:3, 0].tolist() == [0.013696168732145436, -0.016731895307545222,
                                      -0.03332402976763948]
    assert np.array_equal(SinCurve().data, d.data)
    assert not np.array_equal(SinCurve(seed=1).data, d.data)
    grid = np.linspace(0, 2 * np.pi, 1000)
    assert np.abs(d.data[:, 0] - np.sin(grid[:-1])).max() <= 0.05
    test = SinCurve(train=False)
    assert np.array_equal(test.data[:, 0], np.cos(grid)[:-1])
    assert np.array_equal(test.label[:, 0], np.cos(grid)[1:])


# =============================================================================
# Bundled datasets
# =============================================================================
def test_bundled_digits_file_is_intact():
    path = os.path.join(os.path.dirname(datasets.__file__), 'data', datasets.DIGITS_FILE)
    assert sha(open(path, 'rb').read()) == datasets.DIGITS_SHA256


def test_load_digits():
    x, t = load_digits()
    assert x.shape == (1797, 64) and x.dtype == np.uint8 and x.max() == 16
    assert t.shape == (1797,) and t.dtype == np.int64
    assert x[0, :16].tolist() == [0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0]
    assert t[:10].tolist() == list(range(10)) and t[-5:].tolist() == [9, 0, 8, 9, 8]


def test_digits_split_scaling_and_shape():
    train, test = Digits(), Digits(train=False)
    assert (len(train), len(test)) == (1500, 297)
    assert train.data.dtype == np.float32 and train.data.shape == (1500, 64)
    assert train.data.min() == 0.0 and train.data.max() == 1.0
    assert (train.data[0, :6] * 16).tolist() == [0, 0, 5, 13, 9, 1]
    assert train.label.dtype == np.int64
    assert np.bincount(train.label).tolist() == [151, 151, 150, 153, 148, 152, 151, 149, 146, 149]
    assert np.bincount(test.label).tolist() == [27, 31, 27, 30, 33, 30, 30, 30, 28, 31]
    assert test.label[:10].tolist() == [1, 7, 4, 6, 3, 1, 3, 9, 1, 7]
    x, _ = load_digits()
    assert np.array_equal(test.data * 16, x[1500:])
    images = Digits(flatten=False)
    assert images.data.shape == (1500, 1, 8, 8)
    assert np.array_equal(images.data.reshape(1500, 64), train.data)
    assert Digits.labels() == {i: str(i) for i in range(10)}


def test_names_list():
    names = load_names()
    assert len(names) == 5163
    assert names[:3] == ['aaron', 'abbey', 'abbie'] and names[-1] == 'zulma'
    assert names == sorted(set(names))
    assert all(re.fullmatch('[a-z]+', n) for n in names)


def test_names_dataset_stream_and_vocabulary():
    train, test = Names(), Names(train=False)
    assert (len(train.names), len(test.names)) == (4647, 516)
    assert test.names[:3] == ['abram', 'adelaide', 'adolfo']
    assert not set(train.names) & set(test.names)
    assert Names.chars == ['.'] + list('abcdefghijklmnopqrstuvwxyz') and Names.vocab_size == 27
    assert train.char_to_id['.'] == train.eos_id == 0 and train.char_to_id['z'] == 26
    assert train.id_to_char[1] == 'a'
    # '.aaron.abbey.' ...: data[k] -> label[k] is "next character".
    assert len(train) == sum(len(n) + 1 for n in train.names) == 32484
    assert train.data[:8].tolist() == [0, 1, 1, 18, 15, 14, 0, 1]
    assert np.array_equal(train.label[:-1], train.data[1:])
    assert train.label[-1] == 0 and train.data.dtype == np.int64
    assert train.decode(train.data[:13]) == '.aaron.abbey.'
    assert train.encode('emma').tolist() == [5, 13, 13, 1, 0]
    assert train.decode(train.encode('zoe')) == 'zoe.'
    assert len(test) == 3638


# =============================================================================
# MNIST on fake files
# =============================================================================
def _idx_images(images):
    n, rows, cols = images.shape
    header = (0x803).to_bytes(4, 'big') + b''.join(v.to_bytes(4, 'big') for v in (n, rows, cols))
    return gzip.compress(header + images.astype(np.uint8).tobytes(), mtime=0)


def _idx_labels(labels):
    header = (0x801).to_bytes(4, 'big') + len(labels).to_bytes(4, 'big')
    return gzip.compress(header + np.asarray(labels, dtype=np.uint8).tobytes(), mtime=0)


@pytest.fixture
def fake_mnist(monkeypatch):
    rng = np.random.default_rng(0)
    files = {
        'train-images-idx3-ubyte.gz': _idx_images(rng.integers(0, 256, (5, 28, 28))),
        'train-labels-idx1-ubyte.gz': _idx_labels([5, 0, 4, 1, 9]),
        't10k-images-idx3-ubyte.gz': _idx_images(np.arange(3 * 784).reshape(3, 28, 28) % 256),
        't10k-labels-idx1-ubyte.gz': _idx_labels([7, 2, 1]),
    }
    monkeypatch.setattr(MNIST, 'sha256', {name: sha(body) for name, body in files.items()})
    return files


def test_mnist_reads_files_placed_by_hand(cache, fake_mnist):
    for name, body in fake_mnist.items():
        (cache / name).write_bytes(body)
    test = MNIST(train=False)
    assert test.data.shape == (3, 1, 28, 28) and test.data.dtype == np.uint8
    assert test.label.tolist() == [7, 2, 1] and test.label.dtype == np.uint8
    assert test.data[1, 0, 0, :3].tolist() == [16, 17, 18]  # 784 % 256 = 16
    x, t = test[1]
    assert x.dtype == np.float32 and x.shape == (784,) and t == 2
    np.testing.assert_array_equal(x, (np.arange(784, 1568) % 256).astype(np.float32) / np.float32(255))
    train = MNIST(train=True)
    assert len(train) == 5 and train.label.tolist() == [5, 0, 4, 1, 9]
    assert MNIST.labels()[3] == '3'


def test_mnist_downloads_from_the_second_mirror(server, cache, fake_mnist, monkeypatch):
    for name, body in fake_mnist.items():
        server.files['/two/' + name] = body
    monkeypatch.setattr(MNIST, 'mirrors', (server.base + '/one/', server.base + '/two/'))
    test = MNIST(train=False)
    assert test.label.tolist() == [7, 2, 1]
    assert server.requests == ['/one/t10k-images-idx3-ubyte.gz', '/two/t10k-images-idx3-ubyte.gz',
                               '/one/t10k-labels-idx1-ubyte.gz', '/two/t10k-labels-idx1-ubyte.gz']
    assert sorted(os.listdir(cache)) == ['t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz']


def test_mnist_offline_error_says_where_to_put_the_files(cache, monkeypatch):
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(MNIST, 'mirrors', (f'http://127.0.0.1:{port}/mnist/',))
    with pytest.raises(DownloadError) as info:
        MNIST(train=False)
    message = str(info.value)
    assert str(cache / 't10k-images-idx3-ubyte.gz') in message
    assert MNIST.sha256['t10k-images-idx3-ubyte.gz'] in message


def test_mnist_constants():
    assert MNIST.mirrors[0].startswith('https://') and all(m.endswith('/') for m in MNIST.mirrors)
    assert sorted(MNIST.sha256) == sorted(MNIST.files['train'] + MNIST.files['test'])
    assert all(re.fullmatch('[0-9a-f]{64}', d) for d in MNIST.sha256.values())
    for cls in (CIFAR10, CIFAR100):
        assert re.fullmatch('[0-9a-f]{64}', cls.sha256) and cls.url.endswith('-binary.tar.gz')


def test_mnist_rejects_a_file_that_is_not_idx(cache, fake_mnist, monkeypatch):
    fake_mnist['t10k-labels-idx1-ubyte.gz'] = gzip.compress(b'not an idx file')
    monkeypatch.setattr(MNIST, 'sha256', {n: sha(b) for n, b in fake_mnist.items()})
    for name, body in fake_mnist.items():
        (cache / name).write_bytes(body)
    with pytest.raises(ValueError, match='IDX'):
        MNIST(train=False)


# =============================================================================
# CIFAR on fake binary archives
# =============================================================================
def _tar_gz(members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w:gz') as archive:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


def _records(labels, first_pixel):
    """CIFAR records: label byte(s), then 3072 pixels that start at ``first_pixel``."""
    rows = []
    for k, label in enumerate(labels):
        pixels = (np.arange(3072) + first_pixel + k) % 256
        rows.append(bytes(np.atleast_1d(label).tolist()) + pixels.astype(np.uint8).tobytes())
    return b''.join(rows)


def test_cifar10_binary_archive_and_npz_cache(cache, monkeypatch):
    members = {f'cifar-10-batches-bin/data_batch_{i}.bin': _records([i, 9 - i], first_pixel=10 * i)
               for i in range(1, 6)}
    members['cifar-10-batches-bin/test_batch.bin'] = _records([3, 8, 0], first_pixel=200)
    members['cifar-10-batches-bin/batches.meta.txt'] = b'airplane\n'
    archive = _tar_gz(members)
    (cache / 'cifar-10-binary.tar.gz').write_bytes(archive)
    monkeypatch.setattr(CIFAR10, 'sha256', sha(archive))

    train = CIFAR10(train=True)
    assert train.data.shape == (10, 3, 32, 32) and train.data.dtype == np.uint8
    assert train.label.tolist() == [1, 8, 2, 7, 3, 6, 4, 5, 5, 4]
    assert train.label.dtype == np.int64
    # Sample 2 is batch 2's first record: pixels 20, 21, ... in R, G, B planes.
    assert train.data[2, 0, 0, :3].tolist() == [20, 21, 22]
    assert train.data[2, 1, 0, 0] == (20 + 1024) % 256 and train.data[2, 2, 31, 31] == (20 + 3071) % 256
    x, t = train[2]
    assert x.dtype == np.float32 and x.shape == (3, 32, 32) and t == 2
    np.testing.assert_array_equal(x, (train.data[2].astype(np.float32) - 0.5) / 0.5)

    test = CIFAR10(train=False)
    assert test.label.tolist() == [3, 8, 0]
    assert sorted(os.listdir(cache)) == ['cifar-10-binary.tar.gz', 'cifar-10-binary.tar.gz.test.npz',
                                         'cifar-10-binary.tar.gz.train.npz']
    os.remove(cache / 'cifar-10-binary.tar.gz')  # now only the npz cache can answer
    again = CIFAR10(train=True)
    assert np.array_equal(again.data, train.data) and np.array_equal(again.label, train.label)
    assert CIFAR10.labels()[0] == 'airplane' and CIFAR10.labels()[9] == 'truck'


def test_cifar100_fine_and_coarse(cache, monkeypatch):
    archive = _tar_gz({
        'cifar-100-binary/train.bin': _records([(11, 99), (19, 0)], first_pixel=0),
        'cifar-100-binary/test.bin': _records([(4, 30)], first_pixel=5),
    })
    (cache / 'cifar-100-binary.tar.gz').write_bytes(archive)
    monkeypatch.setattr(CIFAR100, 'sha256', sha(archive))
    assert CIFAR100().label.tolist() == [99, 0]
    assert CIFAR100(label_type='coarse').label.tolist() == [11, 19]  # own cache per label type
    test = CIFAR100(train=False, label_type='fine')
    assert test.label.tolist() == [30] and test.data[0, 0, 0, 0] == 5
    with pytest.raises(ValueError):
        CIFAR100(label_type='medium')


def test_cifar100_labels():
    fine, coarse = CIFAR100.labels('fine'), CIFAR100.labels(label_type='coarse')
    assert len(fine) == 100 and len(set(fine.values())) == 100
    assert (fine[0], fine[1], fine[99]) == ('apple', 'aquarium fish', 'worm')
    assert list(fine.values()) == sorted(fine.values())
    assert len(coarse) == 20 and coarse[0] == 'aquatic mammals' and coarse[19] == 'vehicles 2'
    assert CIFAR100.labels() == fine


def test_cifar_archive_without_binary_batches_is_reported(cache, monkeypatch):
    archive = _tar_gz({'cifar-10-batches-py/data_batch_1': b'pickled'})
    (cache / 'cifar-10-binary.tar.gz').write_bytes(archive)
    monkeypatch.setattr(CIFAR10, 'sha256', sha(archive))
    with pytest.raises(ValueError, match='binary version'):
        CIFAR10()


# =============================================================================
# ImageNet labels, Shakespeare
# =============================================================================
def test_imagenet_labels_are_parsed_without_eval(server, cache, monkeypatch, tmp_path):
    server.files['/labels.txt'] = b"{0: 'tench, Tinca tinca',\n 1: 'goldfish, Carassius auratus'}"
    monkeypatch.setattr(ImageNet, 'labels_url', server.base + '/labels.txt')
    assert ImageNet.labels() == {0: 'tench, Tinca tinca', 1: 'goldfish, Carassius auratus'}
    assert len(ImageNet()) == 0

    marker = tmp_path / 'pwned'
    server.files['/evil.txt'] = f"__import__('pathlib').Path({str(marker)!r}).touch()".encode()
    monkeypatch.setattr(ImageNet, 'labels_url', server.base + '/evil.txt')
    with pytest.raises(ValueError):
        ImageNet.labels()
    assert not marker.exists()


def test_shakespeare_char_ids_follow_first_appearance(server, cache, monkeypatch):
    text = 'First Citizen:\nBefore we proceed'
    server.files['/input.txt'] = text.encode()
    monkeypatch.setattr(Shakespeare, 'url', server.base + '/input.txt')
    d = Shakespear()
    assert Shakespear is Shakespeare
    assert os.listdir(cache) == ['shakespear.txt']
    assert list(d.char_to_id)[:6] == ['F', 'i', 'r', 's', 't', ' ']
    assert d.char_to_id['F'] == 0 and d.id_to_char[5] == ' '
    assert len(d) == len(text) - 1 and d.data.dtype == np.int64
    assert ''.join(d.id_to_char[int(i)] for i in d.data) == text[:-1]
    assert np.array_equal(d.label[:-1], d.data[1:])


# =============================================================================
# npz cache helpers and import hygiene
# =============================================================================
def test_cache_npz_round_trip(cache):
    assert load_cache_npz('https://example.org/a/thing.tar.gz', train=True) == (None, None)
    data, label = np.arange(6).reshape(2, 3), np.array([1, 0])
    path = save_cache_npz(data, label, 'https://example.org/a/thing.tar.gz', train=True)
    assert path == str(cache / 'thing.tar.gz.train.npz')
    x, t = load_cache_npz('thing.tar.gz', train=True)
    assert np.array_equal(x, data) and np.array_equal(t, label)
    assert load_cache_npz('thing.tar.gz', train=False) == (None, None)
    assert os.listdir(cache) == ['thing.tar.gz.train.npz']


def test_cache_npz_never_unpickles(cache):
    np.savez(cache / 'evil.test.npz', data=np.array([{'a': 1}], dtype=object), label=np.zeros(1))
    with pytest.raises(ValueError, match='delete it'):
        load_cache_npz('evil', train=False)


def test_import_loads_neither_matplotlib_nor_pillow():
    code = ('import sys, dezero_kr.datasets, dezero_kr.dataloaders, dezero_kr.transforms, '
            'dezero_kr.download, dezero_kr.progress, dezero_kr.plot; '
            'print(sorted(m for m in ("matplotlib", "PIL", "tqdm") if m in sys.modules))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                         env=python_env())
    assert out.stdout.strip() == '[]'
