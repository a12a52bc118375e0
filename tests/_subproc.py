"""Every test that starts Python in a subprocess builds its environment here.

A subprocess does not inherit pytest's ``sys.path``: run from a checkout
without ``pip install -e .`` (``python -m pytest`` puts the current folder on
the path of the pytest process only), ``python examples/gpt/train.py`` would
import no ``dezero_kr`` at all, and with an install pointing at another
checkout it would import the wrong one.  ``python_env()`` puts this working
tree's root first on ``PYTHONPATH``, so subprocesses import the code under test.
"""
import os
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
