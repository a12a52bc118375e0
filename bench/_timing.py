"""Shared timing helpers: one BLAS thread, interleaved repeats, robust summaries.

Import this module before NumPy is imported anywhere (``bench/__main__`` and
every benchmark do it first), so the BLAS thread limit takes effect.
"""
import os

for _var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import gc  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402


def measure(fn, repeat=7):
    """Run ``fn()`` ``repeat`` times (after one warm-up); return the list of seconds.

    ``fn`` may return a tuple of partial times (e.g. forward, backward) instead
    of None; then the list holds those tuples.
    """
    fn()
    results = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        results.append(out if out is not None else t1 - t0)
    return results


def summary(samples):
    """(min, median) of a list of floats."""
    return min(samples), statistics.median(samples)


def interleave(fns, repeat=7):
    """Measure several callables alternately (so load changes hit all alike).

    Returns ``{name: [samples...]}`` for ``fns = {name: fn}``.
    """
    for fn in fns.values():
        fn()
    out = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            r = fn()
            t1 = time.perf_counter()
            out[name].append(r if r is not None else t1 - t0)
    return out
