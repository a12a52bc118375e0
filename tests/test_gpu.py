"""Runs tests/gpu_suite (dezero_kr's device paths) in a process of its own.

* ``test_gpu_suite_on_the_cupy_standin``: every CI run, on the strict NumPy-backed CuPy
  stand-in in ``tests/cupy_standin`` (no GPU needed, never skipped);
* ``test_gpu_suite_on_real_cupy`` (marker ``gpu``): the same suite against real CuPy; runs
  where CuPy sees a CUDA device, skips elsewhere.  On a GPU machine:
  ``python -m pytest -m gpu -q`` (see docs/gpu.md).
"""
import os
import subprocess
import sys

import pytest

from _subproc import ROOT, python_env

SUITE = ROOT / 'tests' / 'gpu_suite'


def _run_suite(backend):
    env = python_env(DEZERO_KR_GPU_SUITE=backend)
    env.pop('DEZERO_KR_FAST', None)
    proc = subprocess.run([sys.executable, '-m', 'pytest', str(SUITE), '-q', '-p',
                           'no:cacheprovider', '-x'], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, (f'tests/gpu_suite on {backend} failed:\n'
                                  f'{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}')
    assert ' passed' in proc.stdout and ' skipped' not in proc.stdout, proc.stdout[-2000:]
    return proc.stdout


def test_gpu_suite_on_the_cupy_standin():
    _run_suite('standin')


def _real_cupy_device():
    code = 'import cupy; print(cupy.cuda.runtime.getDeviceCount())'
    try:
        out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                             timeout=120, env=dict(os.environ))
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip().isdigit() and int(out.stdout) > 0


@pytest.mark.gpu
def test_gpu_suite_on_real_cupy():
    if not _real_cupy_device():
        pytest.skip('needs a GPU: CuPy with a CUDA device (pip install cupy-cuda12x)')
    _run_suite('cupy')
