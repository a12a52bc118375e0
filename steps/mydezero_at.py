"""mydezero를 N단계 시점의 모습으로 꺼내는 도구 (단계가 아니라 도우미다).

steps/mydezero/의 파일은 하나뿐이고, 줄마다 "몇 단계부터 있는가"를 표시해 두었다.

    #@ file step A      (파일 첫 줄) 이 파일은 A단계부터 있다
    #@ step A           여기부터 #@ end까지는 A단계부터 있다
    #@ step A-B         여기부터 #@ end까지는 A~B단계에만 있다 (B 다음 단계에서 바뀐다)
    #@ end              블록의 끝 (블록은 겹치지 않는다)

블록 밖의 줄은 파일이 생긴 단계부터 있다. 표시 줄(#@ ...)은 꺼낼 때 지운다. 다 쓴 원본도
그대로 import된다(A-B 블록의 정의는 뒤에 오는 새 정의가 덮어쓴다).

    python steps/mydezero_at.py 45 /tmp/at45     /tmp/at45/mydezero/ 에 45단계 시점의 패키지
    python steps/mydezero_at.py 45 /tmp/my --blank         44단계까지는 원본, 45단계의 부품은 빈칸
    python steps/mydezero_at.py 46 /tmp/my --blank --keep  내가 채운 /tmp/my/mydezero/에
                                                           46단계의 빈칸만 더한다
    python steps/mydezero_at.py --changes        단계마다 더해진 파일과 이름
    python steps/mydezero_at.py --docs           docs/tutorial/mydezero.md를 다시 쓴다

꺼낸 폴더는 N단계의 파일만 담는다(같은 폴더에 다른 단계를 꺼내면 통째로 바뀐다). 꺼낸
mydezero/에는 표시 파일 .mydezero_at(단계와 파일마다 sha256)을 둔다. 표시가 없는
mydezero/(내가 만든 패키지)나, 꺼낸 뒤 고친 파일·더한 파일이 있는 mydezero/는 바꾸지 않고
무엇이 다른지 알려 준다. --force를 붙이면 바꾼다(그 폴더 안의 것을 모두 지운다).
원본 steps/mydezero/에는 쓰지 않는다(링크를 따라가도). 종료 코드: 0 됨, 2 잘못 부름·쓸 수 없음.

--blank: N단계에 더해지는 함수와 메서드를 빈칸으로 둔다: 시그니처와 docstring은 그대로,
몸통은 raise NotImplementedError('41단계: MatMul.backward을(를) 채우세요'). N단계에 바뀌는
부품은 무엇을 바꿀지 적은 주석과 raise, 그 아래에 N-1단계까지의 코드를 둔다(mydezero_blank.py).
--blank --keep: 내가 채운 패키지(표시가 N-1단계)에 N단계의 빈칸만 더한다. 내가 쓴 줄은 바꾸지
않고, 새 부품은 원본에서 바로 앞에 있는 문장 뒤에 넣는다. 놓을 곳을 못 찾으면 무엇을 왜
못 놓는지 알리고 아무것도 바꾸지 않는다. 채운 것은 python steps/check.py package N 폴더로 확인한다.
"""
import ast
import difflib
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile

import mydezero_blank

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


def package_at(n, blank=False):
    """{파일 이름: 내용} (N단계에 있는 파일만). blank이면 N단계의 부품을 빈칸으로
    (``mydezero_blank``: 몸통이 NotImplementedError를 낸다)."""
    files = {}
    for name in source_files():
        path = os.path.join(SOURCE, name)
        text = mydezero_blank.blank_file(n, parse(path)) if blank else text_at(path, n)
        if text is not None:
            files[name] = text
    return files


def blank_pieces(n):
    """{파일 이름: [N단계에 채우거나 고칠 부품의 이름, ...]} (있는 파일만)."""
    found = {}
    for name in source_files():
        names = mydezero_blank.new_piece_names(n, parse(os.path.join(SOURCE, name)))
        if names:
            found[name] = names
    return found


# 패키지에 더할 부품이 없는 단계 -> 그 단계에서 학습자가 직접 쓰는 것 (단계 스크립트).
# 책의 그 장도 dezero 패키지에 코드를 더하지 않는다(24, 25, 27~29, 33, 36단계는 스크립트만,
# 31단계는 이론, 37단계는 텐서를 넣어 보기만). 32단계의 고차 미분 코어와 34단계의 sin/cos는
# 30~31단계의 스크립트가 이미 쓰므로 30단계에 있다(docs/tutorial/mydezero.md).
SCRIPT_ONLY = {
    24: 'sphere, matyas, goldstein을 연산자만으로 적고 y.backward()로 미분한다',
    25: 'DOT 언어로 계산 그래프를 손으로 적는다 (패키지는 쓰지 않는다)',
    27: '테일러 급수로 sin을 적은 my_sin과 그 미분',
    28: '로젠브록 함수를 경사 하강법으로 최소화하는 반복',
    29: '2차 미분을 손으로 적은 뉴턴 방법',
    31: '30단계에 만든 역전파 엔진의 create_graph를 읽고 기울기의 그래프를 살핀다',
    32: '30단계의 core와 functions로 n차 미분을 구하는 derivatives',
    33: '2차 미분까지 backward로 구하는 뉴턴 방법',
    34: 'F.sin의 n차 미분을 점 200개의 벡터 하나로 한꺼번에',
    36: '기울기가 들어간 식을 다시 미분한다 (double backprop, 헤세 행렬과 벡터의 곱)',
    37: '텐서(배열)를 넣어 원소별 계산과 기울기의 모양을 본다',
}


def script_only_note(n):
    """패키지에 부품을 더하지 않는 N단계의 안내 (한국어 두 줄). 그런 단계가 아니면 None."""
    if n not in SCRIPT_ONLY:
        return None
    return (f'{n}단계에는 패키지(mydezero)에 더할 부품이 없다: 빈칸이 없고, 패키지는 '
            f'{n - 1}단계 그대로다.\n'
            f'이 단계에서 직접 쓰는 것은 단계 스크립트 steps/step{n:02d}.py다: {SCRIPT_ONLY[n]}.')


MARK_FILE = '.mydezero_at'  # 이 도구가 쓴 폴더의 표시: 단계와 파일마다 sha256


class TargetError(ValueError):
    """꺼낼 폴더에 쓸 수 없거나 쓰면 안 된다 (무엇이 왜인지 알려 준다)."""


def write_package(n, outdir, force=False, blank=False):
    """outdir/mydezero/를 N단계 시점의 패키지 그대로로 만든다. 그 폴더를 돌려준다.

    N단계에 없는 파일은 남지 않는다(새 폴더를 다 쓴 뒤 옛 폴더와 바꾼다). 폴더 안에
    표시 파일 ``.mydezero_at``(단계와 파일마다 sha256)을 둔다. ``blank``이면 N단계의 부품을
    빈칸으로 둔다(``--blank``: N단계부터 시작하는 학습자의 패키지).

    TargetError: 원본 steps/mydezero/(또는 그것을 담은 폴더)이다(링크를 따라가도),
    outdir가 폴더가 아니거나 만들 수 없다, mydezero가 링크다, 또는 mydezero/가 이
    도구가 쓴 것이 아니거나 쓴 뒤에 고친 파일·더한 파일이 있다(``force``이면 바꾼다).
    """
    target = os.path.join(outdir, 'mydezero')
    _refuse_source(target)
    files = package_at(n, blank)  # 원본의 표시 줄이 틀렸으면 쓰기 전에 MarkerError
    _refuse_foreign(target, force)
    _swap_in(target, files, n, {'blank': True} if blank else {})
    return target


def _refuse_source(target):
    real, source = os.path.realpath(target), os.path.realpath(SOURCE)
    if real == source or real.startswith(source + os.sep) \
            or source.startswith(real + os.sep):
        raise TargetError(f'{target}: 원본 steps/mydezero/에는 쓰지 않는다 (이 도구가 읽는 '
                          '원본이다). 다른 폴더를 주세요 (예: /tmp/at45).')


def _digest(data):
    return hashlib.sha256(data).hexdigest()


def _refuse_foreign(target, force):
    """target이 이 도구가 쓴 그대로가 아니면 TargetError (force이면 지나간다)."""
    if os.path.islink(target):
        raise TargetError(f'{target}이(가) 링크다: 링크가 가리키는 곳은 바꾸지 않는다. '
                          '다른 폴더를 주세요.')
    if not os.path.lexists(target):
        return
    if os.path.isdir(target) and not os.listdir(target):
        return
    problem = _foreign_problem(target)
    if problem and not force:
        raise TargetError(f'{target}: {problem}\n'
                          '그대로 두었다. 다른 폴더를 주거나, 폴더 안의 것을 모두 지우고 '
                          '바꾸려면 --force를 붙인다.')


def _foreign_problem(target):
    """target이 이 도구가 쓴 그대로이면 None, 아니면 무엇이 다른지."""
    if not os.path.isdir(target):
        return '폴더가 아니라 파일이다.'
    mark = _read_mark(target)
    if mark is None:
        return f'mydezero_at.py가 쓴 폴더가 아니다 ({MARK_FILE} 표시가 없다).'
    if mark.get('kept'):
        return (f'--blank --keep으로 {mark["step"]}단계까지 이어 온 학습자의 패키지다 '
                '(바꾸면 채운 코드가 지워진다). 다음 단계는 --blank --keep으로.')
    written = mark['files']
    edited, added = [], []
    for name in sorted(os.listdir(target)):
        path = os.path.join(target, name)
        if name in (MARK_FILE, '__pycache__'):
            continue
        if name not in written or not os.path.isfile(path):
            added.append(name)
            continue
        with open(path, 'rb') as f:
            if _digest(f.read()) != written[name]:
                edited.append(name)
    said = ([f'쓴 뒤에 고친 파일: {", ".join(edited)}'] if edited else []) + \
        ([f'더한 것: {", ".join(added)}'] if added else [])
    return '; '.join(said) + '.' if said else None


def _swap_in(target, files, n, extra):
    """새 폴더에 다 쓴 뒤 target과 바꾼다 (옛것은 지운다). 쓸 수 없으면 TargetError."""
    parent = os.path.dirname(target)
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise TargetError(f'{parent}: 폴더가 아니라 파일이다.')
    try:
        os.makedirs(parent, exist_ok=True)
        fresh = tempfile.mkdtemp(prefix='.mydezero-new-', dir=parent)
    except OSError as e:
        raise TargetError(f'폴더를 만들 수 없다: {parent} ({e.strerror or e})') from None
    try:
        _fill(fresh, files, n, extra)
        old = None
        if os.path.lexists(target):
            old_name = os.path.basename(fresh).replace('-new-', '-old-')
            old = os.path.join(parent, old_name)
            os.rename(target, old)
        os.rename(fresh, target)
    except OSError as e:
        shutil.rmtree(fresh, ignore_errors=True)
        raise TargetError(f'쓸 수 없다: {target} ({e.strerror or e})') from None
    if old is not None:
        shutil.rmtree(old) if os.path.isdir(old) else os.remove(old)


def _fill(folder, files, n, extra):
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(folder, 0o777 & ~mask)  # mkdtemp의 0700이 아니라 보통 폴더처럼
    for name, text in files.items():
        with open(os.path.join(folder, name), 'wb') as f:
            f.write(text.encode('utf-8'))
    _write_mark(folder, n, files, extra)


def _write_mark(folder, n, files, extra):
    mark = {'step': n, 'files': {name: _digest(text.encode('utf-8'))
                                 for name, text in files.items()}, **extra}
    _write_atomic(os.path.join(folder, MARK_FILE),
                  json.dumps(mark, indent=1, sort_keys=True))


def _read_mark(target):
    """표시 파일의 내용 (dict). 없거나 읽을 수 없으면 None."""
    try:
        with open(os.path.join(target, MARK_FILE), encoding='utf-8') as f:
            mark = json.load(f)
    except (OSError, ValueError):
        return None
    ok = isinstance(mark, dict) and isinstance(mark.get('files'), dict) \
        and type(mark.get('step')) is int
    return mark if ok else None


def _keep_plan(n, target):
    """--keep이 쓸 것 {파일 이름: (새 내용, '새 파일' 또는 '더함')}과 못 하는 까닭의 목록."""
    planned, problems = {}, []
    for name in source_files():
        parsed = parse(os.path.join(SOURCE, name))
        if n < parsed[0]:
            continue
        path = os.path.join(target, name)
        if n == parsed[0]:
            if os.path.lexists(path):
                problems.append(f'{name}: {n}단계에 새로 생기는 파일인데 이미 있다 (옮기거나 '
                                '지운 뒤 다시 하세요).')
            else:
                planned[name] = (mydezero_blank.blank_file(n, parsed), '새 파일')
            continue
        try:
            with open(path, encoding='utf-8') as f:
                text = f.read()
            done = mydezero_blank.keep_file(n, parsed, text, name)
        except FileNotFoundError:
            problems.append(f'{name}: {n - 1}단계에 있어야 할 파일이 없다.')
        except (OSError, UnicodeDecodeError) as e:
            problems.append(f'{name}: 읽을 수 없다 ({e}).')
        except mydezero_blank.PlaceError as e:
            problems.append(str(e))
        else:
            if done != text:
                planned[name] = (done, '더함')
    return planned, problems


def keep_package(n, outdir):
    """학습자가 N-1단계까지 채운 outdir/mydezero/에 N단계의 새 빈칸만 더한다.

    학습자의 줄은 바꾸지 않는다: 새 부품(빈칸)과 새 줄은 원본의 바로 앞 문장과 같은
    학습자의 문장 뒤에 넣고, N단계에 바뀌는 부품은 학습자의 몸통 맨 위에 무엇을 바꿀지
    적은 주석과 raise를 넣는다. N단계에 생기는 파일은 빈칸 그대로 쓴다. 그 뒤 표시 파일에
    N단계와 지금의 sha256, ``kept``를 적는다(그 폴더는 보통의 꺼내기가 덮어쓰지 않는다).
    돌려주는 값: {파일 이름: '새 파일' 또는 '더함'}.

    TargetError: 원본이다, 표시 파일이 없거나 N-1단계가 아니다, N-1단계의 파일이 없다,
    새 부품을 놓을 곳을 못 찾았다(무엇을, 왜: 하나라도 그러면 아무것도 바꾸지 않는다).
    """
    target = os.path.join(outdir, 'mydezero')
    _refuse_source(target)
    plain_dir = os.path.isdir(target) and not os.path.islink(target)
    mark = _read_mark(target) if plain_dir else None
    if mark is None:
        raise TargetError(f'{target}: --keep은 mydezero_at.py로 만든(--blank) 패키지에만 더한다 '
                          f'({MARK_FILE} 표시가 없다). 새로 시작하려면 --keep 없이 --blank.')
    if mark['step'] != n - 1:
        raise TargetError(f'{target}: 이 패키지는 {mark["step"]}단계다. --keep은 한 단계씩 '
                          f'나아간다: 먼저 {mark["step"] + 1}단계를 --blank --keep으로.')
    planned, problems = _keep_plan(n, target)
    if problems:
        raise TargetError(f'{target}: {n}단계의 빈칸을 더하지 못했다. 아무것도 바꾸지 '
                          '않았다.\n  ' + '\n  '.join(problems))
    for name, (text, _) in planned.items():
        _write_atomic(os.path.join(target, name), text)
    names = set(mark['files']) | set(planned)
    files = {}
    for name in sorted(names):
        if os.path.isfile(os.path.join(target, name)):
            path = os.path.join(target, name)
            with open(path, encoding='utf-8', errors='replace') as f:
                files[name] = f.read()
    _write_mark(target, n, files, {'blank': True, 'kept': True})
    return {name: how for name, (_, how) in planned.items()}


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
           '꺼낸 폴더에는 그 단계의 파일만 있다: 같은 폴더에 다른 단계를 꺼내면 폴더가 통째로 바뀐다.',
           '도구는 꺼낸 `mydezero/`에 표시 파일 `.mydezero_at`(단계와 파일마다 sha256)을 둔다.',
           '표시가 없는 `mydezero/`(내가 직접 만든 패키지)나, 꺼낸 뒤 고치거나 더한 파일이 있는',
           '`mydezero/`는 바꾸지 않고 무엇이 다른지 알려 준다(종료 코드 2). 그래도 바꾸려면',
           '`--force`를 붙인다(그 폴더 안의 것을 모두 지운다). 원본 `steps/mydezero/`에는',
           '(`python steps/mydezero_at.py 45 steps`처럼 주어도, 링크를 거쳐도) 쓰지 않는다.',
           '',
           '각 단계는 자기 시점의 패키지로도 돌아간다: 23~60단계를 하나씩 그 시점의 패키지 옆에서',
           '실행하면 정답 출력과 같은 것을 낸다.',
           '',
           '## 직접 채우기: 빈칸과 확인',
           '',
           '`--blank`를 붙이면 N단계에 더해지는 함수와 메서드를 빈칸으로 둔다(시그니처와 docstring은 그대로,',
           "몸통은 `raise NotImplementedError('41단계: MatMul.backward을(를) 채우세요')`). 채운 뒤",
           '`python steps/check.py package N 폴더`로 확인하고, 다음 단계는 `--blank --keep`으로',
           ' 내 패키지에',
           '그 단계의 빈칸만 더한다(내가 쓴 줄은 바꾸지 않는다). 자세한 것은 [튜토리얼 첫 쪽](index.md)의',
           '"mydezero를 직접 만들기"에 있다.',
           '',
           '```bash',
           'python steps/mydezero_at.py 41 ~/my --blank',
           'python steps/check.py package 41 ~/my',
           'python steps/mydezero_at.py 42 ~/my --blank --keep',
           '```',
           '',
           '아래 "단계마다 더해지는 것"의 각 단계에 채울 부품(빈칸)을 적어 두었다. 그 목록에 없는 단계는',
           '패키지에 더할 것이 없다: 그 단계에서 직접 쓰는 것은 단계 스크립트이고, `--blank`는 빈칸 없이',
           '앞 단계의 패키지를 그대로 쓰며, `check.py package N`은 그 스크립트를 내 패키지로 돌려 정답',
           '출력과 비교한다.',
           '',
           '| 단계 | 스크립트에서 직접 쓰는 것 |',
           '|---|---|',
           *[f'| {n} | {what} |' for n, what in SCRIPT_ONLY.items()],
           '',
           '책의 그 장들도 dezero 패키지에 코드를 더하지 않는다. 책이 32단계에 쓰는 고차 미분 코어(`core.py`)와',
           '34단계의 `Sin`, `Cos`는 30~31단계의 스크립트가 이미 쓰므로 여기서는 30단계에 만든다.',
           '',
           '## DeZero와 다른 점',
           '',
           '이름과 결과는 DeZero와 같게 두었다(`import mydezero as dezero`로 DeZero 코드가 돈다).',
           '다른 곳은 아래와 같다.',
           '',
           '* 연산자(`+`, `*`, `**`, `x[...]`, `@` ...)는 `Variable` 클래스 안에 정의한다. DeZero처럼',
           '  `setup_variable()`로 클래스에 덧붙이지 않는다(그래서 `setup_variable`은 없다).',
           '  `x @ W`(`__matmul__`)는 DeZero에 없던 것이다.',
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
           '  `RMSprop`은 DeZero에 없던 것을 더했다(54단계).',
           '',
           '## 단계마다 더해지는 것',
           '']
    for n, items in changes():
        out.append(f'### {n}단계')
        out.append('')
        for name, what, diff in items:
            out.append(f'* `mydezero/{name}`: {what}')
        out.append('')
        todo = blank_pieces(n)
        if todo:
            out.append('빈칸(`--blank`): ' + '; '.join(
                f'`{name}`의 ' + ', '.join(f'`{q}`' for q in names)
                for name, names in todo.items()))
            out.append('')
        for name, what, diff in items:
            if what.startswith('새 파일'):
                continue  # 새 파일은 통째로 읽으면 된다: 목록만
            out.append('```diff')
            out.extend(diff)
            out.append('```')
            out.append('')
    return '\n'.join(out).rstrip() + '\n'


STEP = re.compile(r'[0-9]+')  # ASCII 숫자만 ('²'.isdigit()도 참이다)


def _write_atomic(path, text):
    """임시 파일에 다 쓴 뒤 바꾼다 (있던 파일의 권한을 지킨다)."""
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    if os.path.exists(path):
        shutil.copymode(path, tmp)
    os.replace(tmp, path)


FLAGS = ('--force', '--blank', '--keep')


def _extract(argv):
    flags = {a for a in argv if a in FLAGS}
    args = [a for a in argv if a not in FLAGS]
    if len(args) != 2 or ('--keep' in flags and flags != {'--blank', '--keep'}):
        print(__doc__, file=sys.stderr)
        return 2
    if not STEP.fullmatch(args[0]) or not FIRST <= int(args[0]) <= LAST:
        print(f'단계는 {FIRST}~{LAST} 사이의 정수여야 한다: {args[0]!r}', file=sys.stderr)
        return 2
    if not args[1]:
        print('꺼낼 폴더 이름이 비었다 (예: /tmp/at45).', file=sys.stderr)
        return 2
    n = int(args[0])
    if '--keep' in flags:
        if n == FIRST:
            print(f'{FIRST}단계는 처음이다: --keep 없이 --blank로 시작한다.', file=sys.stderr)
            return 2
        done = keep_package(n, args[1])
        where = os.path.join(args[1], "mydezero")
        if done:
            said = ', '.join(f'{k} ({v})' for k, v in done.items())
            print(f'{n}단계의 빈칸을 더했다: {where} ({said})')
        else:
            print(f'{n}단계: {where}의 파일은 그대로 두었다 (표시만 {n}단계로 바꿨다).')
    else:
        blank = '--blank' in flags
        target = write_package(n, args[1], '--force' in flags, blank)
        print(f'{n}단계 시점의 mydezero{" (빈칸)" if blank else ""}: {target} '
              f'({", ".join(package_at(n))})')
        if not blank:
            return 0
    _print_todo(n)
    return 0


def _print_todo(n):
    todo = blank_pieces(n)
    if not todo:
        print(script_only_note(n) or f'{n}단계에는 패키지에 더할 부품이 없다.')
        print(f'확인: python steps/check.py package {n} 폴더 (그 스크립트를 내 패키지로 돌려 '
              '정답 출력과 비교한다)')
        return
    print(f'{n}단계에 채울 부품 (NotImplementedError):')
    for name, names in todo.items():
        print(f'  {name}: {", ".join(names)}')
    print(f'다 채웠으면: python steps/check.py package {n} 폴더')


def main(argv):
    """명령 줄: N 폴더 [--force] [--blank] | N 폴더 --blank --keep | --changes | --docs.

    종료 코드: 0 됨, 2 잘못 부름이나 쓸 수 없음 (까닭은 stderr)."""
    try:
        if argv == ['--changes']:
            print_changes()
            return 0
        if argv == ['--docs']:
            _write_atomic(DOCS_PAGE, docs_page())
            print(f'썼다: {os.path.relpath(DOCS_PAGE)}')
            return 0
        return _extract(argv)
    except (MarkerError, TargetError) as e:
        print(e, file=sys.stderr)
        return 2
    except OSError as e:  # 읽을 수 없는 폴더 ...
        print(f'읽거나 쓸 수 없다: {e.filename or ""} ({e.strerror or e})', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
