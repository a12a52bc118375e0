"""Mini-batch iterators over a dataset (DeZero-compatible).

``DataLoader`` cuts a dataset into batches, shuffled or in order.
``SeqDataLoader`` reads ``batch_size`` parallel streams from a sequence
dataset (for truncated back-propagation through time with RNNs).

Both are their own iterator, as in DeZero: ``for x, t in loader`` runs one
epoch; when it ends the loader resets itself (reshuffling), so the same
object can be looped over again for the next epoch.  ``next(loader)`` /
``loader.next()`` fetch one batch by hand.

A batch is ``(x, t)``: ``x`` stacks the samples' inputs along a new first
axis, ``t`` their targets (``x.shape == (B,) + sample_shape``; ``B`` is
``batch_size`` except for a shorter last batch).
"""
import math

import numpy as np

from dezero_kr import cuda
from dezero_kr.datasets import Dataset

__all__ = ['DataLoader', 'SeqDataLoader']


def _make_rng(seed):
    if seed is None or isinstance(seed, (np.random.Generator, np.random.RandomState)):
        return seed
    return np.random.default_rng(seed)


class DataLoader:
    """Iterate over ``dataset`` in mini-batches.

    Args:
        dataset: a ``Dataset`` or any sequence of ``(x, t)`` pairs.
        batch_size: samples per batch; the last batch holds the remainder.
        shuffle: a new random order at every epoch (True) or the dataset's order.
        gpu: return CuPy arrays (raises a clear error when no GPU is usable).
        seed: where shuffled orders come from.  None (default) uses NumPy's
            global random state, like DeZero (so ``np.random.seed(0)`` fixes
            the order); an int or a ``numpy.random.Generator`` /
            ``RandomState`` gives the loader its own reproducible stream.

    Attributes:
        data_size: ``len(dataset)``.
        max_iter: batches per epoch, ``ceil(data_size / batch_size)``.
        iteration: batches served this epoch.
        index: the sample order of the current epoch.

    Every sample appears exactly once per epoch.
    """

    def __init__(self, dataset, batch_size, shuffle=True, gpu=False, seed=None):
        """See the class docstring; ``batch_size < 1`` raises ``ValueError``."""
        if batch_size < 1:
            raise ValueError(f'batch_size must be at least 1, not {batch_size}')
        if gpu:
            cuda.require_gpu('DataLoader(gpu=True)')
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.data_size = len(dataset)
        self.max_iter = math.ceil(self.data_size / batch_size)
        self.gpu = gpu
        self.rng = _make_rng(seed)
        self.reset()

    def reset(self):
        """Start a new epoch: iteration 0 and, when shuffling, a new order."""
        self.iteration = 0
        if self.shuffle:
            permutation = np.random.permutation if self.rng is None else self.rng.permutation
            self.index = permutation(self.data_size)
        else:
            self.index = np.arange(self.data_size)

    def __iter__(self):
        return self

    def __len__(self):
        # Batches per epoch; lets progress bars show a total.
        return self.max_iter

    def __next__(self):
        """The next batch ``(x, t)``; after the last one, ``reset()`` and ``StopIteration``."""
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration
        start = self.iteration * self.batch_size
        batch_index = self.index[start:start + self.batch_size]
        x, t = self._collate(batch_index)
        self.iteration += 1
        return x, t

    def next(self):
        """The next batch ``(x, t)`` (DeZero's name for ``next(loader)``); ``StopIteration`` ends an epoch."""
        return self.__next__()

    def to_cpu(self):
        """Return NumPy batches from now on."""
        self.gpu = False

    def to_gpu(self):
        """Return CuPy batches from now on; ``RuntimeError`` when no GPU is usable."""
        cuda.require_gpu('DataLoader.to_gpu()')
        self.gpu = True

    def _collate(self, batch_index):
        """Build ``(x, t)`` for the given sample indices."""
        dataset = self.dataset
        if isinstance(dataset, Dataset) and type(dataset).__getitem__ is Dataset.__getitem__:
            # The base class stacks a batch itself (with plain array indexing
            # when there are no transforms); the values equal the loop below.
            x, t = dataset[np.asarray(batch_index)]
            if t is None:
                t = np.array([None] * len(batch_index))  # what the loop gives
        else:
            batch = [dataset[i] for i in batch_index]
            x = np.array([example[0] for example in batch])
            t = np.array([example[1] for example in batch])
        if self.gpu:
            x = cuda.as_cupy(x)
            if t.dtype != object:  # a label-less dataset keeps its array of None
                t = cuda.as_cupy(t)
        return x, t


class SeqDataLoader(DataLoader):
    """Read a sequence dataset as ``batch_size`` parallel streams (no shuffling).

    With ``N = len(dataset)`` and ``jump = N // batch_size``, row ``k`` of
    batch ``i`` is sample ``(k * jump + i) % N``: stream ``k`` starts at
    ``k * jump`` and advances one step per batch, so consecutive batches
    continue each stream (what truncated BPTT needs).  ``max_iter`` is
    ``ceil(N / batch_size)``, as in ``DataLoader``.
    """

    def __init__(self, dataset, batch_size, gpu=False):
        super().__init__(dataset=dataset, batch_size=batch_size, shuffle=False, gpu=gpu)

    def __next__(self):
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration
        jump = self.data_size // self.batch_size
        batch_index = (np.arange(self.batch_size) * jump + self.iteration) % self.data_size
        x, t = self._collate(batch_index)
        self.iteration += 1
        return x, t
