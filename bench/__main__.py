"""``python -m bench`` lists the benchmarks; ``python -m bench NAME [args]`` runs one."""
import importlib
import os
import pkgutil
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
    if os.environ.get('BENCH_MALLOC') != 'default':
        bench._timing.steady_heap()  # glibc's trim and mmap thresholds fixed: see its docstring
    module = importlib.import_module(f'bench.{name}')
    return module.main(rest) or 0


def bench_path():
    import bench
    return bench.__path__


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
