"""How fast is graph export?  ``python -m bench.graph_export [--big] [--no-render]``

1. ``get_dot_graph`` on chains of 10k / 100k (and with ``--big`` 1M) nodes and
   on a fan-out graph (one input used by every function), against
   * the forward pass that built the graph (same run), and
   * a minimal hand-written exporter (set-based walk, ``id()`` node names,
     DeZero's line format, no options) - the floor for "walk and print".
2. Rendering the DOT text to SVG with each renderer found (``dot``,
   ``graphviz-pure``) for growing graphs: layout, not export, is what limits
   pictures of big graphs (hence ``max_depth=`` and ``collapse=``).
"""
import os

for _var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[_var] = '1'

import argparse  # noqa: E402
import gc  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from dezero_kr.core import Variable  # noqa: E402
from dezero_kr.functions_math import sin  # noqa: E402
from dezero_kr.graph import get_dot_graph  # noqa: E402


def chain(n_funcs):
    x = Variable(np.array(0.5), name='x')
    y = x
    for _ in range(n_funcs):
        y = sin(y)
    return y


def fan_out(n_funcs):
    """b = b * a + a repeated: ``a`` feeds every other function (DeZero repeats it per use)."""
    a = Variable(np.ones(3), name='a')
    b = a
    for _ in range(n_funcs // 2):
        b = b * a + a
    return b


def minimal_export(output):
    """The floor: walk with a seen-set, print DeZero-style lines with id() names."""
    lines = ['digraph g {']
    seen_v, seen_f = {id(output)}, set()
    lines.append(f'{id(output)} [label="{output.name or ""}", color=orange, style=filled]')
    todo = [output.creator] if output.creator is not None else []
    while todo:
        f = todo.pop()
        if id(f) in seen_f:
            continue
        seen_f.add(id(f))
        lines.append(f'{id(f)} [label="{type(f).__name__}", color=lightblue, style=filled, '
                     f'shape=box]')
        for x in f.inputs:
            if id(x) not in seen_v:
                seen_v.add(id(x))
                lines.append(f'{id(x)} [label="{x.name or ""}", color=orange, style=filled]')
                if x.creator is not None:
                    todo.append(x.creator)
            lines.append(f'{id(x)} -> {id(f)}')
        for r in f.outputs:
            lines.append(f'{id(f)} -> {id(r())}')
    lines.append('}')
    return '\n'.join(lines)


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def bench_export(sizes):
    print('== get_dot_graph (best of 3; seconds)')
    print(f'{"graph":>14} {"nodes":>9} {"forward":>8} {"minimal":>8} {"export":>8} '
          f'{"x min":>6} {"x fwd":>6} {"all opts":>9} {"collapse":>9}')
    for kind, build in (('chain', chain), ('fan-out', fan_out)):
        for n in sizes:
            forward, y = best_of(lambda: build(n), 1)
            t_min, _ = best_of(lambda: minimal_export(y), 3)
            t_exp, text = best_of(lambda: get_dot_graph(y), 3)
            t_all, _ = best_of(lambda: get_dot_graph(y, show_values=True, show_grads=True,
                                                     mark_nonfinite=True), 3)
            t_col, _ = best_of(lambda: get_dot_graph(y, collapse=True), 3)
            nodes = text.count(' [label=')
            print(f'{kind:>14} {nodes:>9,} {forward:>8.3f} {t_min:>8.3f} {t_exp:>8.3f} '
                  f'{t_exp / t_min:>6.2f} {t_exp / forward:>6.2f} {t_all:>9.3f} {t_col:>9.3f}')
            del y, text
            gc.collect()


def bench_render(sizes, timeout):
    renderers = [(name, shutil.which(name)) for name in ('dot', 'graphviz-pure')]
    renderers = [(n, p) for n, p in renderers if p]
    if not renderers:
        print('== render: no renderer installed')
        return
    print(f'== render DOT -> SVG (seconds, one run, timeout {timeout} s)')
    print(f'{"graph":>8} {"nodes":>9} ' + ' '.join(f'{n:>14}' for n, _ in renderers))
    with tempfile.TemporaryDirectory() as tmp:
        for kind, n in [(k, n) for k in ('chain', 'fan-out') for n in sizes]:
            y = (chain if kind == 'chain' else fan_out)(n)
            path = os.path.join(tmp, 'g.dot')
            text = get_dot_graph(y)
            with open(path, 'w', encoding='utf-8') as f:
                f.write(text)
            row = []
            for _, exe in renderers:
                start = time.perf_counter()
                try:
                    subprocess.run([exe, '-Tsvg', path], capture_output=True, check=True,
                                   timeout=timeout)
                    row.append(f'{time.perf_counter() - start:>14.2f}')
                except subprocess.TimeoutExpired:
                    row.append(f'{">" + str(timeout):>14}')
            print(f'{kind:>8} {text.count(" [label="):>9,} ' + ' '.join(row))


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench graph_export',
                                     description='graph export benchmark')
    parser.add_argument('--big', action='store_true', help='also a 1,000,000-node chain')
    parser.add_argument('--no-render', action='store_true', help='skip the renderer timings')
    parser.add_argument('--timeout', type=float, default=60.0)
    args = parser.parse_args(argv)
    sizes = [5_000, 50_000] + ([500_000] if args.big else [])
    bench_export(sizes)
    if not args.no_render:
        bench_render([50, 500, 2_000], args.timeout)  # functions: 101, 1,001, 4,001 nodes


if __name__ == '__main__':
    main()
