"""Does ``backward(create_graph=True)`` leak memory in a loop?  Measured, not assumed.

    python tools/grad_cycle_memory.py                 # 10,000 iterations per case
    python tools/grad_cycle_memory.py --iters 2000    # shorter (what tests/test_grad_cycle.py runs)

``y.backward(create_graph=True)`` stores in ``x.grad`` a gradient that has a
graph, and that graph holds ``x`` as an input: ``x -> x.grad -> graph -> x`` is
a reference cycle.  Reference counting alone never frees a cycle; Python's
cycle collector (``gc``) does.  Three loops, each run with the collector on
and off:

* ``newton``: the book's step-33 loop (one ``x``, ``x.cleargrad()`` before
  the second backward, as the tutorial teaches): the cycle is broken by the
  ``cleargrad`` right after it is made.
* ``fresh_x``: a new ``x`` every iteration whose ``x.grad`` keeps the graph of
  f'(x) when ``x`` is dropped: the cycle is left for the collector.
* ``autograd_grad``: ``dezero_kr.autograd.grad(y, x, create_graph=True)``,
  which returns the gradient and stores none, so there is no cycle at all.

For each loop and collector setting it prints the memory that Python's
allocator still holds after the loop (``tracemalloc``, before any explicit
``gc.collect()``), the peak during the loop, and the growth of the resident
set size (``/proc/self/statm``, Linux only; ``-`` elsewhere).  The last line
per case is machine-readable: ``RESULT case gc=on|off held_kib=N``.
"""
import argparse
import gc
import os
import tracemalloc

import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable, autograd


def f(x):
    """The function of the book's step 33: f(x) = x^4 - 2x^2 (f'' = 12x^2 - 4)."""
    return x ** 4 - 2 * x ** 2


def newton(iters):
    """The tutorial's loop: x <- x - f'(x) / f''(x), one x, cleargrad between the passes."""
    x = Variable(np.array(2.0))
    for _ in range(iters):
        x.cleargrad()
        y = f(x)
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()          # breaks x -> x.grad -> graph -> x before it outlives the step
        gx.backward()
        x.data = x.data - gx.data / x.grad.data
        x.data = np.array(2.0)  # restart, so every iteration does the same work


def fresh_x(iters):
    """A new x per iteration, dropped with the graph of f'(x) still in x.grad: a cycle each time."""
    for i in range(iters):
        x = Variable(np.array(1.0 + i % 7))
        F.tanh(f(x)).backward(create_graph=True)
        _ = x.grad.data  # read the value, keep the cycle


def autograd_grad(iters):
    """The same derivative through autograd.grad: nothing is stored in x.grad, no cycle."""
    for i in range(iters):
        x = Variable(np.array(1.0 + i % 7))
        gx, = autograd.grad(F.tanh(f(x)), x, create_graph=True)
        _ = gx.data


CASES = {'newton': newton, 'fresh_x': fresh_x, 'autograd_grad': autograd_grad}


def _rss_bytes():
    try:
        with open('/proc/self/statm') as fh:
            return int(fh.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        return None


def measure(loop, iters, collector_on):
    """(held bytes after the loop, peak bytes during it, RSS growth or None) for one loop."""
    gc.collect()
    was_on = gc.isenabled()
    (gc.enable if collector_on else gc.disable)()
    try:
        loop(10)  # warm-up: module-level caches are not a leak
        gc.collect()
        rss0 = _rss_bytes()
        tracemalloc.start()
        loop(iters)
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss1 = _rss_bytes()
    finally:
        (gc.enable if was_on else gc.disable)()
        gc.collect()
    return held, peak, (None if rss0 is None or rss1 is None else rss1 - rss0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--iters', type=int, default=10_000, help='iterations per loop (default 10000)')
    p.add_argument('--cases', nargs='+', choices=list(CASES), default=list(CASES))
    args = p.parse_args(argv)
    print(f'{args.iters} iterations per loop; memory still held after the loop (no gc.collect())')
    print(f'{"loop":<14} {"gc":<4} {"held KiB":>10} {"peak KiB":>10} {"RSS growth KiB":>15}')
    for name in args.cases:
        for on in (True, False):
            held, peak, rss = measure(CASES[name], args.iters, on)
            rss_text = '-' if rss is None else f'{rss // 1024:d}'
            print(f'{name:<14} {"on" if on else "off":<4} {held // 1024:>10d} {peak // 1024:>10d} '
                  f'{rss_text:>15}')
            print(f'RESULT {name} gc={"on" if on else "off"} held_kib={held // 1024}')


if __name__ == '__main__':
    main()
