"""One vocabulary across the project (docs/glossary.md), and no pointers to material a
learner does not have.

Every tracked text a learner reads -- docs/**/*.md, steps/*.py, steps/exercises/*.py, examples/**/*.py,
README.md, the step goldens (printed labels) and dezero_kr/**/*.py (Korean docstrings and
messages) -- is searched for

* retired variants of a glossary term (그래디언트 -> 기울기, 파라미터 -> 매개변수,
  전진 모드 -> 순방향 모드, 2계 도함수 / 고계 미분 -> 2차 / 고차 미분, 에포크 -> 에폭,
  잊음 게이트 -> 망각 게이트, 리셋 게이트 -> 재설정 게이트),
* literal slips that read as a mistranslation (바퀴 for a wheel, 이름 풀이 for DNS
  resolution, ...),
* references to documents the project does not contain (첨부 자료, 해설서, 시드 문서):
  cite docs/references.md instead.

A failure names every ``file:line`` with the offending text, so one run lists them all.
"""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# retired text -> what to write instead (shown in the failure message)
RETIRED = {
    '그래디언트': '기울기',
    '파라미터': '매개변수',
    '전진 모드': '순방향 모드',
    '2계 도함수': '2차 미분',
    '2계 미분': '2차 미분',
    '계 도함수': '차 미분',
    '고계 미분': '고차 미분',
    '바퀴 약': 'wheel 파일',
    '이름 풀이': '이름 조회(DNS)',
    '원소 하나짜리 물체': '원소 하나짜리 값(스칼라)',
    'NumPy 바닥': 'NumPy 기준선',
    '빈 걸음': '아무것도 하지 않는 단계',
    '첨부 자료': 'a citation from docs/references.md',
    '해설서': 'a citation from docs/references.md',
    '역전파 문서의 예': 'a citation from docs/references.md',
    '시드 문서': 'a citation from docs/references.md',
    '에포크': '에폭',
    '잊음 게이트': '망각 게이트',
    '잊음/': '망각/',
    '리셋 게이트': '재설정 게이트',
    # the tutorial's tools (docs/glossary.md, "튜토리얼의 도구")
    '스타터': '시작 파일',
    '체커': '확인기',
    '채점기': '확인기',
    '노트 북': '노트북',
}
PATTERN = re.compile('|'.join(re.escape(term) for term in RETIRED))

GLOBS = ('docs/**/*.md', 'steps/*.py', 'steps/exercises/*.py', 'examples/**/*.py', 'README.md',
         'tests/golden/**/*.txt',
         'dezero_kr/**/*.py', 'docs/**/*.py')
# This file (and nothing else) may spell the retired terms: it is the list.
EXCLUDE = {pathlib.Path(__file__).resolve()}


def _files():
    seen = set()
    for pattern in GLOBS:
        for path in sorted(ROOT.glob(pattern)):
            if path.is_file() and path.resolve() not in EXCLUDE and path not in seen:
                seen.add(path)
                yield path


def retired_terms(paths):
    """[(relative path, line number, term, line text)] for every retired term in ``paths``."""
    hits = []
    for path in paths:
        text = path.read_text(encoding='utf-8')
        for number, line in enumerate(text.splitlines(), 1):
            for match in PATTERN.finditer(line):
                name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
                hits.append((name, number, match.group(), line.strip()))
    return hits


def test_the_search_sees_the_project():
    files = list(_files())
    names = {p.relative_to(ROOT).as_posix() for p in files}
    assert {'README.md', 'docs/glossary.md', 'steps/step01.py', 'dezero_kr/core.py'} <= names


def test_the_search_finds_a_planted_term(tmp_path):
    planted = tmp_path / 'probe.md'
    planted.write_text('첫 줄\n그래디언트 클리핑과 시드 문서\n', encoding='utf-8')
    assert [(n, t) for _, n, t, _ in retired_terms([planted])] == [(2, '그래디언트'), (2, '시드 문서')]


def test_no_retired_term_anywhere():
    hits = retired_terms(_files())
    if hits:
        lines = [f'{path}:{number}: {term!r} -> {RETIRED[term]!r}: {line[:100]}'
                 for path, number, term, line in hits]
        pytest.fail(f'{len(hits)} retired term(s) (see docs/glossary.md):\n' + '\n'.join(lines))


def test_glossary_defines_the_terms_the_tutorial_uses():
    glossary = (ROOT / 'docs' / 'glossary.md').read_text(encoding='utf-8')
    for term in ('기울기', 'gradient', '매개변수', 'parameter', '편미분', 'partial derivative',
                 '\\nabla', '순방향 모드', '역방향 모드', '2차 미분', '잎 변수', '세대',
                 'generation', '계산 그래프', '순전파', '역전파', '야코비 행렬',
                 '시작 파일', '확인기', '노트북', '빠른 설정'):
        assert term in glossary, term


# =============================================================================
# The pages a learner reads (docs, README's Korean half, steps/README.md): forms the plain
# list above cannot express.  Code spans, code blocks, maths and link targets are not prose
# and are skipped.  The step files (and the learner's package) follow the word rules too;
# there code is everywhere, so the seed and issue-number rules, which code would trip
# (`seed=0`), are left to the pages.
# =============================================================================
PAGE_RULES = [
    # forward mode is 순방향 모드; 전진 only in 전진 차분 (forward difference)
    (re.compile(r'전진(?!\s*차분)'), '순방향 (전진 is kept for 전진 차분 only), e.g. "전진(forward) 모드"'),
    (re.compile(r'경사하강'), '경사 하강법'),
    (re.compile(r'계층'), '층 (layer)'),
    (re.compile(r'이 쪽'), '이 장 / 이 페이지'),
    (re.compile(r'ODL3'), '[DeZero 이슈 #N](https://github.com/oreilly-japan/deep-learning-from-scratch-3/issues/N)'),
    # a project-internal issue number means nothing to a reader; DeZero's are linked
    (re.compile(r'(?<!DeZero )(?<!\[DeZero )\b(?:[Ii]ssue|이슈) ?#?\d+'), 'no project-internal issue numbers'),
    # the seed of backprop is 씨앗 기울기 on every page ("(seed)" may gloss it)
    (re.compile(r'(?<![A-Za-z_.(-])seed(?![A-Za-z_)])'), '씨앗 기울기'),
]
NOT_PROSE = re.compile(r'```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$|\]\([^)]*\)|<[^>]+>'
                       r'|^:[^\n]*$|^\s*!\[[^\n]*$', re.S | re.M)
PAGE_GLOBS = ('docs/**/*.md', 'steps/README.md', 'README.md')


def _pages():
    for pattern in PAGE_GLOBS:
        for path in sorted(ROOT.glob(pattern)):
            if '_build' not in path.parts and path.name != 'glossary.md':
                yield path


def prose(text):
    """``text`` with code, maths and link targets blanked (newlines kept, so line numbers hold)."""
    return NOT_PROSE.sub(lambda m: re.sub(r'[^\n]', ' ', m.group()), text)


def page_hits(paths):
    """[(relative path, line number, matched text, advice)] for PAGE_RULES in ``paths``' prose."""
    hits = []
    for path in paths:
        text = path.read_text(encoding='utf-8')
        if path.name == 'README.md' and '# dezero_kr (English)' in text:
            text = text.split('# dezero_kr (English)')[0]  # the English half says "seed" rightly
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        for number, line in enumerate(prose(text).splitlines(), 1):
            for rule, advice in PAGE_RULES:
                for match in rule.finditer(line):
                    hits.append((name, number, match.group(), advice))
    return hits


def test_page_rules_catch_the_forms_the_plain_list_missed(tmp_path):
    planted = tmp_path / 'probe.md'
    planted.write_text('**전진(forward) 모드**와 JVP (전진), 전진 차분은 괜찮다\n'
                       '경사하강법과 RNN 계층, 이 쪽의 예 (ODL3#49, issue 11, 이슈 13)\n'
                       'seed를 2로, `y.grad`(seed) 코드는 괜찮고 씨앗 기울기(seed)도 괜찮다\n'
                       'DeZero 이슈 #37, [DeZero 이슈 #49](https://x/issues/49), $seed$, `seed=0`\n',
                       encoding='utf-8')
    found = [(n, t) for _, n, t, _ in page_hits([planted])]
    assert found == [(1, '전진'), (1, '전진'), (2, '경사하강'), (2, '계층'), (2, '이 쪽'), (2, 'ODL3'),
                     (2, 'issue 11'), (2, '이슈 13'), (3, 'seed')]


STEP_RULES = PAGE_RULES[:5]  # 전진, 경사하강, 계층, 이 쪽, ODL3


def test_step_files_use_one_vocabulary():
    hits = []
    for path in sorted([*ROOT.glob('steps/*.py'), *ROOT.glob('steps/mydezero/*.py')]):
        for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
            for rule, advice in STEP_RULES:
                hits += [f'{path.relative_to(ROOT).as_posix()}:{number}: {m.group()!r} -> {advice}'
                         for m in rule.finditer(line)]
    assert not hits, f'{len(hits)} form(s) the glossary retired:\n' + '\n'.join(hits)


def test_pages_use_one_vocabulary():
    hits = page_hits(_pages())
    if hits:
        pytest.fail(f'{len(hits)} form(s) the glossary retired:\n'
                    + '\n'.join(f'{p}:{n}: {t!r} -> {a}' for p, n, t, a in hits))
