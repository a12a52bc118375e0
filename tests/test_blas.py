"""BLAS thread control: set_blas_threads as a call and as a context manager, the small-model policy.

The thread counts are read back through threadpoolctl itself (what OpenBLAS or
MKL report), not through dezero_kr, so a helper that changed nothing would fail.
"""
import configparser
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import threadpoolctl  # a dependency of dezero_kr (setup.cfg install_requires)

from _subproc import ROOT, python_env
from dezero_kr import blas, utils


def test_threadpoolctl_is_installed_by_the_plain_install():
    # README's first command is `pip install -e .`: the small-model policy (one BLAS thread,
    # no RuntimeWarning) must hold right after it, so threadpoolctl is not an extra.
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / 'setup.cfg', encoding='utf-8')
    required = [re.split(r'[<>=!~;\s\[]', line.strip(), maxsplit=1)[0].lower()
                for line in cfg['options']['install_requires'].splitlines()
                if line.strip() and not line.strip().startswith('#')]
    assert 'threadpoolctl' in required, required


def blas_counts():
    """The thread count of every loaded BLAS library, as the libraries report it."""
    counts = [i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas']
    assert counts, 'NumPy loaded no BLAS library that threadpoolctl can see'
    return counts


@pytest.fixture
def three_threads():
    """Start every test from a known count (3, not the machine's default) and restore afterwards."""
    with threadpoolctl.threadpool_limits(3, user_api='blas'):
        assert blas_counts() == [3] * len(blas_counts())
        yield


def test_utils_exports_the_helper():
    assert utils.set_blas_threads is blas.set_blas_threads


def test_context_manager_limits_inside_and_restores_after(three_threads):
    with blas.set_blas_threads(1):
        assert set(blas_counts()) == {1}
        assert blas.blas_threads() == 1
    assert set(blas_counts()) == {3}


def test_context_manager_restores_after_an_exception(three_threads):
    with pytest.raises(RuntimeError, match='boom'):
        with blas.set_blas_threads(2):
            assert set(blas_counts()) == {2}
            raise RuntimeError('boom')
    assert set(blas_counts()) == {3}


def test_plain_call_keeps_the_limit_until_restored(three_threads):
    limits = blas.set_blas_threads(1)
    try:
        np.ones((64, 64)) @ np.ones((64, 64))  # BLAS work does not reset the count
        assert set(blas_counts()) == {1}
    finally:
        limits.restore_original_limits()
    assert set(blas_counts()) == {3}


def test_numpy_integers_are_accepted(three_threads):
    with blas.set_blas_threads(np.int64(2)):
        assert set(blas_counts()) == {2}


@pytest.mark.parametrize('bad', [True, 1.5, '2', None])
def test_non_integer_counts_are_a_type_error(bad):
    with pytest.raises(TypeError, match=r'set_blas_threads: the thread count must be an integer'):
        blas.set_blas_threads(bad)


@pytest.mark.parametrize('bad', [0, -1])
def test_counts_below_one_are_a_value_error(bad):
    with pytest.raises(ValueError, match=rf'set_blas_threads: .* at least 1, got {bad}'):
        blas.set_blas_threads(bad)


def test_without_threadpoolctl_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'threadpoolctl', None)  # import threadpoolctl -> ImportError
    with pytest.raises(ImportError, match=r'pip install threadpoolctl'):
        blas.set_blas_threads(1)
    with pytest.raises(ImportError, match=r'pip install threadpoolctl'):
        blas.blas_threads()


@pytest.mark.parametrize('value, expected', [(None, 1), ('2', 2), (' 1 ', 1)])
def test_small_model_policy_sets_one_thread_or_the_environment_count(monkeypatch, three_threads,
                                                                     value, expected):
    if value is None:
        monkeypatch.delenv(blas.ENV_THREADS, raising=False)
    else:
        monkeypatch.setenv(blas.ENV_THREADS, value)
    with threadpoolctl.threadpool_limits(3, user_api='blas'):  # undo the policy's lasting limit
        assert blas.small_model_policy() == expected
        assert set(blas_counts()) == {expected}
    assert set(blas_counts()) == {3}


@pytest.mark.parametrize('value', ['0', 'default', 'DEFAULT'])
def test_small_model_policy_can_leave_blas_alone(monkeypatch, three_threads, value):
    monkeypatch.setenv(blas.ENV_THREADS, value)
    assert blas.small_model_policy() is None
    assert set(blas_counts()) == {3}


@pytest.mark.parametrize('value', ['-1', 'two', '1.5'])
def test_small_model_policy_rejects_a_bad_environment_value(monkeypatch, value):
    monkeypatch.setenv(blas.ENV_THREADS, value)
    with pytest.raises(ValueError, match=rf"DEZERO_KR_BLAS_THREADS must be .* got '{value}'"):
        blas.small_model_policy()


def test_small_model_policy_warns_and_goes_on_without_threadpoolctl(monkeypatch, three_threads):
    monkeypatch.delenv(blas.ENV_THREADS, raising=False)
    monkeypatch.setitem(sys.modules, 'threadpoolctl', None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        assert blas.small_model_policy() is None
    assert [w.category for w in caught] == [RuntimeWarning]
    assert 'pip install threadpoolctl' in str(caught[0].message)
    monkeypatch.undo()
    assert set(blas_counts()) == {3}


@pytest.mark.parametrize('folder, module', [('examples', '_util'), ('steps', '_common')])
@pytest.mark.parametrize('setting, expected', [(None, '1'), ('3', '3')])
def test_example_and_step_helpers_apply_the_policy_on_import(folder, module, setting, expected):
    code = (f'import sys; sys.path.insert(0, {str(ROOT / folder)!r}); import {module}; '
            'from dezero_kr.blas import blas_threads; print(blas_threads())')
    env = python_env()
    env.pop(blas.ENV_THREADS, None)
    if setting is not None:
        env[blas.ENV_THREADS] = setting
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == expected
