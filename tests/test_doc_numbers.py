"""The run results that docs/examples.md quotes are what the examples print today.

Each quoted number is read out of the page by a pattern that names its place
(a table row, a sentence) and compared, as the script prints it (same digits),
with a run of the command the page gives, with its real settings.  A change
that moves a result then fails here instead of leaving the page wrong; fix
the page with the new number.

float32 training depends on the BLAS kernel's order of summation (issue 34:
``digits_mlp.py --seed 1`` gives 0.9562 under SkylakeX and 0.9596 under
Haswell).  So the page's table "커널에 따라 달라지는 숫자" holds every quoted
run's result under each kernel measured (``tools/blas_kernels.py`` prints
it): under a kernel of the table the run must print that kernel's cell,
under another one (arm64, never measured) a value within the row's range;
where the page quotes the run it quotes the row's range (``0.9562–0.9596``,
one value where all kernels agree).  These tests are marked
``blas_numbers``: tests/test_blas_kernels.py runs them again under a second
kernel.

The quick runs (``sine_rnn.py`` both cells, ``spiral_mlp.py``: seconds) are
always run; the longer ones (``digits_mlp.py --plain`` and seeds 1-5,
``digits_cnn.py``, ``digits_mlp_mpi.py`` with 1 and 2 ranks) are marked
``slow``.  ``digits_mlp.py``'s seed-0 result and ``demo.py``'s numbers are
checked where tests/test_examples.py already runs them.
"""
import os
import re
import subprocess
import sys

import pytest

from _kernels import assert_measured, kernel_table, spread, this_machines_second_kernel
from _subproc import ROOT, python_env

sys.path.insert(0, str(ROOT / 'tools'))
import blas_kernels  # noqa: E402  (tools/: the run list and the table's parsing)

PAGE = ROOT / 'docs' / 'examples.md'


def page():
    return PAGE.read_text(encoding='utf-8')


def quoted(pattern, text=None):
    """The groups of ``pattern``'s one match in docs/examples.md (a failure names the pattern)."""
    found = re.findall(pattern, page() if text is None else text)
    assert len(found) == 1, f'docs/examples.md: {len(found)} matches for {pattern!r}'
    return found[0]


def run_example(script, *args, ranks=1, cwd):
    return blas_kernels.run_example(script, args, ranks, cwd=cwd, env=python_env(
        PYTHONIOENCODING='utf-8', MPLBACKEND='Agg'))


def result(stdout):
    return blas_kernels.result(stdout)


def test_every_quoted_run_is_in_the_kernel_table_and_measured_by_the_tool():
    table = kernel_table()
    assert list(table) == [run[0] for run in blas_kernels.RUNS]
    kernels = [list(row) for row in table.values()]
    assert all(k == kernels[0] for k in kernels) and {'Haswell', 'SkylakeX'} <= set(kernels[0])
    assert all(re.fullmatch(r'\d\.\d+', v) for row in table.values() for v in row.values())
    # the page's table is the tool's output, as printed (so a rerun of the tool replaces it whole)
    assert blas_kernels.markdown(table) in page()


@pytest.mark.blas_numbers
@pytest.mark.parametrize('cell', ['rnn', 'lstm'])
def test_sine_rnn_numbers(cell, tmp_path):
    label = 'sine_rnn.py' + ('' if cell == 'rnn' else ' --cell lstm')
    out = run_example('sine_rnn.py', '--cell', cell, cwd=tmp_path)
    mse = result(out)['test_mse']
    assert_measured(label, mse)
    last = re.findall(r'pre-clip grad norm mean (\S+) max \S+  clipped (\d+/\d+)', out)[-1]
    row = quoted(rf'\| {cell.upper()} \| (\S+) \| (\S+) \| (\d+/\d+) \|')
    assert row == (spread(label), f'{float(last[0]):.2f}', last[1]), out
    summary = quoted(r'테스트 MSE (\S+) \(LSTM (\S+)\)')
    assert summary[0 if cell == 'rnn' else 1] == spread(label)
    baseline = re.search(r'"x_\(t\+1\) = x_t" MSE (\S+)', out).group(1)
    assert quoted(r'가장 단순한 예측의 MSE\((\S+)\)') == baseline


@pytest.mark.blas_numbers
@pytest.mark.parametrize('script, sentence', [
    ('spiral_mlp.py', r'마지막 테스트 정확도는 \*\*(\S+)\*\*입니다'),
    pytest.param('digits_cnn.py', r'30에폭에 테스트 정확도\n\*\*(\S+)\*\*', marks=pytest.mark.slow),
])
def test_accuracy_in_the_summary_table_and_the_text(script, sentence, tmp_path):
    assert_measured(script, result(run_example(script, cwd=tmp_path))['test_accuracy'])
    assert quoted(rf'\| `{re.escape(script)}` \|[^\n]*\| 테스트 정확도 (\S+) \|') == spread(script)
    assert quoted(sentence) == spread(script)


def wrong_images(label, test_images=297):
    """How many test images the page may say the run gets wrong: 'n' or 'low–high'."""
    counts = sorted({round(test_images * (1 - float(v))) for v in kernel_table()[label].values()})
    return str(counts[0]) if len(counts) == 1 else f'{counts[0]}–{counts[-1]}'


@pytest.mark.slow
@pytest.mark.blas_numbers
def test_digits_mlp_plain_and_other_seeds(tmp_path):
    label = 'digits_mlp.py --plain'
    assert_measured(label, result(run_example('digits_mlp.py', '--plain', cwd=tmp_path))[
        'test_accuracy'])
    assert quoted(r'\(`--plain`: (\S+)\) \|') == spread(label)
    assert quoted(r'\(`--plain`: (\S+), 297장 중 \S+장 틀림\)') == spread(label)
    assert quoted(r'\(`--plain`: \S+, 297장 중 (\S+)장 틀림\)') == wrong_images(label)
    seeds = quoted(r'\| 테스트 정확도 \| ([^\n]*) \|').split(' | ')
    assert seeds == [spread(f'digits_mlp.py --seed {seed}') for seed in range(6)]
    for seed in range(1, 6):  # seed 0: tests/test_examples.py
        printed = result(run_example('digits_mlp.py', '--seed', str(seed), cwd=tmp_path))
        assert_measured(f'digits_mlp.py --seed {seed}', printed['test_accuracy'])


@pytest.mark.slow
@pytest.mark.blas_numbers
def test_digits_mlp_mpi_accuracy(tmp_path):
    two = result(run_example('digits_mlp_mpi.py', ranks=2, cwd=tmp_path))['test_accuracy']
    alone = result(run_example('digits_mlp_mpi.py', cwd=tmp_path))['test_accuracy']
    assert_measured('mpiexec -n 2 digits_mlp_mpi.py', two)
    assert_measured('digits_mlp_mpi.py', alone)
    assert quoted(r'\| 테스트 정확도 (\S+) \(혼자: (\S+)\) \|') == (
        spread('mpiexec -n 2 digits_mlp_mpi.py'), spread('digits_mlp_mpi.py'))


# =============================================================================
# Numbers the tutorial pages quote in their prose from a step's recorded output
# =============================================================================
# (page under docs/ (or ../steps/README.md), pattern with one group per quoted number, step, patterns that read
# each number from tests/golden/steps/<step>.txt, formats the page rounds them to).
# The golden outputs are DEZERO_KR_FAST=1 runs, checked by tests/test_steps.py.
GOLDEN_QUOTES = [
    ('tutorial/stage3.md', r'출력의 `5회`에서 `y = (\S+)`\)', 'step33', [r'  5회: .* y = (\S+)$'], ['.4e']),
    ('tutorial/stage4.md', r'손실이 \$(\S+)\$에서 \$(\S+)\$로 떨어지고', 'step42',
     [r' 0회: loss = (\S+)', r' 10회: loss = (\S+)'], ['.1f', '.2f']),
    ('tutorial/stage4.md', r'같은 값\(\$(\S+)\$\)과 기울기를 냅니다', 'step42',
     [r'값 (\S+) == F.mean_squared_error'], ['.6f']),
    ('tutorial/stage4.md', r'첫 에폭의 평균 손실 \$(\S+)\$은', 'step48',
     [r'epoch   1: 평균 손실 (\S+)'], ['.2f']),
    ('tutorial/stage4.md', r'훈련 정확도가 \$(\S+)\$입니다', 'step48',
     [r'훈련 데이터 정확도: (\S+)'], ['.2f']),
    ('tutorial/stage4.md', r'테스트 정확도가 \$(\S+)\$까지 오르는', 'step51',
     [r'epoch  5: .*테스트 정확도 (\S+)'], ['.2f']),
    ('tutorial/stage5.md', r'정확도가 달라지고\(\$(\S+)\$, \$(\S+)\$, \$(\S+)\$\)', 'step54',
     [r'세 번 평가 \(매번 다른 뉴런이 꺼진다\): (\S+),', r'꺼진다\): \S+, (\S+),',
      r'꺼진다\): \S+, \S+, (\S+)$'], ['.2f'] * 3),
    ('tutorial/stage5.md', r'`test_mode\(\)`로 평가하면 늘 \$(\S+)\$입니다', 'step54',
     [r'늘 같은 값\) : (\S+),'], ['.4f']),
    ('tutorial/beyond.md', r'정답 클래스 1에서 손실 \$(\S+)\$', 'step63', [r'loss = (\S+)'], ['.6f']),
    ('tutorial/stage5.md', r'평균 제곱 오차는 \$(\S+)\$입니다\(3에폭 모델\)', 'step59',
     [r'평균 제곱 오차: (\S+)'], ['.4f']),
    ('tutorial/stage5.md', r'첫 예측\(\$x = 0\$: \$(\S+)\$, 정답 \$(\S+)\$\)', 'step59',
     [r'x =  0.000: .*예측 +(\S+),', r'x =  0.000: .*다음 값 +(\S+)$'], ['.2f', '.1f']),
    ('../steps/README.md', r'손실 (\S+), (\S+) vs \S+ \|', 'step63',
     [r'loss = (\S+)', r'노름 (\S+), 상한'], ['.6f', '.3f']),
]


@pytest.mark.parametrize('page_name, pattern, step, golden_patterns, formats', GOLDEN_QUOTES,
                         ids=[f'{q[0]}:{q[2]}' for q in GOLDEN_QUOTES])
def test_tutorial_prose_quotes_the_recorded_output(page_name, pattern, step, golden_patterns, formats):
    text = (ROOT / 'docs' / page_name).read_text(encoding='utf-8')
    found = re.findall(pattern, text.replace('\n', ' '))
    assert len(found) == 1, f'docs/{page_name}: {len(found)} matches for {pattern!r}'
    shown = found[0] if isinstance(found[0], tuple) else (found[0],)
    golden = (ROOT / 'tests' / 'golden' / 'steps' / f'{step}.txt').read_text(encoding='utf-8')
    recorded = []
    for golden_pattern, fmt in zip(golden_patterns, formats):
        m = re.search(golden_pattern, golden, re.MULTILINE)
        assert m, f'{step}.txt has no line matching {golden_pattern!r}'
        recorded.append(format(float(m.group(1)), fmt))
    assert list(shown) == recorded, f'docs/{page_name} says {shown}, {step} printed {recorded}'


@pytest.mark.blas_numbers
def test_getting_started_first_training_prints_what_the_page_shows(tmp_path):
    text = (ROOT / 'docs' / 'getting_started.md').read_text(encoding='utf-8')
    section = text.split('## 첫 학습', 1)[1]
    code = section.split('```python\n', 1)[1].split('```', 1)[0]
    shown = section.split('```text\n', 1)[1].split('```', 1)[0]
    proc = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, capture_output=True, text=True,
                          encoding='utf-8', timeout=300, env=python_env(PYTHONIOENCODING='utf-8'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == shown.splitlines()


def test_stage2_file_table_names_where_each_op_lives():
    # docs/tutorial/stage2.md's table of the package's files: each op it lists is defined there
    import dezero_kr.functions_math as functions_math
    import dezero_kr.operators as operators
    text = (ROOT / 'docs' / 'tutorial' / 'stage2.md').read_text(encoding='utf-8')
    rows = dict(re.findall(r'^\| `dezero_kr/(\w+)\.py` \| ([^\n]*) \|$', text, re.MULTILINE))
    for module, row in (('operators', rows['operators']), ('functions_math', rows['functions_math'])):
        names = [n for n in re.findall(r'`(\w+)`', row) if n[0].islower()]  # ops, not classes
        where = operators if module == 'operators' else functions_math
        assert names and all(getattr(where, n).__module__ == where.__name__ for n in names), (module, names)
    assert not re.search(r'reshape|`sum`|행렬곱', rows['core'])


def test_tutorial_index_promises_what_the_stages_keep():
    # "자주 하는 실수" may be promised for every step only when every step section has one
    tutorial = ROOT / 'docs' / 'tutorial'
    index = (tutorial / 'index.md').read_text(encoding='utf-8')
    promise = index.split('단계마다', 1)[1].split('적었습니다', 1)[0]
    sections = []
    for page in sorted(tutorial.glob('stage*.md')) + [tutorial / 'beyond.md']:
        sections += re.split(r'^## (?=\d+단계)', page.read_text(encoding='utf-8'), flags=re.M)[1:]
    with_mistakes = sum('**자주 하는 실수.**' in section for section in sections)
    assert sections and with_mistakes > 0
    if with_mistakes < len(sections):
        assert '자주 하는 실수' not in promise, (
            f'docs/tutorial/index.md promises 자주 하는 실수 in every step; {with_mistakes} of '
            f'{len(sections)} step sections have one')


@pytest.mark.blas_numbers
def test_stage5_rnn_paragraph_quotes_tools_rnn_spikes(tmp_path):
    # docs/tutorial/stage5.md, step 59: the jump in epoch 2, its gradient norms, and what a
    # smaller learning rate and clipping do, all from tools/rnn_spikes.py (3 epochs)
    proc = subprocess.run([sys.executable, str(ROOT / 'tools' / 'rnn_spikes.py')], cwd=tmp_path,
                          capture_output=True, text=True, encoding='utf-8', timeout=600,
                          env=python_env(PYTHONIOENCODING='utf-8'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = {}
    for name, epoch, loss, norm in re.findall(r'RESULT (\w+) epoch (\d) loss (\S+) max_norm (\S+)',
                                               proc.stdout):
        runs.setdefault(name, []).append((float(loss), float(norm)))
    text = (ROOT / 'docs' / 'tutorial' / 'stage5.md').read_text(encoding='utf-8').replace('\n', ' ')

    plain = runs['plain']
    assert '$0.035 \\to 0.188 \\to 0.0077$로, **2에폭에 다섯 배로' in text
    assert [f'{loss:.3g}' for loss, _ in plain] == ['0.035', '0.188', '0.00766']
    assert round(plain[1][0] / plain[0][0]) == 5
    assert f'1에폭에는 최대 ${plain[0][1]:.0f}$, 손실이 튄 2에폭에는 최대 ${plain[1][1]:.0f}$' in text
    small = runs['small_lr']
    assert ('$0.053 \\to 0.021 \\to 0.0085$로 튀지 않습니다' in text
            and [f'{loss:.2g}' for loss, _ in small] == ['0.053', '0.021', '0.0085'])
    assert small[0][0] > small[1][0] > small[2][0]
    clip = runs['clip']
    assert ('$0.036 \\to 0.171 \\to 0.046$으로' in text
            and [f'{loss:.3g}' for loss, _ in clip] == ['0.0365', '0.171', '0.0461'])
    assert clip[1][0] > 4 * clip[0][0]  # clipping leaves the jump


@pytest.mark.blas_numbers
def test_the_kernel_tool_measures_each_kernel_that_runs_once(monkeypatch):
    # tools/blas_kernels.py, shortened to its first run: a kernel asked for twice is one column,
    # named by what threadpoolctl reports (a preset OPENBLAS_CORETYPE is asked for as it is)
    kernel = this_machines_second_kernel() or os.environ['OPENBLAS_CORETYPE']
    monkeypatch.setattr(blas_kernels, 'RUNS', blas_kernels.RUNS[:1])
    ran = blas_kernels.kernel_that_runs(blas_kernels.environment(kernel))
    table, notes = blas_kernels.measure([kernel, kernel])
    assert list(table) == ['spiral_mlp.py'] and list(table['spiral_mlp.py']) == [ran]
    replaced = [] if ran.lower() == kernel.lower() else [f'OPENBLAS_CORETYPE={kernel} runs {ran}']
    assert notes == replaced * 2
    assert blas_kernels.markdown(table).splitlines()[0] == f'| 실행 | {ran} |'
