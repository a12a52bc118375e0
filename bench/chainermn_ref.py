"""ChainerMN's CPU all-reduce of ``bench mpi``'s gradients against a raw ``Allreduce``.

Run by ``python -m bench mpi`` when ``CHAINERMN_PYTHON`` names a Python that has
``chainer`` (7.8, which carries ChainerMN), ``mpi4py`` and an MPI -- Chainer needs
NumPy < 2, so it lives in a virtual environment of its own::

    python -m venv /tmp/cvenv
    /tmp/cvenv/bin/pip install "setuptools<70" wheel "numpy<2" mpi4py mpich
    /tmp/cvenv/bin/pip install --no-build-isolation chainer
    CHAINERMN_PYTHON=/tmp/cvenv/bin/python python -m bench mpi

Under ``mpiexec -n R``: the same parameter shapes as ``bench mpi``'s Digits MLP or
small CNN, float32, random gradients per rank; ``comm.multi_node_mean_grad(model)``
(the ``naive`` communicator: ChainerMN's one for CPU arrays) against a bare
``Allreduce`` of one buffer of the same bytes, each after a ``Barrier``, median of
the paired ratios.  Checks that the result is the mean of the ranks' gradients.
Imports nothing from dezero_kr.
"""
import os
import sys

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import chainer.links as L  # noqa: E402
import chainermn  # noqa: E402
import numpy as np  # noqa: E402
from chainer import Chain, Sequential  # noqa: E402
from mpi4py import MPI  # noqa: E402

TAG = 'BENCH_CHAINERMN_RESULT '


def build(name):
    """The parameter shapes of ``bench.mpi.build(name)``, float32."""
    if name == 'mlp':
        model = Sequential(L.Linear(64, 256), L.Linear(256, 256), L.Linear(256, 10))
    else:
        model = Chain()
        with model.init_scope():
            model.conv = L.Convolution2D(3, 16, 3, pad=1)
            model.fc = L.Linear(16 * 16 * 16, 10)
    for p in model.params():
        p.array = p.array.astype(np.float32)
    return model


def main(name, repeat):
    comm = chainermn.create_communicator('naive')
    model = build(name)
    params = list(model.params())
    rng = np.random.default_rng(comm.rank)
    grads = [rng.random(p.array.shape, dtype=np.float32) for p in params]
    expected = [comm.mpi_comm.allreduce(g, op=MPI.SUM) / comm.size for g in grads]
    raw = rng.random(sum(g.nbytes for g in grads) // 4, dtype=np.float32)
    ours, floor = [], []
    for _ in range(repeat):
        for p, g in zip(params, grads):
            p.grad = g.copy()
        comm.mpi_comm.Barrier()
        t0 = time.perf_counter()
        comm.multi_node_mean_grad(model)
        ours.append(time.perf_counter() - t0)
        comm.mpi_comm.Barrier()
        t0 = time.perf_counter()
        comm.mpi_comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM)
        floor.append(time.perf_counter() - t0)
    error = max(float(np.abs(p.grad - e).max()) for p, e in zip(params, expected))
    if comm.rank == 0:
        print(TAG + json.dumps({'model': name, 'chainermn_ms': 1e3 * statistics.median(ours),
                                'floor_ms': 1e3 * statistics.median(floor),
                                'ratio': statistics.median([a / b for a, b in zip(ours, floor)]),
                                'max_error': error}), flush=True)


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
