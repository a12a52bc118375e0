"""Shared fixtures: no test reaches the internet (loopback servers only)."""
import os
import socket

import pytest

# tests/gpu_suite runs in a process of its own (tests/test_gpu.py starts it): dezero_kr.cuda
# reads `cupy` once at import, so the CuPy stand-in cannot be swapped in here.
collect_ignore = [] if os.environ.get('DEZERO_KR_GPU_SUITE') else ['gpu_suite', 'cupy_standin']


@pytest.fixture(autouse=True)
def no_internet(monkeypatch):
    """Fail any connection that leaves this machine (tests start their own 127.0.0.1 servers)."""
    real_connect = socket.socket.connect

    def loopback_only(self, address):
        if isinstance(address, tuple) and address[0] not in ('127.0.0.1', '::1', 'localhost'):
            raise OSError(f'test tried to reach {address}')
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, 'connect', loopback_only)


# --- CI: a missing optional tool fails instead of skipping ---------------------------------
# README's test command installs every optional tool (the [test] extra, Graphviz, fonts,
# chromium), so on that machine nothing may skip but the GPU tests.  Outside CI a skip with
# its install hint is friendlier; with CI set (.ci/run sets it) any skip whose reason does not
# name a GPU becomes a failure, so a tool that went missing from the setup cannot go unseen.
def _ci():
    return os.environ.get('CI', '').strip().lower() not in ('', '0', 'false', 'no')


def _skip_allowed_in_ci(reason):
    return 'GPU' in reason


def _skip_reason(report):
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix('Skipped: ')


def _fail_skip_under_ci(report):
    if _ci() and report.skipped and not hasattr(report, 'wasxfail'):
        reason = _skip_reason(report)
        if not _skip_allowed_in_ci(reason):
            report.outcome = 'failed'
            report.longrepr = f'skipped with CI set (only GPU tests may skip in CI): {reason}'


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skip_under_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield  # a module-level importorskip skips the whole file at collection
    _fail_skip_under_ci(outcome.get_result())


# --- the BLAS kernel that ran -------------------------------------------------------------
# float32 results depend on the OpenBLAS kernel (docs/examples.md, "커널에 따라 달라지는
# 숫자"): the summary names it, and tests/test_blas_kernels.py reads it from the run it starts
# under a second kernel, so that a run under the wrong kernel cannot pass unseen.
def pytest_terminal_summary(terminalreporter):
    try:
        from _kernels import current_kernel
    except ImportError:  # this file copied alone into a test folder (tests/test_ci_skips.py)
        return
    preset = os.environ.get('OPENBLAS_CORETYPE', '')
    terminalreporter.write_line(f'BLAS kernel: {current_kernel()} '
                                f'(OPENBLAS_CORETYPE={preset or "unset"})')
