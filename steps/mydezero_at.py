"""mydezero를 N단계 시점의 모습으로 꺼내는 도구 (단계가 아니라 도우미다).

steps/mydezero/의 파일은 하나뿐이고, 줄마다 "몇 단계부터 있는가"를 표시해 두었다.

    #@ file step A      (파일 첫 줄) 이 파일은 A단계부터 있다
    #@ step A           여기부터 #@ end까지는 A단계부터 있다
    #@ step A-B         여기부터 #@ end까지는 A~B단계에만 있다 (B 다음 단계에서 바뀐다)
    #@ end              블록의 끝 (블록은 겹치지 않는다)

블록 밖의 줄은 파일이 생긴 단계부터 있다. 표시 줄(#@ ...)은 꺼낼 때 지운다. 다 쓴 원본도
그대로 import된다(A-B 블록의 정의는 뒤에 오는 새 정의가 덮어쓴다).

    python steps/mydezero_at.py 45 /tmp/at45     /tmp/at45/mydezero/ 에 45단계 시점의 패키지
    python steps/mydezero_at.py --changes        단계마다 더해진 파일과 이름
    python steps/mydezero_at.py --docs           docs/tutorial/mydezero.md를 다시 쓴다
"""
import ast
import difflib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, 'mydezero')
DOCS_PAGE = os.path.join(HERE, '..', 'docs', 'tutorial', 'mydezero.md')
FIRST, LAST = 23, 60

FILE_MARK = re.compile(r'#@ file step (\d+)\s*$')
STEP_MARK = re.compile(r'\s*#@ step (\d+)(?:-(\d+))?\s*$')
END_MARK = re.compile(r'\s*#@ end\s*$')


class MarkerError(ValueError):
    """표시 줄이 규칙에 맞지 않는다 (파일 이름과 줄 번호를 알려 준다)."""


def parse(path):
    """파일 하나 -> (파일이 생긴 단계, [(줄, 처음 단계, 마지막 단계 또는 None), ...])."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().splitlines(keepends=True)
    name = os.path.basename(path)
    m = FILE_MARK.match(lines[0]) if lines else None
    if m is None:
        raise MarkerError(f'{name}:1: 첫 줄은 "#@ file step A"여야 한다')
    file_step = int(m.group(1))
    result, block = [], None
    for number, line in enumerate(lines[1:], 2):
        step, end = STEP_MARK.match(line), END_MARK.match(line)
        if step:
            if block is not None:
                raise MarkerError(f'{name}:{number}: 블록 안에 블록을 열 수 없다')
            first = int(step.group(1))
            last = int(step.group(2)) if step.group(2) else None
            if first < file_step or (last is not None and last < first):
                raise MarkerError(f'{name}:{number}: 단계 범위가 이상하다: {line.strip()}')
            block = (first, last)
        elif end:
            if block is None:
                raise MarkerError(f'{name}:{number}: 열리지 않은 블록의 #@ end')
            block = None
        elif line.lstrip().startswith('#@'):
            raise MarkerError(f'{name}:{number}: 알 수 없는 표시 줄: {line.strip()}')
        else:
            first, last = block if block else (file_step, None)
            result.append((line, first, last))
    if block is not None:
        raise MarkerError(f'{name}: 닫히지 않은 블록 (#@ end가 없다)')
    return file_step, result


def text_at(path, n):
    """N단계 시점의 파일 내용. 아직 없는 파일이면 None."""
    file_step, lines = parse(path)
    if n < file_step:
        return None
    kept = [line for line, first, last in lines
            if first <= n and (last is None or n <= last)]
    return ''.join(kept)


def source_files():
    return sorted(f for f in os.listdir(SOURCE) if f.endswith('.py'))


def package_at(n):
    """{파일 이름: 내용} (N단계에 있는 파일만)."""
    files = {}
    for name in source_files():
        text = text_at(os.path.join(SOURCE, name), n)
        if text is not None:
            files[name] = text
    return files


def write_package(n, outdir):
    """outdir/mydezero/에 N단계 시점의 패키지를 쓴다. 그 폴더를 돌려준다."""
    target = os.path.join(outdir, 'mydezero')
    os.makedirs(target, exist_ok=True)
    for name, text in package_at(n).items():
        tmp = os.path.join(target, name + '.tmp')
        with open(tmp, 'w', encoding='utf-8') as f:
            f.write(text)
        os.replace(tmp, os.path.join(target, name))  # 다 쓴 뒤에 바꾼다
    return target


def top_names(text, imports=False):
    """모듈 맨 위에 정의된 이름들 (클래스, 함수, 변수; imports=True이면 import한 이름도).
    같은 이름이 다시 정의되면 한 번."""
    names = []
    for node in ast.parse(text).body:
        if imports and isinstance(node, (ast.Import, ast.ImportFrom)):
            found = [a.asname or a.name for a in node.names]
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            found = [node.name]
        elif isinstance(node, ast.Assign):
            found = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.Try):  # array_types = ... 가 try 안에
            found = [t.id for n in node.body if isinstance(n, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name)]
        else:
            found = []
        names.extend(n for n in found if n not in names)
    return names


def member_names(text):
    """{클래스 이름: [메서드/속성 이름, ...]}."""
    members = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            found = []
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found.append(item.name)
                elif isinstance(item, ast.Assign):
                    found.extend(t.id for t in item.targets if isinstance(t, ast.Name))
            members[node.name] = found
    return members


def changes():
    """[(단계, [(파일, 설명, diff 줄 목록), ...]), ...]: 바뀐 것이 있는 단계만."""
    result, before = [], {}
    for n in range(FIRST, LAST + 1):
        now = package_at(n)
        items = []
        for name, text in now.items():
            old = before.get(name)
            if old == text:
                continue
            imports = name == '__init__.py'  # __init__.py는 import로 이름을 모은다
            if old is None:
                what = '새 파일: ' + ', '.join(x for x in top_names(text, imports)
                                              if not x.startswith('_'))
            else:
                old_names = top_names(old, imports)
                added = [x for x in top_names(text, imports) if x not in old_names]
                old_members, new_members = member_names(old), member_names(text)
                for cls, members in new_members.items():
                    more = [m for m in members if m not in old_members.get(cls, [])]
                    if cls in old_members and more:
                        added.append(f'{cls}.' + '/'.join(more))
                what = ('더함: ' + ', '.join(added)) if added else '고침'
            diff = list(difflib.unified_diff(
                (old or '').splitlines(), text.splitlines(),
                f'mydezero/{name} ({n - 1}단계)', f'mydezero/{name} ({n}단계)',
                lineterm='', n=1))
            items.append((name, what, diff))
        if items:
            result.append((n, items))
        before = now
    return result


def print_changes():
    for n, items in changes():
        print(f'{n}단계')
        for name, what, diff in items:
            print(f'  {name:<18} {what}')


def docs_page():
    """docs/tutorial/mydezero.md의 내용 (이 도구가 만든다: 손으로 고치지 않는다)."""
    out = ['# 직접 만드는 패키지 mydezero',
           '',
           '<!-- 이 페이지는 `python steps/mydezero_at.py --docs`가 만든다. 손으로 고치지 말 것. -->',
           '',
           '23단계부터 학습자가 만든 코드는 `steps/mydezero/` 패키지에 모인다. 23~60단계의 스크립트는',
           '`dezero_kr`가 아니라 이 패키지를 `import`해서 쓰고, `dezero_kr`는 값과 기울기를',
           '맞춰 보는 기준으로만 쓴다. 파일 배치는 DeZero와 같다(`core_simple`, `core`,',
           '`functions`, `functions_conv`, `layers`, `models`, `optimizers`, `utils`,',
           '`datasets`, `dataloaders`, `transforms`, `cuda`).',
           '',
           '## 어느 단계의 모습이든 꺼내 보기',
           '',
           '`steps/mydezero/`에 있는 것은 60단계까지 다 자란 모습이다. 원본은 하나이고, 줄마다 몇 단계부터',
           '있는지 표시해 두었다(`#@ step A`부터 `#@ end`까지는 A단계부터, `#@ step A-B`는 A~B단계에만).',
           '45단계를 읽고 있다면 45단계 시점의 패키지를 꺼내 읽는다:',
           '',
           '```bash',
           '# /tmp/at45/mydezero/ 에 45단계 시점의 패키지',
           'python steps/mydezero_at.py 45 /tmp/at45',
           '# 단계마다 더해진 파일과 이름',
           'python steps/mydezero_at.py --changes',
           '```',
           '',
           '각 단계는 자기 시점의 패키지로도 돌아간다: `tests/test_mydezero.py`가 23~60단계를 하나씩 그 시점의',
           '패키지 옆에서 실행해 정답 출력과 비교한다.',
           '',
           '## DeZero와 다른 점',
           '',
           '이름과 결과는 DeZero와 같게 두었다(`import mydezero as dezero`로 DeZero 코드가 돈다).',
           '다른 곳은 아래와 같다.',
           '',
           '* 연산자(`+`, `*`, `**`, `x[...]`, `@` ...)는 `Variable` 클래스 안에 정의한다. DeZero처럼',
           '  `setup_variable()`로 클래스에 덧붙이지 않는다(`setup_variable`은 호환용으로 두었고',
           '  아무 일도 하지 않는다). `x @ W`(`__matmul__`)는 DeZero에 없던 것이다.',
           '* 역전파는 책과 같이 함수 목록을 세대 순으로 `sort`해서 꺼낸다(힙이 아니다).',
           '  `core_simple`의 기울기는 0차원 계산에서도 늘 ndarray다(DeZero는 NumPy 수가 되었다).',
           '* `get_spiral`은 자기 `RandomState`로 데이터를 만든다: DeZero는 전역 난수를 다시 심어',
           '  그 뒤의 가중치 초기화까지 바꿨다. `SinCurve`의 잡음은 시드 0에서 나온다.',
           '* `Layer`는 매개변수 이름을 `set`이 아니라 넣은 순서를 지키는 `dict`에 담는다(실행할 때마다',
           '  같은 순서). `named_params()`(경로와 매개변수)를 더했다.',
           '* `save_weights`는 임시 파일에 다 쓴 뒤 이름을 바꾸고, `load_weights`는 pickle 없이 읽으며',
           '  이름이나 모양이 하나라도 다르면 아무것도 바꾸지 않고 `ValueError`를 낸다.',
           '* 고친 DeZero의 버그: `RNN`의 `h2h`는 `hidden_size`를 입력으로 받는다.',
           '  `Conv2DGradW.backward`는 들어온 기울기를 쓴다(DeZero는 약한 참조를 풀지 않아',
           '  2차 미분에서 멈췄다). `FreezeParam`이 지운 기울기는 `update`가 건너뛴다.',
           '  `GetItemGrad`는 CuPy에서 `cupyx.scatter_add`를 쓴다(DeZero의 `xp.scatter_add`는',
           '  CuPy에서 사라졌다).',
           '* `get_dot_graph`는 노드 번호를 처음 만난 순서로 1, 2, 3 ...으로 매기고 한 변수를 한 번만',
           '  적는다. `plot_dot_graph`는 `.dot`을 그림 옆에 쓰고 셸 없이 `dot`을 부른다.',
           '* 내려받지 않는다: `MNIST`, `CIFAR10/100`, `ImageNet`, `Shakespear`,',
           '  `VGG16(pretrained=True)`, `ResNet`, `utils.get_file`은 없다. 대신 저장소에 있는',
           '  8x8 숫자 `Digits`를 읽는다(51단계). Pillow가 필요한 이미지 변환(`Convert`, `Resize`,',
           '  `CenterCrop`, `ToArray`, `ToPIL`)과 `BatchNorm`(`batch_nrom`)도 없다.',
           '  `RMSprop`은 DeZero에 없던 것을 더했다(46단계).',
           '',
           '## 단계마다 더해지는 것',
           '']
    for n, items in changes():
        out.append(f'### {n}단계')
        out.append('')
        for name, what, diff in items:
            out.append(f'* `mydezero/{name}`: {what}')
        out.append('')
        for name, what, diff in items:
            if what.startswith('새 파일'):
                continue  # 새 파일은 통째로 읽으면 된다: 목록만
            out.append('```diff')
            out.extend(diff)
            out.append('```')
            out.append('')
    return '\n'.join(out).rstrip() + '\n'


def main(argv):
    if argv[:1] == ['--changes']:
        print_changes()
        return 0
    if argv[:1] == ['--docs']:
        with open(DOCS_PAGE, 'w', encoding='utf-8') as f:
            f.write(docs_page())
        print(f'썼다: {os.path.relpath(DOCS_PAGE)}')
        return 0
    if len(argv) == 2 and argv[0].isdigit():
        n = int(argv[0])
        if not FIRST <= n <= LAST:
            print(f'단계는 {FIRST}~{LAST} 사이여야 한다: {n}', file=sys.stderr)
            return 2
        target = write_package(n, argv[1])
        print(f'{n}단계 시점의 mydezero: {target} ({", ".join(package_at(n))})')
        return 0
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
