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

_TRIM_THRESHOLD, _MMAP_THRESHOLD = -1, -3  # mallopt(3) parameter numbers (glibc's malloc.h)


def steady_heap():
    """Fix glibc malloc's thresholds for this process, so no contender pays page faults by chance.

    By default glibc returns the top of its heap to the system whenever more
    than a moving threshold lies free there, and serves large arrays from fresh
    ``mmap`` pages; whether a step's arrays come back as warm memory or as new
    pages then depends on which objects happen to lie at the top of the heap.
    ``bench gpt`` measured it: the same floor took 10.1 ms with one live plan
    of ``static_graph`` in the process and 12.9–16.9 ms without.  Fixed
    thresholds (trim above 1 GiB, mmap from 32 MiB) give every contender warm
    memory.  Returns True if set (False for a C library without ``mallopt``).
    ``python -m bench`` calls it before a run unless ``BENCH_MALLOC=default``.
    """
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_TRIM_THRESHOLD, 1 << 30)) and bool(mallopt(_MMAP_THRESHOLD, 32 << 20))


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
