"""The tutorial's notebooks (docs/tutorial/notebooks/stageN.ipynb) cannot go stale.

``docs/make_notebooks.py`` builds one notebook per stage from the step scripts and their
golden outputs.  These tests check that

* the committed notebooks are exactly what the generator makes now (so a changed step or
  golden file without ``python docs/make_notebooks.py`` fails here);
* every step 01-66 is in one notebook, its code cells are the whole script, and the output
  stored under it is its golden file (``file.py:line`` made neutral);
* the first cell asks for no address to clone from (none is public): the setup cell finds
  the repository's root from the notebook's folder or, on Colab, an unpacked zip below;
* the code imports nothing a reader who cloned the repository lacks (no step imports another
  step, nothing from tests/, tools/, docs/ or the exercise checker);
* executed with nbclient (kernel ``python3``), each step prints exactly its stored output,
  no cell fails, and only a step's main cell prints.

Executing all six notebooks takes about 35 s on a busy 2-core machine (stage 4 and 5
about 10 s each; the whole CI run is about 8-9 minutes), so every stage runs in full.
"""
import ast
import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from _subproc import ROOT, python3_kernel

DOCS = ROOT / 'docs'
spec = importlib.util.spec_from_file_location('make_notebooks', DOCS / 'make_notebooks.py')
make_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_notebooks)

STAGES = sorted(make_notebooks.STAGES)
STEP = re.compile(r'`steps/(step\d\d)\.py`')


def committed(name):
    import nbformat
    return nbformat.read(make_notebooks.OUT / f'{name}.ipynb', as_version=4)


def cells_by_step(nb):
    """{step name: [its code cells]} in order (the intro and setup cells are left out)."""
    steps, current = {}, None
    for cell in nb.cells:
        if cell.cell_type == 'markdown':
            found = STEP.search(cell.source)
            if found:
                current = found.group(1)
                steps[current] = []
        elif current is not None:
            steps[current].append(cell)
    return steps


def stdout_of(cells):
    return ''.join(o.text for c in cells for o in c.outputs
                   if o.output_type == 'stream' and o.name == 'stdout')


@pytest.mark.parametrize('name', STAGES)
def test_committed_notebook_is_what_the_generator_makes(name):
    path = make_notebooks.OUT / f'{name}.ipynb'
    assert path.read_text(encoding='utf-8') == make_notebooks.text_of(
        make_notebooks.notebook(name)), f'run: python docs/make_notebooks.py ({path.name})'


def test_every_step_is_in_one_notebook():
    scripts = sorted(p.stem for p in (ROOT / 'steps').glob('step[0-9][0-9].py'))
    found = [s for name in STAGES for s in cells_by_step(committed(name))]
    assert sorted(found) == scripts and len(found) == len(set(found))


def _without_blank_lines(text):
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize('name', STAGES)
def test_cells_are_the_script_and_its_golden_output(name):
    for step, cells in cells_by_step(committed(name)).items():
        assert cells[0].source.endswith('%reset -f'), step  # a chapter starts afresh
        code = '\n'.join(c.source for c in cells[1:])
        script = (ROOT / 'steps' / f'{step}.py').read_text(encoding='utf-8')
        body = script.split('"""', 2)[2]  # the script after its docstring
        assert _without_blank_lines(code) == _without_blank_lines(body), step
        golden = (ROOT / 'tests' / 'golden' / 'steps' / f'{step}.txt').read_text(encoding='utf-8')
        assert stdout_of(cells[-1:]) == make_notebooks.normalise(golden), step
        assert all(not c.outputs for c in cells[:-1]), step


def test_the_file_line_in_a_warning_is_stored_neutral():
    golden = (ROOT / 'tests' / 'golden' / 'steps' / 'step66.txt').read_text(encoding='utf-8')
    assert 'bool() at step66.py:' in golden
    stored = stdout_of(cells_by_step(committed('beyond'))['step66'])
    assert 'bool() at <파일>:<줄>' in stored and '.py:' not in stored


ALLOWED_REPO_IMPORTS = {'dezero_kr', 'mydezero', '_common'}
FORBIDDEN = re.compile(r'^(tests?|tools|docs|exercises|check|examples|bench)$')
# Steps that still import another step's module (the scripts, not the notebooks, do it;
# in a notebook it works because steps/ is on the path).  This list may only shrink:
# each step is meant to be a chapter of its own.
STEP_IMPORTS_LEFT = {('step26', 'step24'), ('step33', 'step28'), ('step33', 'step29'),
                     ('step38', 'step37'), ('step39', 'step37'), ('step40', 'step37'),
                     ('step41', 'step37'), ('step60', 'step59')}


def _imported(cell):
    """Top-level names of the modules a code cell imports (magics left out)."""
    tree = ast.parse('\n'.join(line for line in cell.source.splitlines()
                               if not line.startswith('%')))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, cell.source[:80]
            yield node.module.split('.')[0]


@pytest.mark.parametrize('name', STAGES)
def test_code_imports_nothing_a_reader_of_the_clone_lacks(name):
    nb = committed(name)
    assert '저장소 폴더에서 엽니다' in nb.cells[0].source
    assert 'pip install -e .' in nb.cells[0].source and 'Colab' in nb.cells[0].source
    for step, cells in cells_by_step(nb).items():
        for top in {t for cell in cells for t in _imported(cell)}:
            assert not FORBIDDEN.match(top), (step, top)
            if re.fullmatch(r'step\d\d', top):
                assert (step, top) in STEP_IMPORTS_LEFT, f'{step} imports {top}'
                continue
            local = (ROOT / f'{top}.py').exists() or (ROOT / 'steps' / f'{top}.py').exists()
            assert not local or top in ALLOWED_REPO_IMPORTS, (step, top)


# There is no public address to clone from: the notebooks must not ask for one.
PLACEHOLDERS = re.compile(r'git clone|저장소_주소|<(?:url|URL|주소)>|github\.com/[^/\s]+/dezero')


@pytest.mark.parametrize('name', STAGES)
def test_no_placeholder_address_remains(name):
    nb = committed(name)
    for cell in nb.cells:
        assert not PLACEHOLDERS.search(cell.source), cell.source[:300]
    generator = (DOCS / 'make_notebooks.py').read_text(encoding='utf-8')
    assert not PLACEHOLDERS.search(generator)


def _run_setup(cwd):
    code = make_notebooks.SETUP + '\nprint(sys.path[0])\n'
    return subprocess.run([sys.executable, '-c', code], cwd=cwd, capture_output=True,
                          text=True, encoding='utf-8', timeout=60)


def test_setup_cell_finds_the_root_above_or_right_below_and_says_what_to_do_otherwise(
        tmp_path):
    # Jupyter starts in the notebook's folder: the root is above it
    done = _run_setup(make_notebooks.OUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(ROOT.resolve() / 'steps')
    # Colab starts in /content, where the uploaded zip unpacked a folder
    (tmp_path / 'content' / 'sample_data').mkdir(parents=True)
    unpacked = tmp_path / 'content' / 'dezero_kr-main'
    (unpacked / 'steps').mkdir(parents=True)
    (unpacked / 'steps' / 'step01.py').write_text('', encoding='utf-8')
    done = _run_setup(tmp_path / 'content')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(unpacked.resolve() / 'steps')
    # anywhere else: a message that says what to do, not a wrong path
    (tmp_path / 'elsewhere').mkdir()
    done = _run_setup(tmp_path / 'elsewhere')
    assert done.returncode == 1
    assert '저장소(steps/ 폴더)를 찾지 못했습니다: 저장소 폴더 안에서 노트북을 여세요' in done.stderr


@pytest.mark.parametrize('name', STAGES)
def test_executed_notebook_prints_each_steps_golden_output(name, tmp_path, monkeypatch):
    nbclient = pytest.importorskip('nbclient')
    pytest.importorskip('ipykernel')
    python3_kernel(tmp_path, monkeypatch)
    # the kernel runs in a scratch folder (the steps write pictures there) that has a copy
    # of steps/, which the setup cell finds as a reader's clone would have it
    work = tmp_path / 'work'
    shutil.copytree(ROOT / 'steps', work / 'steps',
                    ignore=shutil.ignore_patterns('__pycache__', '*.png', '*.svg', '*.dot'))
    monkeypatch.delenv('DEZERO_KR_FAST', raising=False)  # the setup cell sets it
    nb = committed(name)
    nbclient.NotebookClient(nb, kernel_name='python3', timeout=300,
                            resources={'metadata': {'path': str(work)}}).execute()
    stored = cells_by_step(committed(name))
    for cell in nb.cells:
        errors = [o for o in cell.get('outputs', []) if o.output_type == 'error']
        assert not errors, (cell.source[:200], errors)
    for step, cells in cells_by_step(nb).items():
        assert stdout_of(cells[:-1]) == '', step  # only the main block prints
        assert make_notebooks.normalise(stdout_of(cells)) == stdout_of(stored[step]), step
