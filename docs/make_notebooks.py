"""Build one Jupyter notebook per tutorial stage from the step scripts.

The tutorial pages show their code with ``literalinclude``, so they show no code
when read on GitHub or in an editor.  The notebooks here do: for every step of a
stage, a markdown cell with the step's docstring (its title and explanation), the
step's code split into cells (imports and constants, each function or class, and
the ``if __name__ == '__main__':`` block), and as the output of that last cell the
step's recorded output ``tests/golden/steps/stepNN.txt`` (the run with
``DEZERO_KR_FAST=1``).  Only that stdout is stored: it is the same on every
machine (no paths, timings or memory addresses; what a step writes to stderr,
e.g. which picture it saved, is left out), except a ``file.py:line`` that names
where code is (a cell has another file name): it is stored as ``<파일>:<줄>``.

Each step is a chapter: before its code, a cell ``%reset -f`` forgets every name
the previous steps made, so a step can use nothing from another (as the scripts
never import each other).  The first code cell finds the repository's root (the
folder with ``steps/``: the current folder or one above it, or a folder right below
it, where Colab unpacks an uploaded zip), puts its ``steps/`` on ``sys.path`` and
sets ``DEZERO_KR_FAST=1``; the first markdown cell says to open the notebook from
the repository's folder (no public address exists to clone from), also on Colab.

    python docs/make_notebooks.py            # write docs/tutorial/notebooks/*.ipynb
    python docs/make_notebooks.py --check    # exit 1 if a committed notebook differs

``tests/test_notebooks.py`` checks that the committed notebooks are what this
script makes, and executes them with nbclient comparing each step's output with
its golden file.
"""
import ast
import json
import pathlib
import re
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
STEPS = ROOT / 'steps'
GOLDEN = ROOT / 'tests' / 'golden' / 'steps'
OUT = DOCS / 'tutorial' / 'notebooks'

# notebook name -> (title, page, first step, last step)
STAGES = {
    'stage1': ('제1고지: 미분 자동 계산', 'stage1.md', 1, 10),
    'stage2': ('제2고지: 자연스러운 코드로', 'stage2.md', 11, 24),
    'stage3': ('제3고지: 고차 미분', 'stage3.md', 25, 36),
    'stage4': ('제4고지: 신경망 만들기', 'stage4.md', 37, 51),
    'stage5': ('제5고지: DeZero의 도전', 'stage5.md', 52, 60),
    'beyond': ('60단계 너머', 'beyond.md', 61, 66),
}

BOOK = '『밑바닥부터 시작하는 딥러닝 3』(사이토 고키, 한빛미디어, 2020)'

INTRO = '''\
# {title} ({first:02d}~{last:02d}단계)

{book}의 흐름을 따라 자동 미분 프레임워크를 만드는 이 저장소의 스크립트
`steps/step{first:02d}.py`~`steps/step{last:02d}.py`를 단계마다 그대로 담은 노트북입니다.
설명은 튜토리얼 [{page}](../{page})에 있습니다. 아래에 보이는 출력은 빠른 설정
(`DEZERO_KR_FAST=1`: 학습하는 단계의 반복 횟수를 줄임)으로 실행한 결과이고, 저장소에 기록된 각 단계의
출력과 같습니다. 그림을 그리는 단계는 그림 파일을 현재 폴더에 쓰고, 그 알림은 여기에 싣지 않았습니다.

**저장소 폴더에서 엽니다.** 노트북의 코드는 저장소의 `steps/` 폴더(23단계부터 직접 만드는 패키지
`steps/mydezero/`와 도우미 `_common.py`)와 기준 패키지 `dezero_kr`를 씁니다. 그래서 이 노트북은 받아 둔
저장소 폴더(사본이나 압축을 푼 폴더) 안에서 엽니다. 아래 준비 칸이 현재 폴더와 그 위의 폴더들, 그리고 현재
폴더 바로 아래의 폴더들에서 `steps/`가 있는 저장소의 루트를 찾습니다(설치하지 않아도 저장소의
`dezero_kr`를 씁니다).

* 내 컴퓨터: 저장소의 루트에서 `pip install -e .`와 `pip install notebook`을 한 번 하고,
  `jupyter notebook docs/tutorial/notebooks/{name}.ipynb`로 엽니다.
* Colab: 저장소 폴더를 압축한 zip 파일을 왼쪽 "파일" 창에 올린 뒤, 맨 위에 코드 칸을 하나 더 만들어
  다음을 먼저 실행합니다(올린 zip을 현재 폴더에 풉니다).

  ```
  !for f in *.zip; do unzip -q -o "$f"; done
  ```

**차례.** 단계마다 설명(마크다운), 코드, 실행 결과가 이어집니다. 각 단계는 한 장(章)이라서 다른 단계의
코드를 쓰지 않습니다: 단계 앞의 `%reset -f` 칸이 앞 단계에서 만든 이름을 모두 지웁니다. 위에서 아래로
차례로 실행하거나, 준비 칸을 실행한 뒤 원하는 단계부터 실행합니다.
'''

SETUP = '''\
# 준비: 저장소의 steps/ 폴더를 찾아 import 경로에 넣는다 (23단계부터 mydezero와 _common을 쓴다)
import os
import pathlib
import sys

here = pathlib.Path.cwd().resolve()
# 저장소의 루트: 현재 폴더나 그 위 (Jupyter는 노트북이 있는 폴더에서 시작한다)
found = [p for p in (here, *here.parents) if (p / 'steps' / 'step01.py').is_file()]
if not found:  # Colab: 올린 zip을 푼 폴더가 현재 폴더 바로 아래에 있다
    found = sorted(p for p in here.iterdir() if (p / 'steps' / 'step01.py').is_file())
if not found:
    raise RuntimeError(f'{here}에서 저장소(steps/ 폴더)를 찾지 못했습니다: 저장소 폴더 안에서 '
                       '노트북을 여세요 (첫 칸의 "저장소 폴더에서 엽니다").')
sys.path.insert(0, str(found[0] / 'steps'))
sys.path.append(str(found[0]))  # 설치하지 않았어도(pip install -e . 전이라도) 저장소의 dezero_kr를 찾도록
os.environ['DEZERO_KR_FAST'] = '1'  # 빠른 설정 (기록된 출력과 같은 숫자). 책과 같은 설정은 '0'
sys.argv = sys.argv[:1]  # 스크립트를 인자 없이 실행한 것처럼 (35, 51, 52단계가 인자를 본다)
sys.setrecursionlimit(1000)  # 파이썬의 기본값 (Jupyter는 더 높인다; 07단계가 이 한도에 걸린다)'''

# What differs between the script and the notebook's cells: where a line of code is
# (a step's warning names ``step66.py:105``; in a notebook it is a cell's file name).
_WHERE = re.compile(r'\b[\w-]+\.py:\d+\b')


def normalise(output):
    """A step's stdout as the notebook stores it: file:line made neutral."""
    return _WHERE.sub('<파일>:<줄>', output)


RESET = '# 새 장: 앞 단계에서 만든 이름을 모두 지운다 (단계는 서로의 코드를 쓰지 않는다)\n%reset -f'


def step_name(number):
    return f'step{number:02d}'


def _node_start(node, lines):
    """First line (0-based) of a top-level node, with its decorators and the comment
    lines right above it."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, 'decorator_list', [])]) - 1
    while start > 0 and lines[start - 1].lstrip().startswith('#'):
        start -= 1
    return start


def _kind(node):
    """'own' for a statement that gets a cell of its own (a function, a class, the
    main block), 'other' for the rest (runs of them share a cell)."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
        return 'own'
    if isinstance(node, ast.If) and '__main__' in ast.unparse(node.test):
        return 'own'
    return 'other'


def split_script(source):
    """(docstring, [code chunk, ...]) of a step script.

    The chunks follow the top-level statements: one for each function or class
    (with its comments), one for each run of other statements (imports, constants),
    and the ``if __name__ == '__main__':`` block last.  Joined they are the script
    without its docstring.
    """
    tree = ast.parse(source)
    lines = source.splitlines()
    body = tree.body
    doc = ast.get_docstring(tree, clean=True)
    if doc is None:
        raise ValueError('a step script starts with its docstring')
    starts, previous = [], None
    for node in body[1:]:
        kind = _kind(node)
        if kind == 'own' or previous != 'other':
            starts.append(_node_start(node, lines))
        previous = kind
    starts[0] = body[0].end_lineno  # the first chunk starts right after the docstring
    ends = starts[1:] + [len(lines)]
    chunks = ['\n'.join(lines[a:b]).strip('\n') for a, b in zip(starts, ends)]
    return doc, [c for c in chunks if c]


def _markdown(text):
    return {'cell_type': 'markdown', 'metadata': {}, 'source': _source(text)}


def _code(text, output=None):
    outputs = []
    if output:
        outputs.append({'name': 'stdout', 'output_type': 'stream', 'text': _source(output)})
    return {'cell_type': 'code', 'execution_count': None, 'metadata': {},
            'outputs': outputs, 'source': _source(text)}


def _source(text):
    """A cell's text as nbformat stores it: lines keeping their newline."""
    return text.splitlines(keepends=True)


# characters markdown (and the maths of Jupyter and GitHub, ``$``) would read in prose
_SPECIAL = re.compile(r'([\\`*_\[\]<>$|~])')


def _escape(line):
    """A docstring line as markdown shows it literally: special characters escaped, but a
    leading ``* `` stays a list bullet and a line indented four spaces (a code example in
    the docstring, which markdown shows as code) stays as it is."""
    if line.startswith('    '):
        return line
    bullet = re.match(r'(\s*)\* ', line)
    head = bullet.group() if bullet else ''
    body = _SPECIAL.sub(r'\\\1', line[len(head):])
    if not head and body.startswith('#'):
        body = '\\' + body
    return head + body


def _step_heading(doc, number):
    first, _, rest = doc.partition('\n')
    text = '\n'.join(_escape(line) for line in rest.strip().splitlines())
    return f'## {_escape(first.strip())}\n\n`steps/{step_name(number)}.py`\n\n{text}\n'


def step_cells(number):
    """The cells of one step: heading and explanation, ``%reset -f``, the code; the
    last code cell carries the step's recorded output."""
    source = (STEPS / f'{step_name(number)}.py').read_text(encoding='utf-8')
    doc, chunks = split_script(source)
    if not chunks[-1].startswith("if __name__ == '__main__':"):
        raise ValueError(f'{step_name(number)}: the script must end with its main block')
    golden = normalise((GOLDEN / f'{step_name(number)}.txt').read_text(encoding='utf-8'))
    cells = [_markdown(_step_heading(doc, number)), _code(RESET)]
    cells += [_code(chunk) for chunk in chunks[:-1]]
    cells.append(_code(chunks[-1], golden))
    return cells


def notebook(name):
    """The notebook (a dict in nbformat 4) of one stage."""
    title, page, first, last = STAGES[name]
    cells = [_markdown(INTRO.format(title=title, first=first, last=last, page=page,
                                    book=BOOK, name=name)),
             _code(SETUP)]
    for number in range(first, last + 1):
        cells += step_cells(number)
    return {'cells': cells,
            'metadata': {'kernelspec': {'display_name': 'Python 3', 'language': 'python',
                                        'name': 'python3'},
                         'language_info': {'name': 'python'}},
            'nbformat': 4, 'nbformat_minor': 4}


def text_of(nb):
    """The file's text: stable key order and indentation, so a change shows as a
    readable diff."""
    return json.dumps(nb, ensure_ascii=False, indent=1, sort_keys=True) + '\n'


def _write_atomically(path, text):
    tmp = path.with_name(path.name + '.tmp')
    tmp.write_text(text, encoding='utf-8')
    tmp.replace(path)


def main(argv):
    check = argv == ['--check']
    if argv and not check:
        print('usage: python docs/make_notebooks.py [--check]', file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    stale = []
    for name in STAGES:
        path = OUT / f'{name}.ipynb'
        text = text_of(notebook(name))
        old = path.read_text(encoding='utf-8') if path.exists() else None
        if old == text:
            continue
        stale.append(path.relative_to(ROOT).as_posix())
        if not check:
            _write_atomically(path, text)
    for path in stale:
        print(f'{"differs" if check else "wrote"}: {path}')
    return 1 if check and stale else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
