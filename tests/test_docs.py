"""The Sphinx site builds with warnings as errors, and reads math without a network."""
import pathlib
import re
import subprocess
import sys

import pytest

from _subproc import python_env

pytest.importorskip('sphinx', reason='docs extra not installed (pip install -e ".[test]")')
pytest.importorskip('myst_parser', reason='docs extra not installed')

DOCS = pathlib.Path(__file__).resolve().parent.parent / 'docs'


def test_docs_build_with_warnings_as_errors(tmp_path):
    out = subprocess.run([sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-b', 'html', '-q',
                          str(DOCS), str(tmp_path / 'html')], capture_output=True, text=True,
                         timeout=600, env=python_env())
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    pages = list((tmp_path / 'html').glob('*.html'))
    assert any(p.name == 'api.html' for p in pages)
    for page in pages:
        text = page.read_text(encoding='utf-8')
        scripts = re.findall(r'<script[^>]+src="([^"]+)"', text)
        remote = [s for s in scripts if s.startswith(('http:', 'https:', '//'))]
        assert not remote, f'{page.name} loads scripts from the network: {remote}'
