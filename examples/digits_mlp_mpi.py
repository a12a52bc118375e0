"""Data-parallel MLP on the 8x8 digits over MPI (MPI 데이터 병렬 학습, 오프라인).

    mpiexec -n 2 python examples/digits_mlp_mpi.py         # 2 processes, each on half the data
    python examples/digits_mlp_mpi.py                      # the same file alone (1 process)
    mpiexec -n 2 python examples/digits_mlp_mpi.py --save out/digits.npz   # rank 0 writes the weights

Needs the MPI extra for more than one process: ``pip install -e ".[mpi]"``.

Every rank runs this same script: ``dist.scatter_dataset`` gives each one an
equal share of the 1,500 training images (a new random partition every epoch,
the same on all ranks), each computes the gradient of its own batch of
``--batch`` images, and ``dist.DataParallel`` averages the gradients over the
ranks before Adam's update -- so R ranks train like one process with batches
of R x ``--batch``.  Only rank 0 prints, draws the progress bar and saves; the
saved file loads into an ordinary single-process model.

Model 64 -> 256 -> 256 -> 10 (ReLU), Adam (alpha 0.002), gradient clipping
by global norm 5 on the averaged gradients.
"""
import time

import numpy as np

import dezero_kr.distributed as dist
import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import DataLoader
from dezero_kr.datasets import Digits
from dezero_kr.grad_clip import ClipGradNorm
from dezero_kr.models import Model
from dezero_kr.optimizers import Adam

import _util


class DigitsMLP(Model):
    """x (N, 64) -> scores (N, 10).  Input sizes are given, so every weight exists before
    DataParallel broadcasts rank 0's values (a lazy layer would cost the first step)."""

    def __init__(self, hidden):
        super().__init__()
        self.l1 = L.Linear(hidden, in_size=64)
        self.l2 = L.Linear(hidden, in_size=hidden)
        self.l3 = L.Linear(10, in_size=hidden)

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


def main(argv=None):
    p = _util.parser(__doc__, epochs=20)
    p.add_argument('--batch', type=int, default=32, help='images per rank per step (default 32)')
    p.add_argument('--hidden', type=int, default=256, help='units per hidden layer (default 256)')
    p.add_argument('--save', metavar='PATH', default=None, help='rank 0 writes the weights here')
    args = p.parse_args(argv)
    start = time.perf_counter()

    comm = dist.init()  # under mpiexec: this process's rank and the number of ranks
    np.random.seed(args.seed + comm.rank)  # different on purpose: DataParallel broadcasts rank 0's
    model = DigitsMLP(args.hidden)
    optimizer = dist.DataParallel(Adam(alpha=0.002).setup(model), comm)
    clip = ClipGradNorm(5.0)
    optimizer.add_hook(clip)  # runs on the averaged gradients

    train = dist.scatter_dataset(Digits(train=True), comm, shuffle=True, seed=args.seed)
    test = dist.scatter_dataset(Digits(train=False), comm, drop_remainder=False)
    loader = DataLoader(train, batch_size=args.batch, seed=args.seed + comm.rank)
    test_loader = DataLoader(test, batch_size=100, shuffle=False)
    comm.print(f'{comm.size} rank(s): {len(train)} training images each, batch {args.batch} per '
               f'rank ({args.batch * comm.size} in all), MLP 64-{args.hidden}-{args.hidden}-10')

    accuracy = None
    for epoch in range(1, args.epochs + 1):
        train.set_epoch(epoch)
        total = 0.0
        bar = comm.progress(loader, desc=f'epoch {epoch}/{args.epochs}', leave=False,
                            disable=args.no_progress)
        for x, t in bar:
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            total += float(loss.data) * len(t)
        train_loss = comm.mean(total / len(train))
        accuracy = dist.evaluate(comm, lambda x, t: F.accuracy(model(x), t), test_loader)
        if epoch % 5 == 0 or epoch == args.epochs:
            comm.print(f'epoch {epoch:3d}  train loss {train_loss:.4f}  test acc {accuracy:.4f}')

    if args.save:
        comm.save_weights(model, args.save)
        comm.print(f'[저장 / saved] {args.save}')
    if comm.is_root:
        _util.report('test_accuracy', accuracy, start)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
