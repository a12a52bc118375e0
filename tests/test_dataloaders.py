"""dezero_kr.dataloaders: batch contents, epoch coverage, shuffling seeds, SeqDataLoader layout."""
import numpy as np
import pytest

from dezero_kr import cuda
from dezero_kr.dataloaders import DataLoader, SeqDataLoader
from dezero_kr.datasets import Dataset, Digits, Names


class Arange(Dataset):
    """x = [10k, 10k + 1] (float32), t = k % 3 for k = 0..n-1."""

    def __init__(self, n=10, **kwargs):
        self.n = n
        super().__init__(**kwargs)

    def prepare(self):
        k = np.arange(self.n)
        self.data = np.stack([10 * k, 10 * k + 1], axis=1).astype(np.float32)
        self.label = k % 3


def epoch_ids(loader):
    """Sample ids (x[:, 0] / 10) of every batch of one epoch."""
    return [(x[:, 0] / 10).astype(int).tolist() for x, t in loader]


def test_in_order_batches_and_last_partial_batch():
    loader = DataLoader(Arange(10), batch_size=3, shuffle=False)
    assert loader.max_iter == 4 and len(loader) == 4 and loader.data_size == 10
    batches = list(loader)
    assert [x.shape for x, _ in batches] == [(3, 2), (3, 2), (3, 2), (1, 2)]
    x, t = batches[1]
    assert x.tolist() == [[30, 31], [40, 41], [50, 51]] and x.dtype == np.float32
    assert t.tolist() == [0, 1, 2] and t.dtype == np.int64
    assert batches[3][0].tolist() == [[90, 91]]


def test_own_iterator_resets_after_each_epoch():
    loader = DataLoader(Arange(5), batch_size=2, shuffle=False)
    assert iter(loader) is loader
    assert epoch_ids(loader) == [[0, 1], [2, 3], [4]]
    assert loader.iteration == 0  # StopIteration reset it
    assert epoch_ids(loader) == [[0, 1], [2, 3], [4]]
    assert loader.next()[0][:, 0].tolist() == [0, 10]
    assert next(loader)[0][:, 0].tolist() == [20, 30]
    assert loader.iteration == 2


def test_shuffled_epoch_covers_every_sample_once():
    loader = DataLoader(Arange(100), batch_size=7, seed=0)
    first = sum(epoch_ids(loader), [])
    second = sum(epoch_ids(loader), [])
    assert sorted(first) == sorted(second) == list(range(100))
    assert first != second  # a new order every epoch
    assert first != list(range(100))


def test_seed_makes_orders_reproducible():
    a = DataLoader(Arange(50), batch_size=8, seed=42)
    b = DataLoader(Arange(50), batch_size=8, seed=np.random.default_rng(42))
    assert epoch_ids(a) == epoch_ids(b)
    assert a.index.tolist() != np.arange(50).tolist()
    c = DataLoader(Arange(50), batch_size=8, seed=np.random.RandomState(7))
    assert c.index.tolist() == np.random.RandomState(7).permutation(50).tolist()


def test_default_shuffle_uses_the_global_random_state_like_dezero():
    np.random.seed(0)
    loader = DataLoader(Arange(20), batch_size=4)
    assert loader.index.tolist() == np.random.RandomState(0).permutation(20).tolist()


def test_fast_batches_equal_the_per_sample_loop():
    dataset = Arange(23)
    pairs = [dataset[i] for i in range(len(dataset))]  # a plain list: per-sample path
    fast = DataLoader(dataset, batch_size=5, seed=3)
    slow = DataLoader(pairs, batch_size=5, seed=3)
    for (x1, t1), (x2, t2) in zip(fast, slow):
        assert x1.dtype == x2.dtype and t1.dtype == t2.dtype
        assert np.array_equal(x1, x2) and np.array_equal(t1, t2)

    transformed = Arange(7, transform=lambda x: x * 2, target_transform=lambda t: t + 100)
    x, t = next(DataLoader(transformed, batch_size=7, shuffle=False))
    assert x[:, 0].tolist() == [0, 20, 40, 60, 80, 100, 120] and t.tolist()[:3] == [100, 101, 102]


def test_dataset_without_labels_gives_none_targets():
    dataset = Arange(4)
    dataset.label = None
    x, t = next(DataLoader(dataset, batch_size=3, shuffle=False))
    assert t.dtype == object and t.tolist() == [None, None, None]
    x2, t2 = next(DataLoader([dataset[i] for i in range(4)], batch_size=3, shuffle=False))
    assert t2.tolist() == t.tolist() and np.array_equal(x, x2)


def test_subclass_with_its_own_getitem_is_called_per_sample():
    class Squares(Dataset):
        def __getitem__(self, index):
            assert np.isscalar(index)  # DeZero-style scalar-only dataset
            return np.array([index * index]), index % 2

        def __len__(self):
            return 6

    x, t = next(DataLoader(Squares(), batch_size=6, shuffle=False))
    assert x.ravel().tolist() == [0, 1, 4, 9, 16, 25] and t.tolist() == [0, 1, 0, 1, 0, 1]


def test_digits_epoch_covers_the_training_set():
    dataset = Digits()
    xs, ts = zip(*DataLoader(dataset, batch_size=100, seed=1))
    assert len(xs) == 15 and all(x.shape == (100, 64) and x.dtype == np.float32 for x in xs)
    assert np.bincount(np.concatenate(ts)).tolist() == np.bincount(dataset.label).tolist()
    together = np.concatenate(xs)
    order = np.lexsort(together.T)
    assert np.array_equal(together[order], dataset.data[np.lexsort(dataset.data.T)])


def test_seq_loader_stream_layout():
    loader = SeqDataLoader(Arange(10), batch_size=3)
    assert loader.max_iter == 4 and not loader.shuffle
    # jump = 10 // 3 = 3: stream k reads samples k*3, k*3+1, ... (mod 10).
    assert epoch_ids(loader) == [[0, 3, 6], [1, 4, 7], [2, 5, 8], [3, 6, 9]]
    assert epoch_ids(loader) == [[0, 3, 6], [1, 4, 7], [2, 5, 8], [3, 6, 9]]
    x, t = next(SeqDataLoader(Arange(10), batch_size=3))
    assert t.tolist() == [0, 0, 0]


def test_seq_loader_wraps_around():
    assert epoch_ids(SeqDataLoader(Arange(7), batch_size=2)) == [[0, 3], [1, 4], [2, 5], [3, 6]]


def test_seq_loader_on_names_continues_each_stream():
    names = Names()
    loader = SeqDataLoader(names, batch_size=4)
    x0, t0 = next(loader)
    x1, _ = next(loader)
    jump = len(names) // 4
    assert x0.tolist() == names.data[[0, jump, 2 * jump, 3 * jump]].tolist()
    assert np.array_equal(t0, x1)  # the next batch's input is this batch's target


def test_bad_batch_size():
    with pytest.raises(ValueError):
        DataLoader(Arange(3), batch_size=0)


@pytest.mark.skipif(cuda.gpu_enable, reason='a GPU is available here')
def test_gpu_without_cupy_is_a_clear_error():
    with pytest.raises(RuntimeError, match='CuPy'):
        DataLoader(Arange(3), batch_size=2, gpu=True)
    with pytest.raises(RuntimeError, match='CuPy'):
        SeqDataLoader(Arange(3), batch_size=2, gpu=True)
    loader = DataLoader(Arange(3), batch_size=2)
    with pytest.raises(RuntimeError, match='CuPy'):
        loader.to_gpu()
    assert loader.gpu is False

