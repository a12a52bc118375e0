"""The example scripts in ``examples/``, each run in a subprocess as a user would.

* ``demo.py`` runs exactly as README says (``python examples/demo.py``): its
  worked numbers, its determinism, the files it writes (only into ``--out`` or
  the current folder) and its behaviour without a graph renderer.
* Every training example runs with small settings (a few epochs) and must exit
  0 and print its metric line ``결과 (result): name = value``; with
  ``--plot DIR`` the pictures must be valid PNG files (skipped without
  matplotlib), and without matplotlib the example must still finish.
* ``digits_mlp.py`` runs once with its real settings and must reach 95% test
  accuracy (about 10 s here).
* The small runs, and a run of every example without ``--plot``, happen in the
  root of a clone of this working tree (``tests/_clone.py``), as README's
  commands do: afterwards ``git status --short`` is empty and no run printed a
  ``Warning`` on standard error.
* ``mnist.py`` never touches the network: it is run with the cache folder set
  to a temporary folder and HTTP(S) proxies pointing at a closed local port, and
  inside a bootstrap that refuses every non-loopback connection and name lookup.
  Offline it must print the download module's message and exit with status 2;
  with (fake) files placed in the cache it trains.

Training examples run through ``BOOTSTRAP``: it installs that network guard,
puts ``examples/`` first on ``sys.path`` (as Python does for a script) and
runs the file as ``__main__``.
"""
import gzip
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from _clone import git_status, make_clone
from _kernels import assert_measured, spread
from _subproc import ROOT, not_gitignored, python_env

EXAMPLES = ROOT / 'examples'
TIMEOUT = 300
RESULT = re.compile(r'^결과 \(result\): (\w+) = (\S+)$', re.MULTILINE)
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'

BOOTSTRAP = r'''
import os, runpy, socket, sys
_LOOPBACK = ('127.0.0.1', '::1', 'localhost')
_connect, _getaddrinfo = socket.socket.connect, socket.getaddrinfo
def _connect_loopback(self, address):
    if isinstance(address, tuple) and address[0] not in _LOOPBACK:
        raise OSError(f'test_examples: network access to {address} blocked')
    return _connect(self, address)
def _getaddrinfo_loopback(host, *args, **kwargs):
    if host not in _LOOPBACK and host is not None:
        raise OSError(f'test_examples: name lookup of {host!r} blocked')
    return _getaddrinfo(host, *args, **kwargs)
socket.socket.connect = _connect_loopback
socket.getaddrinfo = _getaddrinfo_loopback
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name='__main__')
'''


def _closed_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def _env(tmp_path, **extra):
    env = python_env()
    for name in ('no_proxy', 'NO_PROXY', 'DEZERO_KR_DOT'):
        env.pop(name, None)
    proxy = f'http://127.0.0.1:{_closed_port()}'
    env.update({
        'PYTHONIOENCODING': 'utf-8',
        'MPLBACKEND': 'Agg',
        'DEZERO_KR_CACHE': str(tmp_path / 'cache'),
        'http_proxy': proxy, 'https_proxy': proxy, 'HTTP_PROXY': proxy, 'HTTPS_PROXY': proxy,
    })
    env.update(extra)
    return env


def run(script, *args, cwd, env, guarded=True):
    """Run ``examples/<script>`` with ``args``; returns (CompletedProcess, seconds)."""
    path = str(EXAMPLES / script)
    cmd = [sys.executable, '-c', BOOTSTRAP, path, *args] if guarded else [sys.executable, path, *args]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, encoding='utf-8',
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    return proc, time.perf_counter() - start


def results(proc):
    """{metric name: value} from the ``결과 (result):`` lines; fails with the output otherwise."""
    assert proc.returncode == 0, f'exit status {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}'
    found = {name: float(value) for name, value in RESULT.findall(proc.stdout)}
    assert found, f'no result line in:\n{proc.stdout}'
    return found


def has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def assert_png(path):
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE), f'{path} is not a PNG file'
    from matplotlib.image import imread
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > 50 and image.shape[1] > 50, image.shape
    assert image.std() > 0, f'{path} is blank'


def write_idx(path, array, magic):
    """A gzip'ed IDX file (the MNIST format) holding uint8 ``array``."""
    header = magic.to_bytes(4, 'big') + b''.join(d.to_bytes(4, 'big') for d in array.shape)
    with gzip.open(path, 'wb') as f:
        f.write(header + array.astype(np.uint8).tobytes())


def fake_mnist(folder, n_train=300, n_test=100):
    """MNIST-format files whose class k is a bright band at rows 2k..2k+5 (learnable in one epoch)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for prefix, n in (('train', n_train), ('t10k', n_test)):
        labels = rng.integers(0, 10, n)
        images = rng.integers(0, 60, (n, 28, 28))
        for i, k in enumerate(labels):
            images[i, 2 * k:2 * k + 6, 4:24] = 255
        write_idx(folder / f'{prefix}-images-idx3-ubyte.gz', images, 0x00000803)
        write_idx(folder / f'{prefix}-labels-idx1-ubyte.gz', labels, 0x00000801)


# =============================================================================
# demo.py: the README's first command
# =============================================================================
SEED_EXAMPLE = 'L = 42, dL/dx = 39, dL/dy = 26'


@pytest.fixture(scope='module')
def demo_runs(tmp_path_factory):
    """Two runs in separate folders with ``--out out`` and one in a folder without ``--out``."""
    runs = []
    for name, args in (('a', ('--out', 'out')), ('b', ('--out', 'out')), ('plain', ())):
        cwd = tmp_path_factory.mktemp(f'demo_{name}')
        proc, seconds = run('demo.py', *args, cwd=cwd, env=_env(cwd), guarded=False)
        runs.append((cwd, proc, seconds))
    return runs


@pytest.mark.blas_numbers
def test_demo_prints_the_worked_numbers(demo_runs):
    _, proc, seconds = demo_runs[0]
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert SEED_EXAMPLE in out
    t = np.tanh(0.5)
    exact = [1 - t ** 2, -2 * t * (1 - t ** 2), (1 - t ** 2) * (6 * t ** 2 - 2)]
    for k, value in enumerate(exact, start=1):
        assert f'k={k}: autodiff {value:+.6f}   공식 / closed form {value:+.6f}' in out
    assert '-> 1.000000   (최솟값 / minimum at x = 1)' in out  # Newton reaches the minimum
    acc = float(re.search(r'test accuracy: (\S+)', out).group(1))
    assert acc >= 0.95
    assert 'directional derivative along (1, 1): 65' in out
    norms = re.search(r'global norm (\S+) -> (\S+)', out)
    assert float(norms.group(1)) > 0.1 and float(norms.group(2)) == pytest.approx(0.1, abs=1e-4)
    # what docs/examples.md quotes from this run (see tests/test_doc_numbers.py)
    page = (ROOT / 'docs' / 'examples.md').read_text(encoding='utf-8')
    assert re.findall(r'테스트 정확도 (\S+)을 출력합니다', page) == [f'{acc:.4f}']
    assert re.findall(r'\| L = 42, dL/dx = 39, dL/dy = 26 / 테스트 정확도 (\S+) \|', page) == [f'{acc:.4f}']
    assert re.findall(r'전역 노름이 (\S+)에서 (\S+)으로 줄어드는', page) == [norms.groups()]
    assert seconds < 60, f'the demo took {seconds:.1f} s'


def test_demo_is_deterministic(demo_runs):
    (_, a, _), (_, b, _) = demo_runs[0], demo_runs[1]
    assert a.stdout == b.stdout


def test_demo_writes_only_into_its_out_folder(demo_runs):
    cwd, proc, _ = demo_runs[0]
    assert sorted(p.name for p in cwd.iterdir()) == ['out']
    dot = (cwd / 'out' / 'demo_graph.dot').read_text(encoding='utf-8')
    assert dot.startswith('digraph g {')
    for label in ('label="x: () float64"', 'label="y: () float64"', 'label="u: () float64"',
                  'label="L: () float64"', 'label="Mul"', 'label="Add"'):
        assert label in dot
    svg = cwd / 'out' / 'demo_graph.svg'
    if 'demo_graph.svg  (그림 / picture)' in proc.stdout:
        assert b'<svg' in svg.read_bytes()[:2000]
    else:
        assert not svg.exists() and 'pip install graphviz-pure' in proc.stdout


def test_demo_default_out_is_the_current_folder(demo_runs):
    cwd, proc, _ = demo_runs[2]
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in cwd.iterdir()} <= {'demo_graph.dot', 'demo_graph.svg'}
    assert (cwd / 'demo_graph.dot').exists()
    assert not_gitignored(cwd) == []  # run from the repository root, it leaves no untracked file


def test_demo_without_a_renderer_says_how_to_get_one(tmp_path):
    proc, _ = run('demo.py', '--out', 'out', cwd=tmp_path,
                  env=_env(tmp_path, DEZERO_KR_DOT=str(tmp_path / 'no-such-dot')), guarded=False)
    assert proc.returncode == 0, proc.stderr
    assert SEED_EXAMPLE in proc.stdout
    assert 'pip install graphviz-pure' in proc.stdout
    assert (tmp_path / 'out' / 'demo_graph.dot').exists()
    assert not (tmp_path / 'out' / 'demo_graph.svg').exists()


# =============================================================================
# Training examples with small settings
# =============================================================================
# name -> (script, arguments, metric, (low, high), pictures written by --plot)
SMALL_RUNS = {
    'spiral': ('spiral_mlp.py', ['--epochs', '30'], 'test_accuracy', (0.6, 1.0),
               ['spiral_boundary.png', 'spiral_curves.png']),
    'digits_mlp': ('digits_mlp.py', ['--epochs', '3'], 'test_accuracy', (0.5, 1.0),
                   ['digits_mlp_curves.png', 'digits_mlp_errors.png']),
    'digits_cnn': ('digits_cnn.py', ['--epochs', '2'], 'test_accuracy', (0.3, 1.0),
                   ['digits_cnn_curves.png', 'digits_cnn_filters.png']),
    'sine_rnn': ('sine_rnn.py', ['--epochs', '5'], 'test_mse', (0.0, 0.5), ['sine_rnn.png']),
    'sine_lstm': ('sine_rnn.py', ['--epochs', '5', '--cell', 'lstm'], 'test_mse', (0.0, 0.5),
                  ['sine_lstm.png']),
    'mnist_local_files': ('mnist.py', ['--epochs', '1', '--skip-checksum'], 'test_accuracy', (0.9, 1.0),
                          ['mnist_curves.png', 'mnist_samples.png']),
}


@pytest.fixture(scope='module')
def clone():
    """The root of a clone of this working tree: the small runs happen there, as from README."""
    with tempfile.TemporaryDirectory() as tmp:
        yield make_clone(Path(tmp))


@pytest.fixture(scope='module')
def small_runs(tmp_path_factory, clone):
    """Each small run once (with ``--plot plots``) in the clone's root, shared by the checks below."""
    done = {}
    for name, (script, args, *_rest) in SMALL_RUNS.items():
        outside = tmp_path_factory.mktemp(name)  # the download cache, outside the clone
        env = _env(outside)
        if script == 'mnist.py':
            fake_mnist(outside / 'cache')
        done[name] = (clone,) + run(script, *args, '--plot', 'plots', cwd=clone, env=env)
    return done


@pytest.mark.parametrize('name', list(SMALL_RUNS))
def test_example_runs_and_prints_its_metric(small_runs, name):
    _, proc, _ = small_runs[name]
    metric, (low, high) = SMALL_RUNS[name][2:4]
    found = results(proc)
    assert metric in found, proc.stdout
    assert low <= found[metric] <= high, f'{metric} = {found[metric]}'
    assert re.search(r'^시간 \(time\): [\d.]+ s$', proc.stdout, re.MULTILINE)


@pytest.mark.parametrize('name', list(SMALL_RUNS))
def test_example_plots_are_valid_png(small_runs, name):
    if not has_matplotlib():
        pytest.skip('matplotlib is not installed (pip install matplotlib), so --plot writes nothing')
    cwd, proc, _ = small_runs[name]
    assert proc.returncode == 0, proc.stderr
    pictures = SMALL_RUNS[name][4]
    saved = re.findall(r'^\[그림 저장 / plot saved\] (.+)$', proc.stdout, re.MULTILINE)
    assert sorted(saved) == sorted(os.path.join('plots', p) for p in pictures)
    for picture in pictures:
        assert_png(cwd / 'plots' / picture)
        # saved paths are shown relative to the folder the example runs in (paths.display_path)
        assert f'[그림 저장 / plot saved] {os.path.join("plots", picture)}\n' in proc.stdout


def _env_without(tmp_path, package):
    """``_env(tmp_path)`` where ``import package`` raises ImportError (a stub first on the path)."""
    hidden = tmp_path / 'hide'
    (hidden / package).mkdir(parents=True)
    (hidden / package / '__init__.py').write_text(
        f"raise ImportError('{package} hidden by test_examples')\n")
    env = _env(tmp_path)
    env['PYTHONPATH'] = os.pathsep.join([str(hidden), env['PYTHONPATH']])
    return env


def test_example_without_matplotlib_still_finishes(tmp_path):
    env = _env_without(tmp_path, 'matplotlib')
    proc, _ = run('spiral_mlp.py', '--epochs', '2', '--plot', 'plots', cwd=tmp_path, env=env)
    assert 'test_accuracy' in results(proc)
    assert 'pip install matplotlib' in proc.stderr
    assert not any((tmp_path / 'plots').iterdir())


def test_examples_leave_a_clone_clean_and_print_no_warning(small_runs, clone, tmp_path):
    # README's commands from the root of a fresh clone: the demo, every example with
    # --plot plots (small_runs) and without it, the GPT and MPI examples alone.
    runs = {f'{name} --plot plots': proc for name, (_, proc, _) in small_runs.items()}
    fake_mnist(tmp_path / 'cache')
    env = _env(tmp_path)
    plain = [('spiral_mlp.py', ['--epochs', '1']), ('digits_mlp.py', ['--epochs', '1']),
             ('digits_cnn.py', ['--epochs', '1']), ('sine_rnn.py', ['--epochs', '1']),
             ('sine_rnn.py', ['--epochs', '1', '--cell', 'lstm']),
             ('mnist.py', ['--epochs', '1', '--skip-checksum'])]
    plain += [('demo.py', []), ('gpt/train.py', ['--fast', '--samples', '1']),
              ('digits_mlp_mpi.py', ['--epochs', '1', '--no-progress'])]
    for script, args in plain:
        proc, _ = run(script, *args, cwd=clone, env=env)
        assert proc.returncode == 0, f'{script} {args}: {proc.stderr[-3000:]}'
        runs[' '.join([script, *args])] = proc
    pictures = sorted(p for *_, names in SMALL_RUNS.values() for p in names)
    assert sorted(p.name for p in (clone / 'plots').iterdir()) == pictures
    assert git_status(clone) == '', 'the examples left files that git sees'
    warned = {name: [line for line in proc.stderr.splitlines() if 'Warning' in line]
              for name, proc in runs.items()}
    assert not {name: lines for name, lines in warned.items() if lines}


def test_sine_rnn_logs_the_pre_clip_gradient_norm(small_runs):
    _, proc, _ = small_runs['sine_rnn']
    line = re.search(r'pre-clip grad norm mean (\S+) max (\S+)  clipped (\d+)/(\d+)', proc.stdout)
    assert line, proc.stdout
    mean, largest, clipped, updates = (float(v) for v in line.groups())
    assert 0 < mean <= largest and 0 <= clipped <= updates


# =============================================================================
# The real settings of digits_mlp.py
# =============================================================================
@pytest.mark.blas_numbers
def test_digits_mlp_reaches_95_percent(tmp_path):
    proc, seconds = run('digits_mlp.py', '--no-progress', cwd=tmp_path, env=_env(tmp_path))
    accuracy = results(proc)['test_accuracy']
    print(f'digits_mlp.py (real settings): test accuracy {accuracy:.4f} in {seconds:.1f} s')
    assert accuracy >= 0.95, proc.stdout
    # docs/examples.md quotes this run (seed 0) in three places: the summary, the seeds table
    # (first column) and the BLAS measurements (see tests/test_doc_numbers.py for the others)
    page = (ROOT / 'docs' / 'examples.md').read_text(encoding='utf-8')
    assert_measured('digits_mlp.py --seed 0', f'{accuracy:.4f}')
    quoted = (re.findall(r'테스트 정확도 \*\*(\S+)\*\* \(`--plain`', page)
              + re.findall(r'\| 테스트 정확도 \| (\S+) \|', page)
              + re.findall(r'정확도는 두 경우 모두\n(\S+)로 같습니다', page))
    assert quoted == [spread('digits_mlp.py --seed 0')] * 3
    if seconds > 60:  # a loaded machine can be slower; the accuracy is what must hold
        warnings.warn(f'digits_mlp.py took {seconds:.1f} s (about 10 s on an idle 2-core machine)')


# =============================================================================
# mnist.py offline
# =============================================================================
def test_mnist_offline_prints_where_to_put_the_files_and_exits_2(tmp_path):
    proc, seconds = run('mnist.py', '--epochs', '1', cwd=tmp_path, env=_env(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr
    cache = tmp_path / 'cache'
    assert "Could not download 'train-images-idx3-ubyte.gz'" in err
    assert 'place it by hand at:' in err and str(cache / 'train-images-idx3-ubyte.gz') in err
    assert 'https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz' in err
    assert 'Connection refused' in err  # the closed-port proxy, not the internet
    assert 'blocked' not in err  # nothing tried to go past the proxy
    for name in ('train-labels-idx1-ubyte.gz', 't10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'):
        assert name in err
    assert RESULT.search(proc.stdout) is None
    assert seconds < 60


def test_mnist_rejects_files_with_the_wrong_digest(tmp_path):
    fake_mnist(tmp_path / 'cache', n_train=20, n_test=10)
    proc, _ = run('mnist.py', '--epochs', '1', cwd=tmp_path, env=_env(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert 'does not match the expected SHA-256' in proc.stderr


# =============================================================================
# export_onnx.py: train, export, run in ONNX Runtime
# =============================================================================
@pytest.mark.blas_numbers
def test_export_onnx_gives_the_same_accuracy_in_onnx_runtime(tmp_path):
    proc, _ = run('export_onnx.py', '--epochs', '2', '--no-progress', cwd=tmp_path, env=_env(tmp_path))
    found = results(proc)
    assert 0.3 <= found['test_accuracy'] <= 1.0
    assert found['onnx_test_accuracy'] == found['test_accuracy'], proc.stdout
    assert 'images predicted differently: 0\n' in proc.stdout
    assert (tmp_path / 'digits_cnn.onnx').stat().st_size > 10_000
    # run from the repository root, it would leave only files .gitignore lists
    assert os.listdir(tmp_path) == ['digits_cnn.onnx'] and not_gitignored(tmp_path) == []


def test_export_onnx_without_onnx_runtime_still_writes_the_file(tmp_path):
    env = _env_without(tmp_path, 'onnxruntime')
    proc, _ = run('export_onnx.py', '--epochs', '1', '--no-progress', '--out', 'm.onnx', cwd=tmp_path,
                  env=env)
    found = results(proc)
    assert 'onnx_test_accuracy' not in found and 'test_accuracy' in found
    assert 'pip install onnxruntime' in proc.stdout
    assert (tmp_path / 'm.onnx').exists()
