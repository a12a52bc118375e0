"""The examples' quoted results under each OpenBLAS kernel: the table of docs/examples.md.

    python tools/blas_kernels.py                       # every x86-64 (arm64) kernel here
    python tools/blas_kernels.py Haswell SkylakeX      # only these

float32 training sums in the order of the BLAS kernel (its blocking and its
vector width), so a result quoted to four digits can move by one test image
from one kernel to another.  This script runs each example whose result
docs/examples.md quotes, with the page's command, once under every kernel
named (``OPENBLAS_CORETYPE``), and prints the table the page shows in
"커널에 따라 달라지는 숫자": one row per run, one column per kernel, the
value as the script prints it.  Each run also reports the kernel that really
ran (threadpoolctl's ``architecture``), and a kernel that OpenBLAS replaced by
another (``Zen`` runs ``Haswell``'s code in NumPy's OpenBLAS) is printed as a
note and measured once, under the kernel that ran.

The run list and the parsing are what tests/test_doc_numbers.py uses
(``RUNS``, ``run_example``), so the table and the tests read the same numbers.
"""
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / 'examples'
RESULT = re.compile(r'^결과 \(result\): (\w+) = (\S+)$', re.MULTILINE)

# Every x86-64 kernel name OpenBLAS's dynamic build accepts that has kernels of
# its own in NumPy's OpenBLAS (others fall back to one of these: Zen to
# Haswell, Cooperlake and SapphireRapids to SkylakeX, Core2 to Prescott's).
X86_KERNELS = ('Prescott', 'Nehalem', 'Sandybridge', 'Haswell', 'Zen', 'SkylakeX')
# arm64: never measured for docs/examples.md (no such machine here); a first guess.
ARM64_KERNELS = ('ARMV8', 'CORTEXA57', 'NEOVERSEN1')

# (row label of the page's table, script, arguments, MPI ranks, metric)
RUNS = [
    ('spiral_mlp.py', 'spiral_mlp.py', (), 1, 'test_accuracy'),
    *[(f'digits_mlp.py --seed {seed}', 'digits_mlp.py', ('--seed', str(seed)), 1, 'test_accuracy')
      for seed in range(6)],
    ('digits_mlp.py --plain', 'digits_mlp.py', ('--plain',), 1, 'test_accuracy'),
    ('digits_cnn.py', 'digits_cnn.py', (), 1, 'test_accuracy'),
    ('sine_rnn.py', 'sine_rnn.py', (), 1, 'test_mse'),
    ('sine_rnn.py --cell lstm', 'sine_rnn.py', ('--cell', 'lstm'), 1, 'test_mse'),
    ('digits_mlp_mpi.py', 'digits_mlp_mpi.py', (), 1, 'test_accuracy'),
    ('mpiexec -n 2 digits_mlp_mpi.py', 'digits_mlp_mpi.py', (), 2, 'test_accuracy'),
]

KERNEL_PROBE = ('import numpy, threadpoolctl; '
                'print(*[i["architecture"] for i in threadpoolctl.threadpool_info() '
                'if i["user_api"] == "blas"])')


def environment(kernel=None, base=None):
    """``base`` (default ``os.environ``) with ROOT first on PYTHONPATH and, if given, the kernel."""
    env = dict(os.environ if base is None else base)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + ([env['PYTHONPATH']]
                                                        if env.get('PYTHONPATH') else []))
    env.update(PYTHONIOENCODING='utf-8', MPLBACKEND='Agg')
    if kernel is not None:
        env['OPENBLAS_CORETYPE'] = kernel
    return env


def kernel_that_runs(env):
    """The BLAS architecture a Python started with ``env`` reports (threadpoolctl): 'Haswell'."""
    proc = subprocess.run([sys.executable, '-c', KERNEL_PROBE], env=env, capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f'kernel probe failed: {proc.stderr[-2000:]}')
    return proc.stdout.strip()


def run_example(script, args=(), ranks=1, *, cwd, env):
    """stdout of ``examples/<script> --no-progress <args>`` (``mpiexec -n ranks`` when > 1)."""
    command = [sys.executable, str(EXAMPLES / script), '--no-progress', *args]
    if ranks > 1:
        from dezero_kr import distributed
        command = [distributed.find_mpiexec(), '-n', str(ranks)] + command
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, encoding='utf-8',
                          timeout=600, env=env)
    if proc.returncode != 0:
        raise AssertionError(f'{script} {args}: {proc.stderr[-3000:]}')
    return proc.stdout


def result(stdout):
    """{metric: value as printed} from the ``결과 (result):`` lines."""
    return dict(RESULT.findall(stdout))


def measure(kernels):
    """{row label: {architecture: value}} and the notes on kernels that ran another's code."""
    table, notes, done = {}, [], set()
    for kernel in kernels:
        env = environment(kernel)
        ran = kernel_that_runs(env)
        if ran.lower() != kernel.lower():
            notes.append(f'OPENBLAS_CORETYPE={kernel} runs {ran}')
        if ran in done:
            continue
        done.add(ran)
        with tempfile.TemporaryDirectory() as cwd:
            for label, script, args, ranks, metric in RUNS:
                value = result(run_example(script, args, ranks, cwd=cwd, env=env))[metric]
                table.setdefault(label, {})[ran] = value
                print(f'# {ran}: {label} {value}', file=sys.stderr, flush=True)
    return table, notes


def markdown(table):
    kernels = list(next(iter(table.values())))
    lines = ['| 실행 | ' + ' | '.join(kernels) + ' |', '|---|' + '---|' * len(kernels)]
    lines += [f'| `{label}` | ' + ' | '.join(row[k] for k in kernels) + ' |'
              for label, row in table.items()]
    return '\n'.join(lines)


def main(argv):
    arm = platform.machine().lower() in ('aarch64', 'arm64')
    kernels = argv or (ARM64_KERNELS if arm else X86_KERNELS)
    if os.environ.get('OPENBLAS_CORETYPE'):
        sys.exit('OPENBLAS_CORETYPE is set in this environment; unset it to measure other kernels')
    table, notes = measure(kernels)
    print(markdown(table))
    for note in notes:
        print(note)


if __name__ == '__main__':
    main(sys.argv[1:])
