"""Every test that starts Python in a subprocess builds its environment here.

A subprocess does not inherit pytest's ``sys.path``: run from a checkout
without ``pip install -e .`` (``python -m pytest`` puts the current folder on
the path of the pytest process only), ``python examples/gpt/train.py`` would
import no ``dezero_kr`` at all, and with an install pointing at another
checkout it would import the wrong one.  ``python_env()`` puts this working
tree's root first on ``PYTHONPATH``, so subprocesses import the code under test.
"""
import fnmatch
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_env(base=None, **extra):
    """A copy of ``base`` (default ``os.environ``) with ROOT first on PYTHONPATH, then ``extra``.

    An existing PYTHONPATH is kept after ROOT.  ``extra`` values are strings
    (``python_env(DEZERO_KR_FAST='1')``); an ``extra`` PYTHONPATH replaces the
    whole variable, so callers that need more folders join them to the result.
    """
    env = dict(os.environ if base is None else base)
    old = env.get('PYTHONPATH')
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + ([old] if old else []))
    env.update(extra)
    return env


def python3_kernel(folder, monkeypatch):
    """Make sure Jupyter finds a ``python3`` kernel and that it imports this working tree.

    Where no ``python3`` kernel spec is installed, one for this interpreter is written under
    ``folder`` and ``JUPYTER_PATH`` points there; ``PYTHONPATH`` gets ROOT first (as
    ``python_env``), since the kernel is a subprocess of the test.
    """
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    monkeypatch.setenv('PYTHONPATH', python_env()['PYTHONPATH'])
    try:
        KernelSpecManager().get_kernel_spec('python3')
    except NoSuchKernel:
        spec_dir = Path(folder) / 'jupyter' / 'kernels' / 'python3'
        spec_dir.mkdir(parents=True)
        (spec_dir / 'kernel.json').write_text(json.dumps({
            'argv': [sys.executable, '-m', 'ipykernel_launcher', '-f', '{connection_file}'],
            'display_name': 'Python 3', 'language': 'python'}))
        monkeypatch.setenv('JUPYTER_PATH', str(Path(folder) / 'jupyter'))


def not_gitignored(folder, under=''):
    """Names in ``folder`` that ``.gitignore`` would not ignore if ``folder`` were ROOT / ``under``.

    The demo and the steps write into the folder they run in; when that is the repository
    root (or ``steps/``) every file they leave must be listed in ``.gitignore``.  Only the
    anchored patterns (``/name``, ``/steps/name``, ``/folder/``) are read, which is how
    that list is written.
    """
    prefix = '/' + (under.strip('/') + '/' if under.strip('/') else '')
    patterns = []
    for line in (ROOT / '.gitignore').read_text(encoding='utf-8').splitlines():
        line = line.strip()
        if line.startswith(prefix) and '/' not in line[len(prefix):].rstrip('/'):
            patterns.append(line[len(prefix):])
    def ignored(entry, pattern):  # "name/" matches only folders, "name" files and folders
        if pattern.endswith('/'):
            return entry.is_dir() and fnmatch.fnmatchcase(entry.name, pattern[:-1])
        return fnmatch.fnmatchcase(entry.name, pattern)

    return [entry.name + ('/' if entry.is_dir() else '') for entry in sorted(Path(folder).iterdir())
            if not any(ignored(entry, p) for p in patterns)]
