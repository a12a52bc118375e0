"""Shared timing helpers: one BLAS thread, interleaved repeats, robust summaries.

Import this module before NumPy is imported anywhere (``bench/__main__`` and
every benchmark do it first), so the BLAS thread limit takes effect.
"""
import os

for _var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import gc  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
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


ALONE = 'alone:'  # the line a contender timed by itself prints: ``alone: NAME SECONDS``


def time_alone(name, step, iters, repeat):
    """Time ``step`` as the only contender of this process (after 5 warm-up calls) and print
    the ``alone:`` line that ``one_per_process`` reads: the median seconds per step."""
    for _ in range(5):
        step()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        samples.append((time.perf_counter() - t0) / iters)
    print(f'{ALONE} {name} {statistics.median(samples)!r}')


def one_per_process(bench, names, rounds, argv=()):
    """Each contender alone in a fresh ``python -m bench BENCH --alone NAME`` process, as a
    user's process holds one step (no other contender's arrays shape the heap), in
    ``rounds`` alternating rounds.  The children inherit ``BENCH_MALLOC`` (default heap if
    unset).  Returns ``{name: [seconds per step, one per process]}``."""
    env = dict(os.environ, BENCH_MALLOC=os.environ.get('BENCH_MALLOC', 'default'))
    if env['BENCH_MALLOC'] == 'both':
        env['BENCH_MALLOC'] = 'default'
    out = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            text = subprocess.run([sys.executable, '-m', 'bench', bench, '--alone', name, *argv],
                                  capture_output=True, text=True, check=True, env=env).stdout
            line = next(line for line in text.splitlines() if line.startswith(ALONE))
            out[name].append(float(line.split()[-1]))
    return out


def print_alone(results, reference):
    """The ``one_per_process`` medians, each as a ratio to ``reference``'s (paired by round)."""
    print(f'one contender per fresh process ({len(results[reference])} alternating rounds):')
    for name, seconds in results.items():
        line = f'  {name:14s} {statistics.median(seconds) * 1e3:7.2f} ms/step'
        if name != reference:
            ratio = statistics.median(a / b for a, b in zip(seconds, results[reference]))
            line += f'   {name} / {reference} = {ratio:.2f}x'
        print(line)
