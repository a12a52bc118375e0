"""The tutorial's pages for learners and its page for teachers (docs/tutorial/teacher.md).

* A learner's page carries no maintainer notes: no pointers to ``tests/`` or ``tools/``
  and no "the tests run this every time" (those live on the teacher's page, in its table
  of where the numbers come from).  Code boxes that ``literalinclude`` a golden file are
  directives, not text, and are not counted.
* The teacher's page is linked from the tutorial's index and its toctree, cites the book
  publicly, calls its study times estimates, maps every step 01-66 to the book (steps 1-60
  are the book's, stages 1-5 its 고지 1-5) and to a page, and shows the class commands.
* Where readers are told to read (notebooks, the site's build command) is linked from
  steps/README.md and the tutorial's index.
* ``steps/_common.py`` says how many helpers it has, and has that many.
"""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / 'docs' / 'tutorial'
TEACHER = TUTORIAL / 'teacher.md'

# mydezero.md is written by `python steps/mydezero_at.py --docs`; its one sentence about
# tests/test_mydezero.py is that script's text.
GENERATED = {'mydezero.md'}
LEARNER_PAGES = sorted([p for p in TUTORIAL.glob('*.md')
                        if p.name not in GENERATED | {'teacher.md'}]
                       + [ROOT / 'docs' / 'glossary.md'])
MAINTAINER_NOTE = re.compile(r'(?<![\w/.])(?:tests|tools)/|테스트가 매번|테스트\(`tests')


def maintainer_notes(path):
    """[(line number, line)] of a page's text that points a learner at tests/ or tools/."""
    hits = []
    for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        if line.lstrip().startswith('```{literalinclude}'):
            continue  # a directive: the box shows the file's content, not its path
        if MAINTAINER_NOTE.search(line):
            hits.append((number, line.strip()))
    return hits


def test_the_detector_finds_the_notes_it_was_written_for(tmp_path):
    page = tmp_path / 'probe.md'
    page.write_text('정답은 테스트(`tests/test_exercises.py`)가 매번 실행해 확인합니다.\n'
                    '`tools/rnn_spikes.py`로 재 보면\n'
                    '```{literalinclude} ../../tests/golden/steps/step01.txt\n'
                    '`dezero_kr/tests.py`와 steps/README.md는 괜찮다\n', encoding='utf-8')
    assert [n for n, _ in maintainer_notes(page)] == [1, 2]


@pytest.mark.parametrize('page', LEARNER_PAGES, ids=lambda p: p.name)
def test_learner_pages_have_no_maintainer_notes(page):
    assert not maintainer_notes(page), maintainer_notes(page)


def _text(path):
    return path.read_text(encoding='utf-8')


def test_teacher_page_is_linked_from_the_index_and_its_toctree():
    index = _text(TUTORIAL / 'index.md')
    assert '](teacher.md)' in index
    toctree = re.search(r'```\{toctree\}\n(.*?)```', index, re.S).group(1)
    assert 'teacher' in toctree.split()


def test_teacher_page_cites_the_book_and_calls_its_times_estimates():
    text = _text(TEACHER)
    for part in ('『밑바닥부터 시작하는 딥러닝 3』', '사이토 고키', '한빛미디어', '2020'):
        assert part in text, part
    times = text.split('## 고지별 학습 시간')[1].split('\n## ')[0]
    assert '(추정)' in times and '**추정**' in times and '재어 본 값이 아니라' in times
    assert '준비할 것' in text


def _rows(section):
    """The body rows of the first table in ``section``, as lists of cells."""
    table = re.search(r'^\|.*?(?=\n[^|]|\Z)', section, re.S | re.M).group()
    lines = table.splitlines()
    return [[c.strip() for c in ln.strip('|').split('|')] for ln in lines[2:]]


def _steps(cell):
    """'01~10' -> range(1, 11); '65' -> range(65, 66)."""
    first, _, last = cell.partition('~')
    return range(int(first), int(last or first) + 1)


STAGE_STEPS = {'stage1.md': (1, 10), 'stage2.md': (11, 24), 'stage3.md': (25, 36),
               'stage4.md': (37, 51), 'stage5.md': (52, 60), 'beyond.md': (61, 64)}


def test_teacher_page_maps_every_step_to_the_book_and_a_page():
    text = _text(TEACHER)
    rows = _rows(text.split('## 단계와 책의 장')[1])
    covered = [n for row in rows for n in _steps(row[0])]
    scripts = sorted(int(p.stem[4:]) for p in (ROOT / 'steps').glob('step[0-9][0-9].py'))
    assert covered == scripts == list(range(1, 67))
    for row in rows:
        steps = _steps(row[0])
        if steps[-1] <= 60:  # the book's steps: same numbers, its 고지 = our stage
            stage = (steps[0] > 10) + (steps[0] > 24) + (steps[0] > 36) + (steps[0] > 51) + 1
            assert row[1] == f'제{stage}고지 {steps[0]}~{steps[-1]}단계', row
            page = f'stage{stage}.md'
            assert STAGE_STEPS[page] == (steps[0], steps[-1]), row
            assert f'](stage{stage}.md)' in row[2], row
        else:
            assert row[1].startswith('책에 없음'), row
    pages = {re.search(r'\]\(([^)]+)\)', row[2]).group(1) for row in rows}
    for page in pages:
        assert (TUTORIAL / page).resolve().is_file(), page


def test_teacher_page_counts_each_stages_exercises():
    import sys
    sys.path.insert(0, str(ROOT / 'steps'))
    import exercises
    count = {}
    for ex in exercises.all_exercises():
        group = ex.id.split('.')[0]
        count[group] = count.get(group, 0) + 1
    text = _text(TEACHER)
    rows = _rows(text.split('## 고지별 학습 시간')[1])
    said = {re.search(r'\]\(([^)]+)\)', row[0]).group(1): row[2] for row in rows}
    assert said == {'stage1.md': str(count['stage1']), 'stage2.md': str(count['stage2']),
                    'stage3.md': str(count['stage3']),
                    'stage4.md': f'{count["stage4_tensors"]} + {count["stage4"]}',
                    'stage5.md': str(count['stage5']), 'beyond.md': str(count['stage6_beyond']),
                    'theory.md': str(count['theory'])}


def test_teacher_page_shows_the_class_commands():
    text = _text(TEACHER)
    assert re.search(r'python steps/mydezero_at\.py \d+ \S+ --blank\n', text)
    assert re.search(r'python steps/mydezero_at\.py \d+ \S+ --blank --keep\n', text)
    assert re.search(r'python steps/check\.py package \d+ \S+\n', text)
    assert re.search(r'python steps/check\.py stage\d\.\d \S+\.py\n', text)


def test_the_index_lists_step_66_and_where_to_read():
    index = _text(TUTORIAL / 'index.md')
    assert re.search(r'^\| \[[^]]+\]\(\.\./static_graph\.md\) \| 66 \|', index, re.M)
    for name in ('stage1', 'stage2', 'stage3', 'stage4', 'stage5', 'beyond'):
        assert f'](notebooks/{name}.ipynb)' in index, name
        assert (TUTORIAL / 'notebooks' / f'{name}.ipynb').is_file()
    readme = _text(ROOT / 'steps' / 'README.md')
    assert '](../docs/tutorial/notebooks/stage1.ipynb)' in readme
    assert '](../docs/tutorial/teacher.md)' in readme
    build = 'python -m sphinx -b html docs docs/_build/html'
    assert build in index and build in readme


KOREAN_COUNT = {'한': 1, '두': 2, '세': 3, '네': 4, '다섯': 5, '여섯': 6, '일곱': 7, '여덟': 8,
                '아홉': 9, '열': 10, '열한': 11, '열두': 12}


def test_common_says_how_many_helpers_it_has():
    doc = ast.get_docstring(ast.parse(_text(ROOT / 'steps' / '_common.py')))
    said = re.search(r'(\S+) 가지만 한다', doc).group(1)
    bullets = [ln for ln in doc.splitlines() if ln.startswith('* ')]
    assert KOREAN_COUNT[said] == len(bullets), (said, bullets)
