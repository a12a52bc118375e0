"""docs/tutorial/theory.md quotes numbers; docs/tutorial/answers/theory_check.py computes them.

The script asserts each number against its closed form (0.25**10, the residual F(x) = -x
counterexample, the a/b/c/d topological-sort example, ...) and prints them; the page
shows the printed output from ``theory_check.txt``.  This test runs the script and
compares its stdout with that file, so a page number that stops being true fails here.
Regenerate after a deliberate change with
``python docs/tutorial/answers/theory_check.py > docs/tutorial/answers/theory_check.txt``.
"""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / 'docs' / 'tutorial' / 'answers' / 'theory_check.py'
GOLDEN = SCRIPT.with_suffix('.txt')
PAGE = ROOT / 'docs' / 'tutorial' / 'theory.md'


def test_theory_numbers_match_the_page_output():
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING='utf-8')
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                         env=env, timeout=120, encoding='utf-8')
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout == GOLDEN.read_text(encoding='utf-8')


def test_page_includes_the_checked_output():
    text = PAGE.read_text(encoding='utf-8')
    assert 'answers/theory_check.txt' in text
    # The page's headline numbers are the script's, not retyped ones.
    golden = GOLDEN.read_text(encoding='utf-8')
    for number in ('9.5367431641e-07', 'a.grad = 1.0, b.grad = 0.0', 'dy/dx = 0.0',
                   'x.T @ gy = 6.0'):
        assert number in golden
