"""Each rank's part of the data: ``scatter_dataset``, ``ShardDataset``, ``ArrayShardDataset``."""

import numpy as np

from dezero_kr.datasets import Dataset
from dezero_kr.distributed.communicator import Communicator

# =============================================================================
# Datasets
# =============================================================================
def scatter_dataset(dataset, comm, shuffle=False, seed=0, drop_remainder=True):
    """This rank's equal share of ``dataset`` (a ``ShardDataset``).

    The dataset (the same on every rank) is ordered -- a random permutation
    when ``shuffle``, drawn from ``seed`` and the epoch (``set_epoch``), the
    identity otherwise -- and cut into ``size`` consecutive shards of
    ``len(dataset) // size`` samples; rank r takes shard r.  **Remainder**: the
    last ``len(dataset) % size`` samples of that order are left out of the
    epoch (with ``shuffle`` they are different samples every epoch), so every
    rank runs the same number of steps -- needed for training, where a rank
    with one more batch would wait forever in its extra all-reduce.  For
    evaluation pass ``drop_remainder=False``: ranks ``0 .. n % size - 1`` then
    get one sample more and every sample is used once (``evaluate`` weights by
    count).  Rank 0's ``seed`` is used on every rank (None: rank 0 draws one),
    so the shards are disjoint.

    An array-backed dezero_kr ``Dataset`` gives an ``ArrayShardDataset``
    (the shard's arrays, so ``DataLoader`` indexes them in one go); anything
    else with ``len`` and ``[i]`` gives a ``ShardDataset`` view.
    Raises ValueError when the dataset has fewer samples than ranks or its
    length differs between ranks.
    """
    cls = ArrayShardDataset if _array_backed(dataset) else ShardDataset
    return cls(dataset, comm, shuffle, seed, drop_remainder)


def _array_backed(dataset):
    return (isinstance(dataset, Dataset) and type(dataset).__getitem__ is Dataset.__getitem__
            and type(dataset).__len__ is Dataset.__len__ and isinstance(dataset.data, np.ndarray))


class _Shard:
    """The shard bookkeeping shared by both shard classes (a mixin)."""

    def _init_shard(self, dataset, comm, shuffle, seed, drop_remainder):
        if not isinstance(comm, Communicator):
            raise TypeError(f'scatter_dataset: comm must be what dist.init() returns, got '
                            f'{type(comm).__name__}')
        n = len(dataset)
        if n < comm.size:
            raise ValueError(f'scatter_dataset: the dataset has {n} samples, fewer than the '
                             f'{comm.size} ranks')
        if shuffle and seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint32)[0])
        seed = 0 if seed is None else seed
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f'scatter_dataset: seed must be a non-negative int or None, got {seed!r}')
        mine = np.array([n, seed], dtype=np.uint64)
        everyone = comm.allgather_array(mine)
        if not np.all(everyone[:, 0] == n):
            raise ValueError(f'scatter_dataset: the dataset length differs between ranks: '
                             f'{everyone[:, 0].tolist()} (rank order)')
        self.dataset = dataset
        self.comm = comm
        self.shuffle = shuffle
        self.seed = int(everyone[0, 1])  # rank 0's seed on every rank
        q, extra = divmod(n, comm.size)
        if drop_remainder:
            self._start, self.shard_size = comm.rank * q, q
        else:
            self._start = comm.rank * q + min(comm.rank, extra)
            self.shard_size = q + (comm.rank < extra)
        self.epoch = None
        self.set_epoch(0)

    def set_epoch(self, epoch):
        """Use the partition of ``epoch`` (a new random one per epoch when shuffling; the same
        on every rank).  Call it at the start of every epoch; epoch 0 is set at creation."""
        if self.epoch == epoch:
            return
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng([self.seed, int(epoch)]).permutation(n)
        else:
            order = np.arange(n)
        self.indices = order[self._start:self._start + self.shard_size]
        self.epoch = epoch
        self._indices_changed()

    def _indices_changed(self):
        pass

    def __len__(self):
        return self.shard_size


class ShardDataset(_Shard):
    """A view of one rank's shard of any dataset (``len`` and ``[i]``); see ``scatter_dataset``.

    ``indices``: the dataset indices of the shard in the current epoch.
    ``shard[i]`` is ``dataset[indices[i]]``; a slice or an index array gives
    the batch ``(xs, ts)`` stacked along a new first axis.
    """

    def __init__(self, dataset, comm, shuffle=False, seed=0, drop_remainder=True):
        self._init_shard(dataset, comm, shuffle, seed, drop_remainder)

    def __getitem__(self, index):
        if np.isscalar(index) or (isinstance(index, np.ndarray) and index.ndim == 0):
            if not -self.shard_size <= index < self.shard_size:
                raise IndexError(f'ShardDataset: index {index} is out of range for a shard of '
                                 f'{self.shard_size} samples')
            return self.dataset[int(self.indices[index])]
        batch = [self.dataset[int(i)] for i in self.indices[index]]
        return np.array([b[0] for b in batch]), np.array([b[1] for b in batch])


class ArrayShardDataset(_Shard, Dataset):
    """One rank's shard of an array-backed ``Dataset``: a ``Dataset`` whose ``data`` and
    ``label`` are the shard's rows (copied at each ``set_epoch``); transforms are the
    dataset's.  See ``scatter_dataset``."""

    def __init__(self, dataset, comm, shuffle=False, seed=0, drop_remainder=True):
        # Dataset.__init__ would call prepare(); the arrays come from the dataset instead.
        self.train = getattr(dataset, 'train', True)
        self.transform = dataset.transform
        self.target_transform = dataset.target_transform
        self._init_shard(dataset, comm, shuffle, seed, drop_remainder)

    def _indices_changed(self):
        self.data = self.dataset.data[self.indices]
        label = self.dataset.label
        self.label = None if label is None else label[self.indices]
