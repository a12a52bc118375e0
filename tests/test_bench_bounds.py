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

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bench(*args, env=None):
    """``python -m bench ARGS`` with glibc's default heap (unless ``env`` says otherwise)."""
    env = dict(os.environ, **{'BENCH_MALLOC': 'default', **(env or {})})
    proc = subprocess.run([sys.executable, '-m', 'bench', *args], capture_output=True, text=True,
                          cwd=str(ROOT), timeout=600, env=env)
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


def test_a_plain_run_prints_the_default_heap_then_the_steady_one():
    """What a user's process gets comes first; the steady heap (a child process) second."""
    env = {k: v for k, v in os.environ.items() if k != 'BENCH_MALLOC'}
    proc = subprocess.run([sys.executable, '-m', 'bench', 'mlp', '--iters', '2', '--repeat', '2'],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    heads = [line for line in proc.stdout.splitlines() if line.startswith('== ')]
    assert heads == ["== glibc malloc's defaults: what a user's process gets (BENCH_MALLOC=default) ==",
                     '== steady_heap(): glibc thresholds fixed (BENCH_MALLOC=steady) ==']
    assert proc.stdout.count('static / NumPy floor') == 2


def test_an_unknown_heap_mode_is_refused_by_name():
    out = _bench_fails('mlp', env={'BENCH_MALLOC': 'fast'})
    assert "BENCH_MALLOC must be one of default, steady, both (unset: both), not 'fast'" in out


def _bench_fails(*args, env):
    proc = subprocess.run([sys.executable, '-m', 'bench', *args], capture_output=True, text=True,
                          cwd=str(ROOT), timeout=600, env=dict(os.environ, **env))
    assert proc.returncode == 2
    return proc.stdout


@pytest.mark.parametrize('bench', ['mlp', 'cnn'])
def test_each_contender_is_also_timed_alone_in_its_own_process(bench):
    """A user's process holds one step: the per-process section times each contender in a
    fresh child (two rounds here) and gives its ratio to eager's, computed from those times."""
    out = _bench(bench, '--iters', '1', '--repeat', '2', '--processes', '2')
    section = out[out.index('one contender per fresh process (2 alternating rounds):'):].splitlines()[1:]
    rows = {line.split()[0]: line for line in section if 'ms/step' in line}
    assert {'dezero_kr', 'static_graph'} <= set(rows)
    eager = float(re.search(r'(\d+\.\d+) ms/step', rows['dezero_kr']).group(1))
    static = float(re.search(r'(\d+\.\d+) ms/step', rows['static_graph']).group(1))
    assert eager > 0 and static > 0
    assert 0.05 < _ratio(rows['static_graph'], 'static_graph / dezero_kr') < 20


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
    # the kernels alone, and what the 0.5x target leaves beside them, come from the same run
    kernels = float(re.search(r'kernels alone .* (\d+\.\d+)x the eager loop', out).group(1))
    left, spent = (float(v) for v in re.search(
        r'the target leaves (-?\d+\.\d+)x the eager loop .* spends (-?\d+\.\d+)x', out).groups())
    assert kernels > 0 and abs(left - (0.5 - kernels)) < 0.0015
    assert abs(spent - (_ratio(out, 'static / eager loop') - kernels)) < 0.0015
