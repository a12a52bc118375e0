"""The Sphinx site builds with warnings as errors, reads math without a network, and its
tutorial code boxes fit 80 columns."""
import html
import pathlib
import re
import subprocess
import sys
import unicodedata

import pytest

pytest.importorskip('sphinx', reason='docs extra not installed (pip install -e ".[test]")')
pytest.importorskip('myst_parser', reason='docs extra not installed')

DOCS = pathlib.Path(__file__).resolve().parent.parent / 'docs'


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    """The site, built once for this module: (sphinx's CompletedProcess, html folder)."""
    html_dir = tmp_path_factory.mktemp('site') / 'html'
    out = subprocess.run([sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-b', 'html', '-q',
                          str(DOCS), str(html_dir)], capture_output=True, text=True, timeout=600)
    return out, html_dir


def test_docs_build_with_warnings_as_errors(site):
    out, html_dir = site
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    pages = list(html_dir.glob('*.html'))
    assert any(p.name == 'api.html' for p in pages)
    for page in pages:
        text = page.read_text(encoding='utf-8')
        scripts = re.findall(r'<script[^>]+src="([^"]+)"', text)
        remote = [s for s in scripts if s.startswith(('http:', 'https:', '//'))]
        assert not remote, f'{page.name} loads scripts from the network: {remote}'


# Pages whose every code/output line (literal blocks and included files, as rendered)
# must fit 80 columns, counting a Hangul character as two: at 1366 px the theme shows
# about 100, so these never scroll sideways.
NARROW_PAGES = ['tutorial/index', 'tutorial/stage1', 'tutorial/stage2', 'tutorial/beyond',
                'tutorial/theory', 'glossary', 'references', 'index', 'getting_started', 'nn',
                'graph', 'backprop_view', 'autodiff_modes', 'grad_clip', 'conv', 'gpt', 'data',
                'examples', 'dezero_differences', 'api']


def _display_width(line):
    return sum(2 if unicodedata.east_asian_width(ch) in 'WF' else 1 for ch in line)


def _wide_lines(page_html, limit=80):
    wide = []
    for block in re.findall(r'<pre>(.*?)</pre>', page_html, re.S):
        for line in html.unescape(re.sub(r'<[^>]+>', '', block)).splitlines():
            if _display_width(line) > limit:
                wide.append(line)
    return wide


def test_wide_line_detector():
    assert _wide_lines('<pre>' + 'x' * 80 + '\n' + '가' * 41 + '</pre>') == ['가' * 41]
    assert _wide_lines('<pre><span>a &lt; b</span></pre><p>' + 'x' * 200 + '</p>') == []


@pytest.mark.parametrize('page', NARROW_PAGES)
def test_tutorial_code_lines_fit_80_columns(site, page):
    out, html_dir = site
    assert out.returncode == 0, out.stderr[-3000:]
    wide = _wide_lines((html_dir / f'{page}.html').read_text(encoding='utf-8'))
    assert not wide, f'{page}: {len(wide)} line(s) wider than 80 columns:\n' + '\n'.join(wide)
