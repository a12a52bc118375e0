"""The GPU examples, as a user runs them: ``--gpu`` gives the CPU run's numbers.

``examples/digits_cnn.py --gpu --plain`` and ``examples/gpt/train.py --fast --gpu
--dropout 0`` run in subprocesses (with the stand-in first on the path when the suite uses
it) beside the same command without ``--gpu``.  Without dropout nothing random is drawn on
the device, so every printed number but the timings must agree (exactly on the stand-in).
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _device import STANDIN

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r'[-+]?\d+\.\d+|\d+')
TIMING = re.compile(r'\d+(\.\d+)?s\b|시간 \(time\).*|total time.*')


def _run(args, gpu, tmp_path):
    env = dict(os.environ)
    paths = [str(ROOT)] + ([str(ROOT / 'tests' / 'cupy_standin')] if gpu and STANDIN else [])
    env['PYTHONPATH'] = os.pathsep.join(paths[::-1])
    proc = subprocess.run([sys.executable, *args] + (['--gpu'] if gpu else []), cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [TIMING.sub('', line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize('args', [
    [str(ROOT / 'examples' / 'digits_cnn.py'), '--plain', '--epochs', '2', '--no-progress'],
    [str(ROOT / 'examples' / 'gpt' / 'train.py'), '--fast', '--dropout', '0'],
], ids=['digits_cnn', 'gpt'])
def test_example_on_the_device_prints_the_cpu_numbers(args, tmp_path):
    cpu = _run(args, False, tmp_path)
    gpu = _run(args, True, tmp_path)
    assert len(cpu) == len(gpu)
    for c, g in zip(cpu, gpu):
        if STANDIN:
            assert c == g
        else:  # real kernels round differently: the same words, numbers within 1e-3
            assert NUMBER.sub('#', c) == NUMBER.sub('#', g)
            for a, b in zip(NUMBER.findall(c), NUMBER.findall(g)):
                assert float(a) == pytest.approx(float(b), rel=1e-3, abs=1e-3), (c, g)
