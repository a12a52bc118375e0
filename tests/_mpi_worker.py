"""The program ``tests/test_distributed.py`` starts under ``mpiexec`` (not a test file itself).

    mpiexec -n R python tests/_mpi_worker.py OUT_DIR MODE

``MODE`` ``train`` runs every configuration of ``CONFIGS`` and writes, per
configuration and rank, ``OUT_DIR/{config}_{rank}.npz`` with the batches the
rank saw, its parameters before and after training and per-step records.  The
test trains one process on the concatenated batches with the same builders
(``build``) and compares.  The other modes make a rank fail in some way.

Each rank seeds NumPy with its rank, so initial weights differ between ranks
until ``DataParallel`` broadcasts rank 0's.
"""
import os
import sys

import numpy as np

import dezero_kr.distributed as dist
import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import DataLoader, Dataset, Parameter, Variable
from dezero_kr.datasets import Digits
from dezero_kr.grad_clip import ClipGradNorm
from dezero_kr.models import Model
from dezero_kr.optimizers import SGD, Adam, MomentumSGD

N_TRAIN, BATCH, EPOCHS, HIDDEN = 100, 8, 2, 16
RARE_PIXEL, RARE_LEVEL = 14, 0.5  # pixel 14 > 0.5 in 5% of the first 100 images
CONFIGS = ('sgd', 'clip', 'adam_unused', 'lazy', 'wide')
# 'wide': a first layer whose weight gradient is just big enough to be all-reduced in place
WIDE = dist.INPLACE_MIN_BYTES // (64 * 8) + 1


class DigitsSubset(Dataset):
    """The first ``N_TRAIN`` Digits training images in float64 (or the next 50 for evaluation)."""

    def __init__(self, part='train'):
        self.part = part
        super().__init__()

    def prepare(self):
        d = Digits(train=True)
        rows = slice(0, N_TRAIN) if self.part == 'train' else slice(N_TRAIN, N_TRAIN + 50)
        self.data = d.data[rows].astype(np.float64)
        self.label = d.label[rows]


class Net(Model):
    """64 -> HIDDEN -> 10 float64 MLP.

    ``hidden``: the width of the hidden layer (``WIDE``: ``l1.W`` is reduced in place).
    ``unused``: a Linear never called (its grads are None on every rank).
    ``rare``: a bias added only to the rows whose pixel ``RARE_PIXEL`` exceeds
    ``RARE_LEVEL``, and only when the batch has such rows, so its grad is None
    on some ranks, all ranks or none depending on the step.
    """

    def __init__(self, lazy=False, extra=False, hidden=HIDDEN):
        super().__init__()
        in_size = None if lazy else 64
        self.l1 = L.Linear(hidden, dtype=np.float64, in_size=in_size)
        self.l2 = L.Linear(10, dtype=np.float64, in_size=None if lazy else hidden)
        self.extra = extra
        if extra:
            self.unused = L.Linear(3, dtype=np.float64, in_size=4)
            self.rare = L.Linear(10, dtype=np.float64, in_size=1, nobias=True)

    def forward(self, x):
        y = self.l2(F.tanh(self.l1(x)))
        if self.extra:
            mask = (np.asarray(x)[:, RARE_PIXEL] > RARE_LEVEL).astype(np.float64)[:, None]
            if mask.any():
                y = y + self.rare(mask)
        return y


def build(config):
    """``(model, optimizer, clip_hook or None)`` of a configuration (NumPy's RNG makes the weights)."""
    model = Net(lazy=config == 'lazy', extra=config == 'adam_unused',
                hidden=WIDE if config == 'wide' else HIDDEN)
    clip = None
    if config in ('adam_unused', 'wide'):
        optimizer = Adam(alpha=0.01).setup(model)
    elif config == 'clip':
        optimizer = MomentumSGD(lr=0.2, momentum=0.9).setup(model)
        clip = ClipGradNorm(0.3)
        optimizer.add_hook(clip)
    else:
        optimizer = SGD(lr=0.5).setup(model)
    return model, optimizer, clip


def step(model, optimizer, x, t):
    loss = F.softmax_cross_entropy(model(x), t)
    model.cleargrads()
    loss.backward()
    optimizer.update()


def snapshot(model, prefix):
    return {f'{prefix}/{name}': p.data.copy() for name, p in model.named_params()
            if p.data is not None}


def train(comm, out_dir, config):
    np.random.seed(comm.rank)  # different initial weights on each rank
    model, optimizer, clip = build(config)
    record = {}
    record.update(snapshot(model, 'before'))  # this rank's own values
    opt = dist.DataParallel(optimizer, comm)
    record.update(snapshot(model, 'init'))  # after the broadcast: rank 0's values
    shard = dist.scatter_dataset(DigitsSubset(), comm, shuffle=True, seed=3)
    loader = DataLoader(shard, batch_size=BATCH, shuffle=True, seed=100 + comm.rank)
    k = 0
    for epoch in range(EPOCHS):
        shard.set_epoch(epoch)
        record[f'indices{epoch}'] = shard.indices.copy()
        for x, t in loader:
            record[f'x{k}'], record[f't{k}'] = x, t
            if config == 'adam_unused':
                y = model(x)  # step by hand to see which grads are None before the reduce
                loss = F.softmax_cross_entropy(y, t)
                model.cleargrads()
                loss.backward()
                record[f'rare_grad{k}'] = np.array(model.rare.W.grad is not None)
                opt.update()
                record[f'rare_grad_after{k}'] = np.array(model.rare.W.grad is not None)
            else:
                step(model, opt, x, t)
            if clip is not None:
                record[f'norm{k}'] = np.array(clip.last_norm)
            if k == 0:
                record.update(snapshot(model, 'after_first'))
            k += 1
    record['steps'] = np.array(k)
    record['t'] = np.array(opt.t)
    record['skipped'] = np.array(opt.skipped_steps)
    record.update(snapshot(model, 'final'))
    if config == 'sgd':
        comm.save_weights(model, os.path.join(out_dir, 'sgd_checkpoint.npz'))
        evaluation = dist.scatter_dataset(DigitsSubset('eval'), comm, drop_remainder=False)
        record['eval_indices'] = evaluation.indices
        record['eval_accuracy'] = np.array(dist.evaluate(
            comm, lambda x, t: F.accuracy(model(x), t), DataLoader(evaluation, 7, shuffle=False)))
    np.savez(os.path.join(out_dir, f'{config}_{comm.rank}.npz'), **record)


def mixed_dtypes(comm, out_dir):
    """Layers of two dtypes (two buffers): each rank's local grads and the reduced ones.

    ``a`` float32 on float32 input (float32 grads), ``b`` float64, ``c`` a
    float32 layer fed float64 input (its grads come out float64).
    """
    np.random.seed(comm.rank)
    model = Model()
    model.a = L.Linear(5, dtype=np.float32, in_size=64)
    model.b = L.Linear(3, dtype=np.float64, in_size=64)
    model.c = L.Linear(2, dtype=np.float32, in_size=64)
    opt = dist.DataParallel(SGD(lr=0.1).setup(model), comm)
    x = DigitsSubset().data[comm.rank * 4:comm.rank * 4 + 4]
    model.cleargrads()
    F.sum(model.a(x.astype(np.float32)) ** 2).backward()  # a float32 loss: float32 grads
    (F.sum(model.b(x) ** 2) + F.sum(model.c(x) ** 2)).backward()
    record = {f'local/{n}': p.grad.data.copy() for n, p in model.named_params()}
    opt.allreduce_grads()
    record.update({f'reduced/{n}': p.grad.data for n, p in model.named_params()})
    np.savez(os.path.join(out_dir, f'mixed_{comm.rank}.npz'), **record)


def in_place_paths(comm, out_dir):
    """Gradients that take every path of the reduce plan: each rank's local gradients, the
    reduced ones, whether each was reduced in its own array, and what kept references see.

    Big parameters (``INPLACE_MIN_BYTES``, exactly at the limit) ``a`` .. ``h``, small ``s``:
    ``a`` plain; ``c`` None on rank 0 only; ``d`` None on every rank; ``e`` a transposed
    (not C-contiguous) array on odd ranks; ``f`` a float32 parameter with a float64 gradient;
    ``g`` a contiguous view into a larger array; ``h`` the very array of ``a``'s gradient.
    """
    n = dist.INPLACE_MIN_BYTES // 8
    shape = (n // 16, 16)
    model = L.Layer()
    for name in 'acdefgh':
        setattr(model, name, Parameter(np.zeros(shape, dtype=np.float32 if name == 'f' else np.float64)))
    model.s = Parameter(np.zeros(5))
    opt = dist.DataParallel(SGD().setup(model), comm)
    rng = np.random.default_rng(comm.rank)
    local = {name: rng.standard_normal(p.data.shape) for name, p in model.named_params()}
    local['h'] = local['a']
    record = {f'local/{name}': g.copy() for name, g in local.items()}
    arrays = dict(local)
    if comm.rank % 2:
        arrays['e'] = np.ascontiguousarray(local['e'].T).T  # same values, Fortran order
    base = np.concatenate([[7.0], local['g'].ravel()])
    arrays['g'] = base[1:].reshape(shape)  # a view: its base must stay as it is
    for name, p in model.named_params():
        p.grad = None if name == 'd' or (name == 'c' and comm.rank == 0) else Variable(arrays[name])
    kept = {name: p.grad.data for name, p in model.named_params() if p.grad is not None}
    opt.allreduce_grads()
    for name, p in model.named_params():
        record[f'is_none/{name}'] = np.array(p.grad is None)
        if p.grad is not None:
            record[f'reduced/{name}'] = p.grad.data
            record[f'dtype/{name}'] = np.array(p.grad.data.dtype.str)
        if name in kept:
            record[f'kept/{name}'] = kept[name]
            record[f'same_array/{name}'] = np.array(p.grad.data is kept[name])
    record['base_g'] = base
    np.savez(os.path.join(out_dir, f'inplace_{comm.rank}.npz'), **record)


def change_layout(model, mode):
    """Issue 34: a parameter's dtype or shape changed (on one rank, or on all) after setup."""
    if mode in ('dtype_change', 'agree_dtype'):
        model.l1.W.data = model.l1.W.data.astype(np.float32)
    elif mode == 'shape_change':
        model.l2.b.data = model.l2.b.data.reshape(1, 10)  # the forward pass still broadcasts it


def mismatched_collectives(comm, mode):
    """Issue 34: ``mean`` / ``allgather_array`` of other shapes on rank 1, after one agreed call."""
    if mode == 'mean_shapes':
        comm.mean(1.0)
        comm.mean(np.ones(3 if comm.rank == 1 else 2))
    else:
        comm.allgather_array(np.zeros(2))
        comm.allgather_array(np.zeros(3 if comm.rank == 1 else 2))
    print('finished', comm.rank)


def agreed_changes(comm, out_dir):
    """Every rank changes shapes and dtypes at the same time: the ranks agree anew and go on.

    Records ``mean`` and ``allgather_array`` of changing shapes, and the parameters of the
    'sgd' training of ``fail`` where every rank makes ``l1/W`` float32 after step 2 and rank 1
    alone replaces ``l2/b`` by a new Parameter before step 3 (broadcast: step 3 is skipped).
    """
    record = {}
    values = [2.0 + comm.rank, np.arange(3.0) * (comm.rank + 1), 5.0 * comm.rank,
              np.full((2, 2), float(comm.rank))]
    for i, v in enumerate(values):
        record[f'mean{i}'] = np.array(comm.mean(v, weight=comm.rank + 1))
    for i, v in enumerate([np.arange(2) + comm.rank, np.arange(3.0) * comm.rank,
                           np.array([comm.rank], dtype=np.int8)]):
        record[f'gather{i}'] = comm.allgather_array(v)
    np.random.seed(0)
    model, optimizer, _ = build('sgd')
    opt = dist.DataParallel(optimizer, comm)
    data = DigitsSubset()
    rows = slice(comm.rank * BATCH, (comm.rank + 1) * BATCH)
    for k in range(5):
        if k == 2:
            change_layout(model, 'agree_dtype')
        if k == 3 and comm.rank == 1:  # a new Parameter on one rank: every rank broadcasts
            model.l2.b = Parameter(model.l2.b.data + 1.0)
        step(model, opt, data.data[rows], data.label[rows])
    record['skipped'] = np.array(opt.skipped_steps)
    record.update(snapshot(model, 'final'))
    np.savez(os.path.join(out_dir, f'agreed_{comm.rank}.npz'), **record)
    comm.print('agreed', comm.size)


def fail(comm, mode):
    np.random.seed(0)
    model, optimizer, _ = build('sgd')
    if mode == 'mismatch' and comm.rank == 1:
        model.l3 = L.Linear(2, dtype=np.float64, in_size=10)  # a layer the other ranks lack
    opt = dist.DataParallel(optimizer, comm)
    x, t = DigitsSubset().data[:BATCH], DigitsSubset().label[:BATCH]
    for k in range(1000):
        if k == 2 and comm.rank == 1:
            change_layout(model, mode)
            if mode == 'raise':
                raise ValueError('deliberate failure on rank 1')
            if mode == 'die':
                os._exit(7)
            if mode == 'die_0':
                os._exit(0)  # no Python cleanup, no MPI_Finalize: nothing in this rank can act
            if mode == 'context':
                with comm.abort_on_error():
                    raise KeyError('deliberate failure in a with block')
            if mode == 'exit':
                sys.exit(3)
            if mode == 'exit_message':
                sys.exit('deliberate exit with a message')
            if mode == 'exit_caught':
                try:
                    sys.exit(4)  # caught: the rank goes on and the job ends normally
                except SystemExit as e:
                    assert e.code == 4
        step(model, opt, x, t)
    print('finished', comm.rank)


def main(out_dir, mode):
    if mode.startswith('raise_before_init') and os.environ.get('PMI_RANK') == '1':  # hydra's
        if mode == 'raise_before_init_mpi':
            from mpi4py import MPI  # noqa: F401  (MPI runs: the hook can call MPI_Abort)
        raise ValueError('deliberate failure before init')
    comm = dist.init(abort_on_error=mode != 'context')
    if mode in ('mean_shapes', 'gather_shapes'):
        mismatched_collectives(comm, mode)
    elif mode == 'agreed':
        agreed_changes(comm, out_dir)
    elif mode == 'train':
        for config in CONFIGS:
            train(comm, out_dir, config)
        mixed_dtypes(comm, out_dir)
        in_place_paths(comm, out_dir)
        comm.print('trained', comm.size)
    else:
        fail(comm, 'raise' if mode.startswith('raise_before_init') else mode)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
