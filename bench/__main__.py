"""``python -m bench`` lists the benchmarks; ``python -m bench NAME [args]`` runs one."""
import importlib
import os
import pkgutil
import subprocess
import sys

import bench._timing  # noqa: F401  (one BLAS thread, before NumPy loads)


def main(argv):
    names = sorted(m.name for m in pkgutil.iter_modules(bench_path()) if not m.name.startswith('_'))
    if not argv or argv[0] in ('-h', '--help'):
        print('usage: python -m bench NAME [args]\nbenchmarks: ' + ', '.join(names))
        return 0
    name, rest = argv[0], argv[1:]
    if name not in names:
        print(f'unknown benchmark {name!r}; choose from: {", ".join(names)}')
        return 2
    mode = os.environ.get('BENCH_MALLOC', 'both')
    if mode not in MODES:
        print(f'BENCH_MALLOC must be one of {", ".join(MODES)} (unset: both), not {mode!r}')
        return 2
    if mode == 'steady':
        bench._timing.steady_heap()  # glibc's trim and mmap thresholds fixed: see its docstring
    if mode != 'both':
        return importlib.import_module(f'bench.{name}').main(rest) or 0
    # Both: first this fresh process as a user's (glibc's defaults), then a child with steady_heap().
    print(f'== {MODES["default"]} ==', flush=True)
    rc = importlib.import_module(f'bench.{name}').main(rest) or 0
    print(f'\n== {MODES["steady"]} ==', flush=True)
    child = subprocess.run([sys.executable, '-m', 'bench', name, *rest],
                           env=dict(os.environ, BENCH_MALLOC='steady'))
    return rc or child.returncode


MODES = {'default': "glibc malloc's defaults: what a user's process gets (BENCH_MALLOC=default)",
         'steady': 'steady_heap(): glibc thresholds fixed (BENCH_MALLOC=steady)',
         'both': 'both, one after the other'}


def bench_path():
    import bench
    return bench.__path__


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
