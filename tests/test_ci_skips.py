"""Under CI only GPU tests may skip: conftest.py turns every other skip into a failure.

The rule is checked on a throw-away test folder that uses this conftest.py, run
in a subprocess with and without ``CI`` set.
"""
import re
import shutil
import subprocess
import sys

from _subproc import ROOT, python_env

TESTS = '''
import pytest

def test_passes():
    pass

def test_tool_missing():
    pytest.skip('frobnicate is not installed (pip install frobnicate)')

@pytest.mark.skipif(True, reason='needs CuPy and a GPU')
def test_needs_gpu():
    pass

@pytest.mark.xfail(reason='a known bug', strict=True)
def test_known_bug():
    assert False
'''
MODULE_SKIP = '''
import pytest
pytest.importorskip('no_such_module_dezero_kr', reason='no_such_module_dezero_kr is not installed')

def test_never_collected():
    pass
'''


def run_folder(tmp_path, ci, module_skip=True):
    shutil.copy(ROOT / 'tests' / 'conftest.py', tmp_path / 'conftest.py')
    (tmp_path / 'test_a.py').write_text(TESTS)
    if module_skip:
        (tmp_path / 'test_b.py').write_text(MODULE_SKIP)
    env = python_env()
    env.pop('CI', None)
    if ci is not None:
        env['CI'] = ci
    out = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-rfEs', '-p', 'no:cacheprovider',
                          str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    return out.returncode, out.stdout


def counts(summary):
    last = summary.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r'(\d+) (passed|failed|skipped|xfailed|errors?)',
                                                   last)}


def test_without_ci_a_missing_tool_skips(tmp_path):
    code, out = run_folder(tmp_path, ci=None)
    assert code == 0, out
    assert counts(out) == {'passed': 1, 'skipped': 3, 'xfailed': 1}, out


def test_with_ci_a_missing_tool_fails_and_only_gpu_tests_skip(tmp_path):
    code, out = run_folder(tmp_path, ci='true', module_skip=False)
    assert code == 1, out
    assert counts(out) == {'passed': 1, 'failed': 1, 'skipped': 1, 'xfailed': 1}, out
    assert re.search(r'FAILED test_a.py::test_tool_missing - skipped with CI set '
                     r'\(only GPU tests may skip in CI\): frobnicate is not installed', out), out


def test_with_ci_a_module_level_importorskip_is_a_collection_error(tmp_path):
    code, out = run_folder(tmp_path, ci='1')
    assert code == 2, out  # pytest stops on collection errors: loud, as a broken setup should be
    assert re.search(r'ERROR test_b.py - skipped with CI set .*no_such_module_dezero_kr is not '
                     r'installed', out), out


def test_ci_false_or_zero_counts_as_unset(tmp_path):
    code, out = run_folder(tmp_path, ci='0')
    assert code == 0 and counts(out)['skipped'] == 3, out
