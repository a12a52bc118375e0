"""Per-op framework overhead of the core, against a hand-written NumPy floor.

Workload 1 (issue 2): 10,000 mixed add/mul/sin ops on shape-(2, 2) float64
arrays (``h = h + w``, ``h = h * w``, ``h = sin(h)`` in turn, ``w`` a shared
leaf), then backward.  The NumPy floor does the same forward math, keeps the
inputs it needs, and runs the hand-derived backward (including the
accumulation into ``w``'s gradient).

Workload 2: a chain of 100,000 ``sin`` nodes on a 0-d float64 array: forward +
backward time, and the memory the recorded graph holds per node for chains of
100,000 and 1,000,000 nodes (tracemalloc, everything the forward pass allocated
and kept: Variable, Function, links, generation number and the node's 0-d
output array).

DeZero is measured too when it can be imported (set ``DEZERO_PATH`` to a
folder that holds the ``dezero`` package); it is never required.

    python -m bench core_ops [--ops 10000] [--chain 100000] [--repeat 7] [--memory 100000,1000000]
"""
import bench._timing as timing  # noqa: I001  (first: one BLAS thread)

import argparse
import gc
import importlib
import os
import sys
import time
import tracemalloc

import numpy as np


def numpy_floor(n_ops):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 2))
    w = rng.uniform(0.5, 1.0, (2, 2))

    def run():
        t0 = time.perf_counter()
        h, saved = x, []
        for i in range(n_ops):
            k = i % 3
            saved.append(h)
            if k == 0:
                h = h + w
            elif k == 1:
                h = h * w
            else:
                h = np.sin(h)
        t1 = time.perf_counter()
        g, gw = np.ones_like(h), np.zeros_like(w)
        for i in range(n_ops - 1, -1, -1):
            k = i % 3
            if k == 0:
                gw = gw + g
            elif k == 1:
                gw = gw + g * saved[i]
                g = g * w
            else:
                g = g * np.cos(saved[i])
        gx = g
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, gx, gw
    return run


def workload(x, w, sin, n_ops):
    """The mixed chain on Variables: h = h + w, h = h * w, h = sin(h), in turn."""
    h = x
    for i in range(n_ops):
        k = i % 3
        if k == 0:
            h = h + w
        elif k == 1:
            h = h * w
        else:
            h = sin(h)
    return h


def framework(lib, n_ops):
    """The same workload on a DeZero-like library (``lib`` has Variable and functions.sin)."""
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((2, 2))
    w0 = rng.uniform(0.5, 1.0, (2, 2))
    sin = lib.functions.sin

    def run():
        x, w = lib.Variable(x0.copy()), lib.Variable(w0.copy())
        t0 = time.perf_counter()
        h = workload(x, w, sin, n_ops)
        t1 = time.perf_counter()
        h.backward()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, x.grad.data, w.grad.data
    return run


def static_chain(n_ops):
    """Workload 1 as one ``dezero_kr.static_graph`` step (forward and backward), replayed:
    x and w are Parameters read fresh by every replay.  Returns ``run`` as ``framework``'s."""
    import dezero_kr
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((2, 2))
    w0 = rng.uniform(0.5, 1.0, (2, 2))
    x, w = dezero_kr.Parameter(x0.copy()), dezero_kr.Parameter(w0.copy())

    @dezero_kr.static_graph
    def step():
        x.cleargrad()
        w.cleargrad()
        workload(x, w, dezero_kr.functions.sin, n_ops).backward()

    def run():
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        return t1 - t0, 0.0, x.grad.data, w.grad.data
    step()  # the trace: not timed
    return run


def bytes_per_node(lib, n):
    """Memory the recorded graph of an n-node sin chain keeps, per node (tracemalloc)."""
    sin = lib.functions.sin
    x = lib.Variable(np.array(0.5))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    y = x
    for _ in range(n):
        y = sin(y)
    per_node = (tracemalloc.get_traced_memory()[0] - before) / n
    tracemalloc.stop()
    del y
    gc.collect()
    return per_node


def chain(lib, n):
    """Forward + backward time of an n-node sin chain (best of 3)."""
    sin = lib.functions.sin

    def run():
        t0 = time.perf_counter()
        y = lib.Variable(np.array(0.5))
        h = y
        for _ in range(n):
            h = sin(h)
        h.backward()
        return time.perf_counter() - t0
    return min(timing.measure(run, repeat=3))


def load_dezero():
    path = os.environ.get('DEZERO_PATH')
    if path:
        sys.path.insert(0, path)
    try:
        return importlib.import_module('dezero')
    except Exception:
        return None


def main(argv=()):
    parser = argparse.ArgumentParser(prog='python -m bench core_ops')
    parser.add_argument('--ops', type=int, default=10_000)
    parser.add_argument('--chain', type=int, default=100_000)
    parser.add_argument('--repeat', type=int, default=7)
    parser.add_argument('--memory', default='100000,1000000',
                        help='chain lengths for the bytes-per-node measurement (comma-separated)')
    args = parser.parse_args(argv)

    import dezero_kr
    libs = {'numpy floor': None, 'dezero_kr': dezero_kr}
    dezero = load_dezero()
    if dezero is not None:
        libs['dezero 0.0.13'] = dezero

    runs = {name: numpy_floor(args.ops) if lib is None else framework(lib, args.ops)
            for name, lib in libs.items()}
    runs['static_graph'] = static_chain(args.ops)
    samples = timing.interleave(runs, repeat=args.repeat)

    # The libraries must agree with the floor, or the timing means nothing.
    _, _, ref_gx, ref_gw = runs['numpy floor']()
    for name, run in runs.items():
        _, _, gx, gw = run()
        assert np.allclose(gx, ref_gx) and np.allclose(gw, ref_gw), f'{name} disagrees with NumPy'

    print(f'Workload 1: {args.ops:,} mixed add/mul/sin ops on (2, 2) float64, then backward; '
          f'best of {args.repeat} (median)')
    print(f'{"":16s} {"forward us/op":>20s} {"backward us/op":>20s} {"fwd ratio":>10s} {"bwd ratio":>10s}')
    floor_f = min(s[0] for s in samples['numpy floor'])
    floor_b = min(s[1] for s in samples['numpy floor'])
    for name, ss in samples.items():
        if name == 'static_graph':
            continue
        f_best, f_med = timing.summary([s[0] / args.ops * 1e6 for s in ss])
        b_best, b_med = timing.summary([s[1] / args.ops * 1e6 for s in ss])
        print(f'{name:16s} {f_best:9.2f} ({f_med:6.2f}) {b_best:12.2f} ({b_med:6.2f}) '
              f'{f_best / (floor_f / args.ops * 1e6):9.1f}x {b_best / (floor_b / args.ops * 1e6):9.1f}x')

    st_best, st_med = timing.summary([s[0] / args.ops * 1e6 for s in samples['static_graph']])
    eager_best = min(s[0] + s[1] for s in samples['dezero_kr']) / args.ops * 1e6
    print(f'{"static_graph":16s} forward + backward {st_best:6.2f} ({st_med:6.2f}) us/op: '
          f'{st_best / ((floor_f + floor_b) / args.ops * 1e6):.2f}x the floor\'s forward + backward per op '
          f'(a static chain, replayed); static / dezero_kr forward + backward = {st_best / eager_best:.2f}x')

    sizes = [int(n) for n in args.memory.split(',') if n]
    print(f'\nWorkload 2: chain of sin nodes on a 0-d float64 array: fwd+bwd time ({args.chain:,} nodes) '
          f'and bytes the graph keeps per node ({", ".join(f"{n:,}" for n in sizes)} nodes)')
    print(f'{"":16s} {"fwd+bwd s":>10s}' + ''.join(f' {f"B/node {n:,}":>16s}' for n in sizes))
    for name, lib in libs.items():
        if lib is None:
            continue
        seconds = chain(lib, args.chain)
        print(f'{name:16s} {seconds:10.3f}' + ''.join(f' {bytes_per_node(lib, n):16.0f}' for n in sizes))
    array_bytes = sys.getsizeof(np.array(0.5))
    print(f'(bytes/node includes the 0-d output array: {array_bytes} B as reported by sys.getsizeof)')


if __name__ == '__main__':
    main(sys.argv[1:])
