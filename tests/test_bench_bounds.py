"""The benchmarks' bound lines and heap control (bench/README.md, "static_graph, third pass").

These run the benchmarks with tiny settings: each checks its own numbers before
it times anything (``static_graph`` bit for bit against eager, the floor against
dezero_kr), so a run that exits 0 has checked them; the tests add what the new
lines claim about themselves.
"""
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench(*args, env=None):
    proc = subprocess.run([sys.executable, '-m', 'bench', *args], capture_output=True, text=True,
                          cwd=str(ROOT), timeout=600, env=dict(os.environ, **(env or {})))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _ratio(text, prefix):
    line = next(line for line in text.splitlines() if prefix in line)
    return float(re.search(r'= (\d+\.\d+)x', line).group(1))


def test_steady_heap_sets_glibc_thresholds():
    """On glibc (CI's Debian) both ``mallopt`` calls succeed; elsewhere it says it did nothing."""
    code = 'from bench import _timing; print(_timing.steady_heap())'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=str(ROOT),
                         timeout=60, check=True).stdout.strip()
    assert out == str(platform.libc_ver()[0] == 'glibc')


def test_mlp_prints_the_products_and_update_bound():
    out = _bench('mlp', '--iters', '2', '--repeat', '2')
    bound = _ratio(out, 'the five BLAS products and the update alone')
    assert 0.2 < bound < 1.5  # a ratio of two timings of the same run, not a constant
    assert 'static / NumPy floor' in out


def test_gpt_prints_the_numpy_work_alone_and_the_heap_states():
    out = _bench('gpt', '--steps', '2', '--repeat', '1')
    assert 0.2 < _ratio(out, 'the NumPy work alone') < 3
    heap = _bench('gpt', '--heap', '--heap-rounds', '1', '--heap-repeat', '1')
    rows = [line for line in heap.splitlines() if 'dezero_kr / floor' in line]
    assert len(rows) == 4  # default, default + a plan, steady_heap(), the environment variables
    for row in rows:
        floor, eager = (float(v) for v in re.findall(r'(?:floor|dezero_kr) +(\d+\.\d+)', row))
        assert floor > 0 and eager > 0
        assert abs(eager / floor - _ratio(row, 'dezero_kr / floor')) < 0.01


def test_microgpt_prints_the_compile_cost():
    out = _bench('microgpt', '--steps', '2', '--repeat', '2', '--train-steps', '0')
    line = next(line for line in out.splitlines() if 'compiling the generated source' in line)
    lines, ms = re.search(r'\((\d+) lines\) alone: (\d+\.\d+) ms', line).groups()
    assert int(lines) > 20 and float(ms) > 0


def test_tinyadam_checks_its_numbers_and_prints_the_static_ratio():
    out = _bench('tinyadam', '--iters', '2', '--repeat', '2')
    assert 0.05 < _ratio(out, 'static / eager loop') < 3  # measured in the run, not a constant
    loop, fused = (float(v) for v in re.search(r'loop (\d+\.\d+) us, fused (\d+\.\d+) us', out).groups())
    assert loop > 0 and fused > 0
