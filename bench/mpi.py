"""Data-parallel training over MPI (dezero_kr.distributed): throughput and all-reduce cost.

    python -m bench mpi [--ranks 1,2] [--steps 60] [--repeat 30] [--rounds 3]

For each model and rank count it starts ``mpiexec -n R python -m bench.mpi
--worker MODEL`` (one BLAS thread per rank) and reports:

* samples/s of training (every rank takes its own batch of the same size per
  step, so one step processes ``R x batch`` samples) and the speed-up over 1 rank;
* the all-reduce time inside those steps (``DataParallel.last_reduce_seconds``:
  packing, ``MPI_Allreduce``, unpacking, plus any wait for a slower rank) and
  its share of the step;
* ``DataParallel.allreduce_grads()`` against the MPI floor, a bare
  ``Allreduce`` of a buffer of the same bytes, each after a ``Barrier`` so
  neither includes waiting for the other rank (median of ``--repeat``,
  interleaved).

Models: the Digits MLP of ``examples/digits_mlp_mpi.py`` (64-256-256-10,
batch 64 per rank, float32) and a small CNN (conv 3x3 3->16 pad 1, ReLU,
max-pool 2, linear 4096->10 on (32, 3, 32, 32) float32 per rank, as ``bench
cnn``), Adam.  Last, the same comparison for synthetic gradients of 64 KB, 1 MB
and 8 MB (``sweep_cases``), and the all-reduce inside a training loop whose one
weight is 1, 4 or 8 MB (``big_weight_loop``).  Needs the MPI extra (``pip install -e ".[mpi]"``).
With ``CHAINERMN_PYTHON`` set (a Python with ChainerMN, see ``bench/chainermn_ref.py``),
ChainerMN's CPU all-reduce of the same shapes is measured the same way, for reference.
"""
from bench import _timing  # first: one BLAS thread before NumPy loads

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import dezero_kr.distributed as dist  # noqa: E402
import dezero_kr.functions as F  # noqa: E402
import dezero_kr.layers as L  # noqa: E402
from dezero_kr.core import Parameter, Variable  # noqa: E402
from dezero_kr.datasets import Digits  # noqa: E402
from dezero_kr.models import Model  # noqa: E402
from dezero_kr.optimizers import SGD, Adam  # noqa: E402

MODELS = ('mlp', 'cnn')
RESULT_TAG = 'BENCH_MPI_RESULT '


def build(model_name, rank):
    """``(model, x, t)`` for one rank: its own data of the per-rank batch size."""

    np.random.seed(rank)  # weights differ until DataParallel broadcasts rank 0's
    if model_name == 'mlp':
        class DigitsMLP(Model):
            def __init__(self):
                super().__init__()
                self.l1 = L.Linear(256, in_size=64)
                self.l2 = L.Linear(256, in_size=256)
                self.l3 = L.Linear(10, in_size=256)

            def forward(self, x):
                return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))

        data = Digits(train=True)
        rows = np.arange(rank * 64, rank * 64 + 64) % len(data)
        return DigitsMLP(), data.data[rows], data.label[rows]

    class SmallCNN(Model):
        def __init__(self):
            super().__init__()
            self.conv = L.Conv2d(16, 3, pad=1, in_channels=3)
            self.fc = L.Linear(10, in_size=16 * 16 * 16)

        def forward(self, x):
            h = F.pooling(F.relu(self.conv(x)), 2, 2)
            return self.fc(F.reshape(h, (len(x), -1)))

    rng = np.random.default_rng(rank)
    x = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    t = rng.integers(0, 10, 32)
    return SmallCNN(), x, t


def worker(model_name, steps, repeat):
    """Run under mpiexec; rank 0 prints one tagged JSON line."""

    comm = dist.init()
    model, x, t = build(model_name, comm.rank)
    opt = dist.DataParallel(Adam().setup(model), comm)

    def step():
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()
        return opt.last_reduce_seconds

    for _ in range(5):
        step()
    comm.barrier()
    start = time.perf_counter()
    reduce_seconds = sum(step() for _ in range(steps))
    comm.barrier()
    elapsed = time.perf_counter() - start

    params = list(model.params())
    nbytes = sum(p.data.nbytes for p in params)
    result = {'model': model_name, 'ranks': comm.size, 'batch': len(x), 'steps': steps,
              'samples_per_s': comm.size * len(x) * steps / elapsed,
              'step_ms': 1e3 * elapsed / steps, 'reduce_in_step_ms': 1e3 * reduce_seconds / steps,
              'grad_bytes': nbytes}
    if comm.size > 1:
        result.update(compare_with_raw(comm, opt, params, [p.grad.data.copy() for p in params],
                                       repeat))
    if comm.is_root:
        print(RESULT_TAG + json.dumps(result), flush=True)


def compare_with_raw(comm, opt, params, grads, repeat):
    """``opt.allreduce_grads`` on fresh copies of ``grads`` against a bare ``Allreduce`` of a
    float32 buffer of the same bytes (gradients plus one flag per parameter), and against that
    ``Allreduce`` followed by one in-place scale by 1/size (the least a *mean* can cost: MPI has
    no averaging operation), each after a ``Barrier``; medians in ms and of the paired ratios."""
    from mpi4py import MPI

    rng = np.random.default_rng(comm.rank)
    raw = rng.random(sum(g.nbytes for g in grads) // 4 + len(grads), dtype=np.float32)
    raw_mean = raw.copy()
    scale = np.float32(1 / comm.size)
    ours, floor, mean_floor = [], [], []
    for _ in range(repeat):
        for p, g in zip(params, grads):
            # fresh gradients each time, as after a backward pass (big ones are reduced in place)
            p.grad = Variable(g.copy())
        comm.barrier()
        t0 = time.perf_counter()
        opt.allreduce_grads(params)
        ours.append(time.perf_counter() - t0)
        comm.barrier()
        t0 = time.perf_counter()
        comm.mpi_comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM)
        floor.append(time.perf_counter() - t0)
        comm.barrier()
        t0 = time.perf_counter()
        comm.mpi_comm.Allreduce(MPI.IN_PLACE, raw_mean, op=MPI.SUM)
        np.multiply(raw_mean, scale, out=raw_mean)
        mean_floor.append(time.perf_counter() - t0)
    return {'allreduce_ms': 1e3 * statistics.median(ours), 'floor_ms': 1e3 * statistics.median(floor),
            'ratio': statistics.median([a / b for a, b in zip(ours, floor)]),
            'mean_floor_ms': 1e3 * statistics.median(mean_floor),
            'ratio_mean': statistics.median([a / b for a, b in zip(ours, mean_floor)])}


SWEEP_FLOATS = (16_384, 262_144, 2_097_152)  # 64 KB, 1 MB, 8 MB of float32 gradients


def sweep_cases():
    """``(label, sizes)``: for 64 KB, 1 MB and 8 MB of float32 gradients, four parameters of
    1/2, 1/4, 1/4 and 10 floats (several big messages when reduced in place), then for 1 MB and
    8 MB one weight and a 10-float bias (one big message)."""
    cases = [(f'{total * 4 // 1024} KB', (total // 2, total // 4, total // 4 - 10, 10))
             for total in SWEEP_FLOATS]
    cases += [(f'{total * 4 // 1024} KB, one weight', (total - 10, 10)) for total in SWEEP_FLOATS[1:]]
    return cases


def sweep(repeat):
    """allreduce_grads vs a raw Allreduce for larger synthetic gradients (``sweep_cases``)."""

    comm = dist.init()
    rows = []
    for label, sizes in sweep_cases():
        target = L.Layer()
        for i, size in enumerate(sizes):
            setattr(target, f'p{i}', Parameter(np.zeros(size, dtype=np.float32)))
        opt = dist.DataParallel(SGD().setup(target), comm)
        params = list(target.params())
        rng = np.random.default_rng(comm.rank)
        grads = [rng.random(size, dtype=np.float32) for size in sizes]
        rows.append(dict(label=label, **compare_with_raw(comm, opt, params, grads, repeat)))
    if comm.is_root:
        print(RESULT_TAG + json.dumps(rows), flush=True)


BIG_WEIGHTS = ((512, 512), (1024, 1024), (1024, 2048))  # 1 MB, 4 MB, 8 MB of float32


def big_weight_loop(steps):
    """Training steps of a Linear(n_in -> n_out) -> ReLU -> Linear(-> 10) MLP per ``BIG_WEIGHTS``
    (batch 8 per rank, SGD): the median ``last_reduce_seconds`` and step time, where every
    step's gradients are new arrays from backward (unlike the paired timing above)."""

    comm = dist.init()
    rows = []
    for n_in, n_out in BIG_WEIGHTS:
        np.random.seed(0)
        model = Model()
        model.l1 = L.Linear(n_out, in_size=n_in)
        model.l2 = L.Linear(10, in_size=n_out)
        opt = dist.DataParallel(SGD(lr=1e-3).setup(model), comm)
        rng = np.random.default_rng(comm.rank)
        x = rng.standard_normal((8, n_in)).astype(np.float32)
        t = rng.integers(0, 10, 8)
        reduce_s, step_s = [], []
        for _ in range(10 + steps):
            comm.barrier()
            start = time.perf_counter()
            loss = F.softmax_cross_entropy(model.l2(F.relu(model.l1(x))), t)
            model.cleargrads()
            loss.backward()
            opt.update()
            step_s.append(time.perf_counter() - start)
            reduce_s.append(opt.last_reduce_seconds)
        rows.append({'label': f'{n_in}x{n_out} ({n_in * n_out * 4 // 1024} KB)',
                     'reduce_ms': 1e3 * statistics.median(reduce_s[10:]),
                     'step_ms': 1e3 * statistics.median(step_s[10:])})
    if comm.is_root:
        print(RESULT_TAG + json.dumps(rows), flush=True)


def launch(model_name, ranks, steps, repeat):
    command = [sys.executable, '-m', 'bench.mpi', '--worker', model_name, '--steps', str(steps),
               '--repeat', str(repeat)]
    if ranks > 1:
        command = [dist.find_mpiexec(), '-n', str(ranks)] + command
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([root] + ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
    return _tagged_result(command, RESULT_TAG, cwd=root, env=env)


def _tagged_result(command, tag, **kwargs):
    """Run ``command`` (``subprocess.run`` keywords in ``kwargs``); the JSON after ``tag`` on its
    first line that starts with it, or a RuntimeError with the command's output."""
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
    for line in out.stdout.splitlines():
        if line.startswith(tag):
            return json.loads(line[len(tag):])
    raise RuntimeError(f'bench mpi: {" ".join(command)} failed (status {out.returncode}):\n'
                       f'{out.stdout}\n{out.stderr}')


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench mpi', description=__doc__.splitlines()[0])
    parser.add_argument('--ranks', default='1,2', help='comma-separated rank counts (default 1,2)')
    parser.add_argument('--steps', type=int, default=60, help='timed training steps per run')
    parser.add_argument('--repeat', type=int, default=30, help='all-reduce samples per run')
    parser.add_argument('--rounds', type=int, default=3, help='runs of every configuration')
    parser.add_argument('--worker', choices=MODELS + ('sweep', 'big'), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker == 'sweep':
        sweep(args.repeat)
        return 0
    if args.worker == 'big':
        big_weight_loop(args.steps)
        return 0
    if args.worker:
        worker(args.worker, args.steps, args.repeat)
        return 0
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        print('bench mpi needs mpi4py: pip install -e ".[mpi]"')
        return 2
    ranks = [int(r) for r in args.ranks.split(',')]
    print(f'MPI data parallel, Adam, float32, {os.cpu_count()} CPU cores, BLAS threads = '
          f'{os.environ["OPENBLAS_NUM_THREADS"]} per rank, {args.steps} steps per run, '
          f'{args.rounds} rounds (median, [min-max] over rounds)')
    runs = {(m, r): [] for m in MODELS for r in ranks}
    for _ in range(args.rounds):  # rounds alternate the configurations, so load drifts hit all
        for model_name in MODELS:
            for r in ranks:
                runs[model_name, r].append(launch(model_name, r, args.steps, args.repeat))
    for model_name in MODELS:
        base = runs[model_name, ranks[0]]
        for r in ranks:
            res = runs[model_name, r]
            speedup = [a['samples_per_s'] / b['samples_per_s'] for a, b in zip(res, base)]
            comm_share = [a['reduce_in_step_ms'] / a['step_ms'] for a in res]
            print(f'{model_name} {r} rank(s): {_spread([a["samples_per_s"] for a in res], "{:.0f}")} '
                  f'samples/s, x{_spread(speedup, "{:.2f}")} vs {ranks[0]} rank(s), step '
                  f'{_spread([a["step_ms"] for a in res], "{:.2f}")} ms, all-reduce in step '
                  f'{_spread([a["reduce_in_step_ms"] for a in res], "{:.3f}")} ms = '
                  f'{_spread([100 * c for c in comm_share], "{:.1f}")} % of the step, '
                  f'gradients {res[0]["grad_bytes"] / 1024:.0f} KB')
            if 'ratio' in res[0]:
                print(f'    allreduce_grads {_spread([a["allreduce_ms"] for a in res], "{:.3f}")} ms '
                      f'vs raw Allreduce {_spread([a["floor_ms"] for a in res], "{:.3f}")} ms: '
                      f'x{_spread([a["ratio"] for a in res], "{:.2f}")}; vs raw Allreduce + scale '
                      f'{_spread([a["mean_floor_ms"] for a in res], "{:.3f}")} ms: '
                      f'x{_spread([a["ratio_mean"] for a in res], "{:.2f}")}')
    if max(ranks) > 1 and os.environ.get('CHAINERMN_PYTHON'):
        _chainermn_reference(os.environ['CHAINERMN_PYTHON'], max(ranks), args.rounds, args.repeat)
    if max(ranks) > 1:
        print(f'larger gradients, {max(ranks)} ranks: allreduce_grads vs raw Allreduce '
              f'(median of {args.repeat})')
        for row in launch('sweep', max(ranks), args.steps, args.repeat):
            print(f'    {row["label"]:>20}: {row["allreduce_ms"]:.3f} ms vs {row["floor_ms"]:.3f} ms: '
                  f'x{row["ratio"]:.2f}; vs + scale {row["mean_floor_ms"]:.3f} ms: x{row["ratio_mean"]:.2f}')
        print(f'training loop, {max(ranks)} ranks, one big weight: median all-reduce and step')
        for row in launch('big', max(ranks), args.steps, args.repeat):
            print(f'    {row["label"]:>20}: all-reduce {row["reduce_ms"]:.3f} ms, step '
                  f'{row["step_ms"]:.3f} ms')
    return 0


def _chainermn_reference(python, ranks, rounds, repeat):
    """ChainerMN's ``multi_node_mean_grad`` of the same shapes vs raw ``Allreduce``, run by
    ``python`` (a Python with chainer, mpi4py and MPI: see ``bench/chainermn_ref.py``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    mpiexec = os.path.join(os.path.dirname(python), 'mpiexec')
    if not os.path.exists(mpiexec):
        mpiexec = dist.find_mpiexec()
    command = [mpiexec, '-n', str(ranks), python, os.path.join(here, 'chainermn_ref.py')]
    for model_name in MODELS:
        res = [_tagged_result(command + [model_name, str(repeat)], 'BENCH_CHAINERMN_RESULT ')
               for _ in range(rounds)]
        print(f'{model_name}, ChainerMN (naive communicator, {ranks} ranks) multi_node_mean_grad '
              f'{_spread([a["chainermn_ms"] for a in res], "{:.3f}")} ms vs raw Allreduce '
              f'{_spread([a["floor_ms"] for a in res], "{:.3f}")} ms: x{_spread([a["ratio"] for a in res], "{:.2f}")} '
              f'(largest error vs the mean {max(a["max_error"] for a in res):.1e})')


def _spread(values, fmt):
    """'median [min-max]' of a list of numbers."""
    med = statistics.median(values)
    return f'{fmt.format(med)} [{fmt.format(min(values))}-{fmt.format(max(values))}]'


if __name__ == '__main__':
    sys.exit(main())
