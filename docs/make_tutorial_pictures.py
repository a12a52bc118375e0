"""Regenerate the pictures the tutorial pages show, by running the step scripts.

A tutorial page shows a picture a step writes by referring to
``../_static/tutorial/stepNN_<name>.png`` (or ``.svg``).  This script finds every
such reference in ``docs/tutorial/*.md``, runs each step named there once in a
temporary folder with the book's settings (no ``DEZERO_KR_FAST``), and copies the
referenced files into ``docs/_static/tutorial/``.  The pictures are committed, so
the site builds without running training; run this after changing a step:

    python docs/make_tutorial_pictures.py            # every referenced step
    python docs/make_tutorial_pictures.py step48     # only these steps
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
OUT = DOCS / '_static' / 'tutorial'
PATTERN = re.compile(r'_static/tutorial/((step\d\d)_[\w.-]+\.(?:png|svg))')


def referenced():
    """{step name: set of picture file names} over every tutorial page."""
    wanted = {}
    for page in sorted((DOCS / 'tutorial').glob('*.md')):
        for name, step in PATTERN.findall(page.read_text(encoding='utf-8')):
            wanted.setdefault(step, set()).add(name)
    return wanted


def run_step(step, names):
    env = dict(os.environ, MPLBACKEND='Agg', PYTHONPATH=str(ROOT))
    env.pop('DEZERO_KR_FAST', None)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(ROOT / 'steps' / f'{step}.py')], cwd=tmp, env=env,
                       check=True, stdout=subprocess.DEVNULL)
        for name in sorted(names):
            shutil.copyfile(pathlib.Path(tmp) / name, OUT / name)
            print(OUT.relative_to(ROOT) / name)


def main(argv):
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = referenced()
    for step in argv or sorted(wanted):
        run_step(step, wanted.get(step, ()))


if __name__ == '__main__':
    main(sys.argv[1:])
