"""Golden-output tests for the tutorial scripts ``steps/stepNN.py``.

Every ``steps/step*.py`` is run as a learner would run it (``python steps/stepNN.py``
from the repository root) in a subprocess: ``sys.executable``, cwd = the root of a clone
of this working tree (``tests/_clone.py``; files a script writes land there, and after
all steps ``git status --short`` must still be empty), the script's own directory first
on ``sys.path`` (Python does that for scripts), the repository root on ``PYTHONPATH`` (so later steps import the working
tree's ``dezero_kr``), ``DEZERO_KR_FAST=1`` (later training steps shorten their loops),
``MPLBACKEND=Agg``, and a timeout (``DEZERO_KR_STEP_TIMEOUT`` seconds, default 120).

Its stdout is compared with ``tests/golden/steps/stepNN.txt`` line by line:

* the number of lines must be equal;
* every number token (``-12``, ``3.5``, ``1e-07``, ``2.``) is compared numerically with
  ``|actual - expected| <= atol + rtol * |expected|`` (rtol=1e-6, atol=1e-9), because
  BLAS/libm may differ in the last digits between machines;
* the text between numbers must match exactly, except that a run of spaces counts as one
  space (NumPy pads array elements to the width of the longest one, which moves with the
  digits) and trailing spaces are ignored.

Other checks, parametrised over the files found (so steps 23-60+ join automatically):

* every ``steps/step*.py`` has a golden file, and every golden file has a step;
* no step is empty or a placeholder: it needs a Korean module docstring, code outside the
  docstring, and a non-trivial ``if __name__ == '__main__':`` block;
* importing a step prints nothing (all demo code lives under the ``__main__`` guard);
* steps 01-22 build the framework from scratch and must not import ``dezero_kr``;
* no step imports another step (``steps/_common.py`` holds what steps share);
* after every step, the clone is clean (what they write is in ``.gitignore``, also when
  run inside ``steps/``), no step printed a ``Warning`` on standard error, and the table
  "파일은 어디에" in ``steps/README.md`` lists exactly the files each step wrote.

Regenerate golden files after an intended change of output, then review the diff::

    python tests/test_steps.py --regen                 # all steps
    python tests/test_steps.py --regen step07 step08   # only these

Run the tests::

    python -m pytest tests/test_steps.py -q
"""
import ast
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from _clone import Writes, git_status, ignored, make_clone
from _subproc import ROOT, python_env

sys.path.insert(0, str(ROOT / 'steps'))
from exercises.golden import ATOL, NUMBER, RTOL, compare_line, compare_output  # noqa: E402,F401

STEPS_DIR = ROOT / 'steps'
GOLDEN_DIR = ROOT / 'tests' / 'golden' / 'steps'
FROM_SCRATCH_LAST = 22  # steps 01..22 grow their own framework and must not use dezero_kr

TIMEOUT = float(os.environ.get('DEZERO_KR_STEP_TIMEOUT', '120'))

HANGUL = re.compile(r'[\uac00-\ud7a3]')
STEP_NAME = re.compile(r'step(\d+)$')


def _step_number(path):
    return int(STEP_NAME.match(path.stem).group(1))


def step_files():
    """All steps/stepNN.py, in numeric order (step9 < step10 < step100)."""
    files = [p for p in STEPS_DIR.glob('step*.py') if STEP_NAME.match(p.stem)]
    return sorted(files, key=_step_number)


def golden_path(step):
    return GOLDEN_DIR / f'{step.stem}.txt'


def _env():
    env = python_env()
    env['DEZERO_KR_FAST'] = '1'
    env['MPLBACKEND'] = 'Agg'
    env['PYTHONIOENCODING'] = 'utf-8'
    env['PYTHONHASHSEED'] = '0'
    env['PYTHONDONTWRITEBYTECODE'] = '1'
    # One BLAS thread: small matmuls thrash with several on a busy 2-core machine,
    # and the recorded digits then do not depend on the thread count.
    for var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
        env[var] = '1'
    return env


def run_python(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, encoding='utf-8', timeout=TIMEOUT)


def run_step(step, cwd):
    """Run one step as a script; return its stdout or raise AssertionError with stderr."""
    proc = run_python([str(step)], cwd)
    if proc.returncode != 0:
        raise AssertionError(f'{step.name} exited with {proc.returncode}\n'
                             f'--- stderr ---\n{proc.stderr[-4000:]}')
    return proc.stdout


# ---------------------------------------------------------------------------
# comparison

# _split, compare_line, compare_output: steps/exercises/golden.py (also used by check.py)


# ---------------------------------------------------------------------------
# tests

STEPS = step_files()
IDS = [p.stem for p in STEPS]


def test_steps_found():
    assert STEPS, f'no steps/step*.py found under {STEPS_DIR}'


@pytest.mark.parametrize('step', STEPS, ids=IDS)
def test_step_has_golden(step):
    assert golden_path(step).is_file(), (
        f'{step.name} has no golden file; create it with: '
        f'python tests/test_steps.py --regen {step.stem}')


def test_no_orphan_goldens():
    steps = {p.stem for p in STEPS}
    orphans = sorted(p.name for p in GOLDEN_DIR.glob('*.txt') if p.stem not in steps)
    assert not orphans, f'golden files without a step: {orphans}'


@pytest.mark.parametrize('step', STEPS, ids=IDS)
def test_step_is_not_placeholder(step):
    source = step.read_text(encoding='utf-8')
    assert source.strip(), f'{step.name} is empty'
    tree = ast.parse(source, filename=str(step))
    doc = ast.get_docstring(tree)
    assert doc and HANGUL.search(doc), f'{step.name} needs a Korean module docstring'
    body = tree.body[1:]
    mains = [n for n in body
             if isinstance(n, ast.If) and ast.unparse(n.test) == "__name__ == '__main__'"]
    assert mains, f"{step.name} needs an `if __name__ == '__main__':` block"
    assert any(not _is_trivial(s) for m in mains for s in m.body), \
        f'{step.name}: the __main__ block does nothing'
    assert any(not _is_trivial(n) and n not in mains for n in body) or \
        sum(len(m.body) for m in mains) >= 3, f'{step.name} is too thin to teach anything'


def _is_trivial(node):
    """`pass`, `...` or a bare string: what placeholder files are made of."""
    return isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))


@pytest.mark.parametrize('step', [s for s in STEPS if _step_number(s) <= FROM_SCRATCH_LAST],
                         ids=[s.stem for s in STEPS if _step_number(s) <= FROM_SCRATCH_LAST])
def test_from_scratch_step_does_not_import_package(step):
    names = imported_modules(step)
    assert not any(n.split('.')[0] == 'dezero_kr' for n in names), \
        f'{step.name} imports dezero_kr; steps 01-{FROM_SCRATCH_LAST} build everything themselves'


def imported_modules(path):
    """Every module name an ``import`` / ``from ... import`` anywhere in the file names."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or '')
    return names


STEP_MODULE = re.compile(r'step\d+$')


def test_step_import_detector():
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'step99.py'
        path.write_text('import numpy as np\nfrom _common import FAST\n\n\ndef f():\n'
                        '    from step37 import report\n', encoding='utf-8')
        found = [n for n in imported_modules(path) if STEP_MODULE.match(n.split('.')[0])]
    assert found == ['step37']


@pytest.mark.parametrize('step', STEPS, ids=IDS)
def test_step_does_not_import_another_step(step):
    # Each step is a chapter read top to bottom: what it needs from an earlier step is copied
    # into it, and what several steps share lives in steps/_common.py.
    others = [n for n in imported_modules(step) if STEP_MODULE.match(n.split('.')[0])]
    assert not others, (f'{step.name} imports {others}; copy what it needs into it '
                        '(or, if several steps share it, into steps/_common.py)')


@pytest.mark.parametrize('step', STEPS, ids=IDS)
def test_import_prints_nothing(step, tmp_path):
    code = f'import sys; sys.path.insert(0, {str(STEPS_DIR)!r}); import {step.stem}'
    proc = run_python(['-c', code], tmp_path)
    assert proc.returncode == 0, f'importing {step.stem} failed:\n{proc.stderr[-4000:]}'
    assert proc.stdout == '', f'importing {step.stem} printed output; move demo code under __main__'


@pytest.fixture(scope='module')
def clone():
    """One clone of the working tree that every step of this module runs in, and its runs."""
    with tempfile.TemporaryDirectory() as tmp:
        yield {'root': make_clone(Path(tmp)), 'runs': {}}


def run_step_in_clone(step, clone):
    """``python steps/stepNN.py`` from the clone's root; records (stderr, files written)."""
    root = clone['root']
    with Writes(root) as writes:
        proc = run_python([str(Path('steps') / step.name)], root)
    clone['runs'][step.stem] = (proc.stderr, writes.paths)
    if proc.returncode != 0:
        raise AssertionError(f'{step.name} exited with {proc.returncode}\n'
                             f'--- stderr ---\n{proc.stderr[-4000:]}')
    return proc.stdout


def all_runs(clone):
    """Every step's run in the clone (the steps not run yet by the golden tests run now)."""
    for step in STEPS:
        if step.stem not in clone['runs']:
            try:
                run_step_in_clone(step, clone)
            except AssertionError:
                pass  # the golden test reports the failure
    return clone['runs']


@pytest.mark.blas_numbers
@pytest.mark.parametrize('step', [s for s in STEPS if golden_path(s).is_file()],
                         ids=[s.stem for s in STEPS if golden_path(s).is_file()])
def test_step_output_matches_golden(step, clone):
    actual = run_step_in_clone(step, clone)
    written = clone['runs'][step.stem][1]
    for folder in ('', 'steps/'):  # run from the root or inside steps/: would git see it?
        paths = [folder + p for p in written]
        assert set(paths) <= ignored(clone['root'], paths), (
            f'{step.name} writes {sorted(set(paths) - ignored(clone["root"], paths))}: '
            f'list them in .gitignore')
    expected = golden_path(step).read_text(encoding='utf-8')
    assert expected.strip(), f'golden file for {step.name} is empty'
    problems = compare_output(actual, expected)
    assert not problems, (f'{step.name} output differs from {golden_path(step).relative_to(ROOT)} '
                          f'(regenerate with: python tests/test_steps.py --regen {step.stem})\n'
                          + '\n'.join(problems[:10]))


def test_steps_leave_a_clone_of_the_repository_clean(clone):
    all_runs(clone)
    assert git_status(clone['root']) == '', 'running the steps from the root left files git sees'


def test_steps_print_no_warning(clone):
    # README's plain install: nothing English a learner cannot act on (RuntimeWarning about
    # BLAS threads, UserWarning about create_graph cycles, ...) on standard error.
    warned = {stem: [line for line in err.splitlines() if 'Warning' in line]
              for stem, (err, _) in all_runs(clone).items()}
    assert not {stem: lines for stem, lines in warned.items() if lines}


def readme_files_table():
    """{step number: [names]} from steps/README.md's table under '## 파일은 어디에'."""
    text = (STEPS_DIR / 'README.md').read_text(encoding='utf-8')
    section = text.split('## 파일은 어디에', 1)[1].split('\n## ', 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 2 and cells[0].isdigit():
            table[int(cells[0])] = sorted(re.findall(r'`([^`]+)`', cells[1]))
    return table


def test_readme_lists_the_files_each_step_writes(clone):
    written = {}
    for stem, (_, paths) in all_runs(clone).items():
        names = {p.split('/')[0] + ('/' if '/' in p else '') for p in paths}  # a folder once
        if names:
            written[int(STEP_NAME.match(stem).group(1))] = sorted(names)
    assert readme_files_table() == written, (
        'steps/README.md, "파일은 어디에": the table must list what the steps write '
        f'(DEZERO_KR_FAST=1 runs): {written}')


def test_compare_tolerates_last_digits_and_padding():
    assert compare_output('x = 3.2974425414002564\n[1.         2.00000001]\n',
                          'x = 3.297442541400256\n[1. 2.]\n') == []
    assert compare_output('x = 3.2975\n', 'x = 3.2974\n')
    assert compare_output('dy/dx = 1.0\n', 'dx/dy = 1.0\n')
    assert compare_output('a\nb\n', 'a\n')


# ---------------------------------------------------------------------------
# regeneration

def regen(names):
    wanted = {n.removesuffix('.py') for n in names}
    steps = [s for s in STEPS if not wanted or s.stem in wanted]
    unknown = wanted - {s.stem for s in steps}
    if unknown:
        print(f'unknown steps: {sorted(unknown)}', file=sys.stderr)
        return 1
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    failed = 0
    for step in steps:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                out = run_step(step, tmp)
            except (AssertionError, subprocess.TimeoutExpired) as e:
                print(f'FAILED {step.stem}: {e}', file=sys.stderr)
                failed += 1
                continue
        path = golden_path(step)
        old = path.read_text(encoding='utf-8') if path.is_file() else None
        path.write_text(out, encoding='utf-8')
        state = 'new' if old is None else ('unchanged' if old == out else 'updated')
        print(f'{step.stem}: {state} ({len(out.splitlines())} lines)')
    return 1 if failed else 0


if __name__ == '__main__':
    args = sys.argv[1:]
    if not args or args[0] != '--regen':
        print(__doc__)
        sys.exit(2)
    sys.exit(regen(args[1:]))
