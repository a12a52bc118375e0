"""mydezero_at.py --blank, --keep의 속: N단계에 더해지는 부품을 빈칸(스텁)으로 만든다.

이 모듈은 단계가 아니라 도우미다. mydezero_at.py가 원본의 표시 줄을 읽어 파일마다
``[(줄, 처음 단계, 마지막 단계 또는 None), ...]``을 넘기면, 여기서는 글만 다룬다.

* 부품(piece): 모듈 맨 위의 함수와 클래스 안의 메서드(클래스 안의 클래스도). 이름은
  ``MatMul.backward``처럼 점으로 잇는다.
* N단계의 새 부품: N단계에 처음 생긴 줄로만 된 부품. 시그니처와 docstring은 두고 몸통을
  ``raise NotImplementedError('41단계: MatMul.backward을(를) 채우세요')``로 바꾼다
  (docstring이 없으면 짧은 것을 적는다). 몸통이 ``pass``나 docstring뿐인 것은 그대로 둔다.
* N단계에 바뀌는 부품: N-1단계에도 있던 이름인데 글이 달라진 부품. 새 시그니처와 docstring,
  무엇을 바꾸는지 적은 주석과 ``raise NotImplementedError('40단계: Add.backward을(를)
  고치세요 ...')``, 그 아래에 N-1단계까지의 몸통을 둔다(raise를 지우고 고친다).
* 함수가 아닌 새 줄(import, 상수, 클래스 속성)은 그대로 준다.

``blank_file``은 N단계의 파일 하나를 빈칸으로(새로 시작하는 학습자), ``keep_file``은 학습자의
파일에 N단계의 새 빈칸만 더한다(다른 줄은 한 글자도 바꾸지 않는다). 놓을 곳을 못 찾으면
``PlaceError``(무엇을, 왜).
"""
import ast

# (단계, 부품) -> 무엇을 바꾸는가. 없으면 일반 문구 (docs/tutorial/mydezero.md의 diff를 보라)
CHANGE_HINTS = {
    45: '층 안의 층: Parameter만이 아니라 Layer도 이름을 모은다 (params()가 그 안까지 내려간다)',
    40: '브로드캐스트: x0와 x1의 모양이 다르면 기울기를 sum_to로 각 입력의 모양에 맞춘다',
    52: 'NumPy만이 아니라 CuPy에서도: np 대신 cuda.get_array_module(...)로 고른 xp를 쓴다',
}


class PlaceError(ValueError):
    """--keep이 학습자의 파일에서 새 부품을 놓을 곳을 찾지 못했다 (무엇을, 왜)."""


def versions(parsed, n):
    """표시 줄을 읽은 결과 -> (N-1단계의 글 또는 None, N단계의 글, N단계 줄마다 새 줄인가).

    ``parsed``는 ``(파일이 생긴 단계, [(줄, 처음, 마지막), ...])``.
    """
    file_step, lines = parsed
    def alive(first, last, k):
        return k >= file_step and first <= k and (last is None or k <= last)
    prev = None
    if n > file_step:
        prev = ''.join(t for t, f, la in lines if alive(f, la, n - 1))
    now = [(t, f == n or n == file_step) for t, f, la in lines if alive(f, la, n)]
    return prev, ''.join(t for t, _ in now), [new for _, new in now]


def pieces(tree):
    """{이름: 노드}: 모듈 맨 위의 def와 클래스 안의 def (같은 이름이면 뒤의 것)."""
    found = {}

    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[prefix + node.name] = node
            elif isinstance(node, ast.ClassDef):
                walk(node.body, prefix + node.name + '.')
    walk(tree.body, '')
    return found


def _start(node):
    return min([node.lineno] + [d.lineno for d in getattr(node, 'decorator_list', [])])


def _docstring_node(node):
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        return first
    return None


def _body(node):
    """몸통의 첫 줄과 끝 줄 (docstring은 빼고, 1부터). 몸통이 비었으면 None."""
    doc = _docstring_node(node)
    stmts = node.body[1:] if doc else node.body
    if not stmts:
        return None
    first = doc.end_lineno + 1 if doc else stmts[0].lineno
    return first, node.end_lineno


def _trivial(node):
    doc = _docstring_node(node)
    stmts = node.body[1:] if doc else node.body
    if not stmts:
        return True
    if len(stmts) == 1 and isinstance(stmts[0], ast.Pass):
        return True
    return len(stmts) == 1 and isinstance(stmts[0], ast.Raise) and \
        'NotImplementedError' in ast.dump(stmts[0])


def _segment(lines, node):
    return ''.join(lines[_start(node) - 1:node.end_lineno])


# docstring이 없는 부품의 수식 (이름 -> 설명). 없으면 _made_doc의 일반 문구
MATH_DOCS = {
    'Square.backward': 'y = x^2: dL/dx = gy * 2x (모양은 x와 같다).',
    'Exp.backward': 'y = exp(x): dL/dx = gy * exp(x) = gy * y.',
    'Add.backward': 'y = x0 + x1: dL/dx0 = gy, dL/dx1 = gy.',
    'Mul.backward': 'y = x0 * x1: dL/dx0 = gy * x1, dL/dx1 = gy * x0.',
    'Neg.backward': 'y = -x: dL/dx = -gy.',
    'Sub.backward': 'y = x0 - x1: dL/dx0 = gy, dL/dx1 = -gy.',
    'Div.backward': 'y = x0 / x1: dL/dx0 = gy / x1, dL/dx1 = gy * (-x0 / x1^2).',
    'Pow.backward': 'y = x^c: dL/dx = gy * c * x^(c-1).',
    'Sin.backward': 'y = sin(x): dL/dx = gy * cos(x).',
    'Cos.backward': 'y = cos(x): dL/dx = gy * -sin(x).',
    'Log.backward': 'y = log(x): dL/dx = gy / x.',
    'Tanh.backward': 'y = tanh(x): dL/dx = gy * (1 - y^2).',
    'Reshape.backward': 'dL/dx = gy를 x의 모양으로 reshape.',
    'Transpose.backward': ('y = x.transpose(axes): dL/dx = gy.transpose(axes의 역순열)\n'
                           '        (axes가 None이면 그냥 전치).'),
    'Sum.backward': ('y = sum(x, axis, keepdims): dL/dx = gy를 x의 모양으로 broadcast_to\n'
                     '        (keepdims=False로 사라진 축은 먼저 되살린다: reshape_sum_backward).'),
    'SumTo.backward': 'y = sum_to(x, shape): dL/dx = broadcast_to(gy, x의 모양).',
    'BroadcastTo.backward': 'y = broadcast_to(x, shape): dL/dx = sum_to(gy, x의 모양).',
    'MatMul.backward': ('y = x W (x (N, D), W (D, H)): dL/dx = gy W^T (N, D),\n'
                        '        dL/dW = x^T gy (D, H).'),
    'MeanSquaredError.backward': ('y = sum((x0 - x1)^2) / N:\n'
                                  '        dL/dx0 = gy * 2(x0 - x1) / N,\n'
                                  '        dL/dx1 = -dL/dx0.'),
    'Linear.backward': ('y = x W + b: dL/dx = gy W^T, dL/dW = x^T gy,\n'
                        '        dL/db = sum_to(gy, b의 모양) (b가 None이면 None).'),
    'Sigmoid.backward': 'y = 1 / (1 + exp(-x)): dL/dx = gy * y * (1 - y).',
    'GetItem.backward': 'y = x[slices]: dL/dx = 0으로 채운 x 모양에 gy를 slices 자리에 더한다.',
    'Softmax.backward': ('y = softmax(x):\n'
                         '        dL/dx = y * gy - y * sum(y * gy, axis,\n'
                         '                                 keepdims=True).'),
    'ReLU.backward': 'y = max(x, 0): dL/dx = gy * (x > 0).',
    'MatMul.forward': 'x (N, D) @ W (D, H) -> (N, H).',
    'Sum.forward': 'x.sum(axis, keepdims). 역전파를 위해 x의 모양을 적어 둔다.',
    'Im2col.forward': 'x (N, C, H, W) -> im2col_array(x, ...). 역전파를 위해 x의 모양을 적어 둔다.',
    'Im2col.backward': 'im2col은 선형이다: dL/dx = col2im(gy, x의 모양, ...) (im2col의 전치).',
    'Col2im.forward': 'col -> col2im_array(col, input_shape, ...) (input_shape의 배열).',
    'Col2im.backward': 'col2im은 선형이다: dL/dcol = im2col(gy, ...) (col2im의 전치).',
}


def _made_doc(qual):
    """docstring이 없는 부품에 적는 짧은 설명."""
    if qual in MATH_DOCS:
        return MATH_DOCS[qual]
    name = qual.rsplit('.', 1)[-1]
    owner = qual.rsplit('.', 1)[0] if '.' in qual else None
    if name == 'forward':
        return '순전파: 입력 ndarray를 받아 출력 ndarray를 돌려준다.'
    if name == 'backward' and owner:
        return ('역전파: 출력 쪽 기울기 gy를 받아 입력마다 기울기를 돌려준다 '
                '(dL/dx = gy * dy/dx,\n        모양은 입력과 같게).')
    if name == '__init__':
        return '만들 때 받은 설정을 저장한다.'
    if owner:
        return f'{owner}의 {name}.'
    return f'{name}: 같은 이름의 Function을 만들어 부르거나, 그 계산을 한다.'


def _indent(lines, node):
    body = node.body[0]
    line = lines[body.lineno - 1]
    return line[:len(line) - len(line.lstrip())]


def stub_body(n, qual, node, lines, old=None):
    """부품 하나의 새 몸통 줄들 (docstring 아래에 들어간다). ``old``: 바뀌는 부품의
    N-1단계 몸통 줄들."""
    pad = _indent(lines, node)
    out = [] if _docstring_node(node) else [f'{pad}"""{_made_doc(qual)}"""\n']
    if old is None:
        return out + [f"{pad}raise NotImplementedError('{n}단계: {qual}을(를) 채우세요')\n"]
    hint = CHANGE_HINTS.get(n, f'docs/tutorial/mydezero.md의 {n}단계 diff를 보세요')
    return out + [f'{pad}# {n}단계: 이 부품을 고치세요.\n', f'{pad}# ({hint})\n',
                  f'{pad}# 아래는 {n - 1}단계까지의 코드다. 고친 뒤 raise 줄을 지운다.\n',
                  f"{pad}raise NotImplementedError('{n}단계: {qual}을(를) 고치세요')\n"] + old


def plan(n, prev, now, new_flags):
    """N단계 파일의 부품을 나눈다: (새 부품 {이름: 노드}, 바뀌는 부품 {이름: (노드,
    옛 노드)}, 그 자리에서 바뀌는 부품 이름의 집합)."""
    tree = ast.parse(now)
    old = pieces(ast.parse(prev)) if prev is not None else {}
    prev_lines = prev.splitlines(keepends=True) if prev is not None else []
    lines = now.splitlines(keepends=True)
    new, changed, in_place = {}, {}, set()
    for qual, node in pieces(tree).items():
        span = range(_start(node) - 1, node.end_lineno)
        if qual in old and _segment(prev_lines, old[qual]) != _segment(lines, node):
            changed[qual] = (node, old[qual])
            if not new_flags[node.lineno - 1]:
                in_place.add(qual)
        elif qual not in old and all(new_flags[i] for i in span):
            new[qual] = node
    return new, changed, in_place


def replacements(n, prev, now, new_flags):
    """[(첫 줄, 끝 줄, 새 줄들)] (1부터, 끝 줄 포함): 빈칸으로 바꿀 몸통들."""
    new, changed, _ = plan(n, prev, now, new_flags)
    lines = now.splitlines(keepends=True)
    prev_lines = prev.splitlines(keepends=True) if prev is not None else []
    out = []
    for qual, node in new.items():
        span = _body(node)
        if span and not _trivial(node):
            out.append((span[0], span[1], stub_body(n, qual, node, lines)))
    for qual, (node, old_node) in changed.items():
        span, old_span = _body(node), _body(old_node)
        old_body = prev_lines[old_span[0] - 1:old_span[1]] if old_span else []
        if span:
            out.append((span[0], span[1], stub_body(n, qual, node, lines, old_body)))
    return sorted(out, key=lambda r: r[0])


def _render(lines, start, end, repl):
    """lines[start-1:end]에 repl을 끼운 줄들 (범위 안에 든 것만)."""
    out, i = [], start
    for first, last, body in repl:
        if first < start or last > end:
            continue
        out.extend(lines[i - 1:first - 1])
        out.extend(body)
        i = last + 1
    out.extend(lines[i - 1:end])
    return out


def blank_file(n, parsed):
    """N단계 시점의 파일 하나를, N단계의 부품을 빈칸으로 바꾸어 (없는 파일이면 None)."""
    if n < parsed[0]:
        return None
    prev, now, flags = versions(parsed, n)
    lines = now.splitlines(keepends=True)
    return ''.join(_render(lines, 1, len(lines), replacements(n, prev, now, flags)))


def new_piece_names(n, parsed):
    """N단계에 채우거나 고칠 부품의 이름들 (파일 안의 순서)."""
    if n < parsed[0]:
        return []
    prev, now, flags = versions(parsed, n)
    new, changed, _ = plan(n, prev, now, flags)
    names = [q for q, node in new.items() if _body(node) and not _trivial(node)]
    names += list(changed)
    order = {q: node.lineno for q, node in pieces(ast.parse(now)).items()}
    return sorted(names, key=order.get)


# ---------------------------------------------------------------------------
# --keep: 학습자의 파일에 N단계의 새 빈칸만 더한다

def _pairs(parsed, n):
    """원본 줄마다 (N-1단계의 줄 번호 또는 None, N단계의 줄 번호 또는 None), 1부터."""
    file_step, lines = parsed
    out, p, q = [], 0, 0
    for _, first, last in lines:
        def alive(k):
            return k >= file_step and first <= k and (last is None or k <= last)
        a = alive(n - 1)
        b = alive(n)
        p, q = p + a, q + b
        if a or b:
            out.append((p if a else None, q if b else None))
    return out


def _runs(parsed, n, flags, skip):
    """N단계에 새로 더해지는 줄의 덩어리: [(앞 줄의 N-1단계 번호들, 첫 줄, 끝 줄)].
    ``skip``: 그 자리에서 바뀌는 부품의 줄(N단계 번호) — 덩어리에 넣지 않는다."""
    runs, before, current = [], [], None
    for old_no, new_no in _pairs(parsed, n):
        fresh = new_no is not None and flags[new_no - 1] and new_no not in skip
        if fresh:
            if current is None:
                current = [list(before), new_no, new_no]
                runs.append(current)
            current[2] = new_no
            continue
        current = None
        if old_no is not None:
            before.append(old_no)
    return runs


def _scope(tree, line):
    """line을 몸통에 담은 클래스들의 이름 ('A.B' 또는 모듈이면 '')."""
    names, body = [], tree.body
    while True:
        inner = [c for c in body if isinstance(c, ast.ClassDef)
                 and c.body[0].lineno <= line <= c.end_lineno]
        if not inner:
            return '.'.join(names)
        names.append(inner[0].name)
        body = inner[0].body


def _scope_node(tree, scope):
    node = tree
    for name in scope.split('.') if scope else []:
        found = [c for c in node.body if isinstance(c, ast.ClassDef) and c.name == name]
        if not found:
            return None
        node = found[-1]
    return node


def _statement_at(scope_node, line):
    for s in scope_node.body:
        if _start(s) <= line <= s.end_lineno:
            return s
    return None


class _Learner:
    """학습자의 파일: 줄들과 AST."""

    def __init__(self, text, name):
        self.lines = text.splitlines(keepends=True)
        try:
            self.tree = ast.parse(text)
        except SyntaxError as e:
            raise PlaceError(f'{name}:{e.lineno}: 파이썬으로 읽을 수 없다 ({e.msg}). '
                             '고친 뒤 다시 하세요.') from None
        self.name = name

    def after(self, line):
        """line(1부터) 뒤에 이어지는 빈 줄들 다음의 위치."""
        while line < len(self.lines) and not self.lines[line].strip():
            line += 1
        return line


def _same(node, ref_lines, learner, ref_node):
    mine = _segment(learner.lines, node).strip()
    return mine == _segment(ref_lines, ref_node).strip()


def _locate(ref_stmt, ref_lines, scope, learner, what):
    """참조 문장 ref_stmt와 같은 학습자의 문장의 끝 줄. 못 찾으면 PlaceError."""
    node = _scope_node(learner.tree, scope)
    if node is None:
        raise PlaceError(f'{learner.name}: {what}을(를) 놓을 클래스 {scope}이(가) 없다.')
    if isinstance(ref_stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        found = [s for s in node.body if getattr(s, 'name', None) == ref_stmt.name]
        label = (scope + '.' if scope else '') + ref_stmt.name
        if not found:
            raise PlaceError(f'{learner.name}: {what}을(를) {label} 뒤에 놓아야 하는데 '
                             f'{label}이(가) 없다.')
        return found[-1].end_lineno
    found = [s for s in node.body if _same(s, ref_lines, learner, ref_stmt)]
    text = ref_lines[ref_stmt.lineno - 1].strip()
    if len(found) != 1:
        why = '없다' if not found else f'{len(found)}번 있다'
        raise PlaceError(f'{learner.name}: {what}을(를) "{text}" 뒤에 놓아야 하는데 '
                         f'그 줄이 {why}.')
    return found[0].end_lineno


def _anchor_line(run, prev_tree, prev_lines, scope, learner, what):
    """덩어리를 넣을 학습자 파일의 줄 (이 줄 뒤에 넣는다)."""
    before = [k for k in run[0] if prev_lines[k - 1].strip()]
    if not before:
        raise PlaceError(f'{learner.name}: {what}을(를) 놓을 앞 줄이 없다.')
    a = before[-1]
    scope_node = _scope_node(prev_tree, scope)
    stmt = _statement_at(scope_node, a)
    if stmt is not None:
        return _locate(stmt, prev_lines, scope, learner, what)
    if scope and a < _start(scope_node.body[0]):  # 클래스 머리 바로 뒤
        node = _scope_node(learner.tree, scope)
        if node is None:
            raise PlaceError(f'{learner.name}: {what}을(를) 놓을 클래스 {scope}이(가) 없다.')
        return _start(node.body[0]) - 1
    anchor = prev_lines[a - 1].rstrip()
    same = [i + 1 for i, t in enumerate(learner.lines) if t.rstrip() == anchor]
    if len(same) == 1:
        return same[0]
    earlier = [s for s in scope_node.body if s.end_lineno < a]
    if not earlier:
        raise PlaceError(f'{learner.name}: {what}을(를) 놓을 앞 문장을 찾지 못했다.')
    return _locate(earlier[-1], prev_lines, scope, learner, what)


def _run_names(tree, first, last):
    classes = [(c.lineno, c.name) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
               and first <= c.lineno <= last]
    funcs = [(node.lineno, q) for q, node in pieces(tree).items()
             if first <= node.lineno <= last]
    names = [q for _, q in sorted(classes + funcs)]
    return ', '.join(names) if names else f'{first}~{last}번째 줄'


def keep_file(n, parsed, text, name):
    """학습자의 파일 ``text``에 N단계의 새 빈칸과 바꿀 곳의 표시를 더한 글.

    학습자의 줄은 한 글자도 바꾸지 않고 줄을 더하기만 한다. 놓을 곳을 못 찾거나(앞 줄이
    없다, 여러 번 있다), 새 부품의 이름이 이미 있거나, 파일을 읽을 수 없으면 PlaceError.
    """
    prev, now, flags = versions(parsed, n)
    learner = _Learner(text, name)
    new, changed, in_place = plan(n, prev, now, flags)
    have = pieces(learner.tree)
    for qual in new:
        if qual in have:
            raise PlaceError(f'{name}: {n}단계의 새 부품 {qual}이(가) 이미 있다 '
                             '(먼저 써 두었다면 지우거나 이름을 바꾸세요).')
    skip = set()
    for qual in in_place:
        node = changed[qual][0]
        skip.update(range(_start(node), node.end_lineno + 1))
    inserts = _run_inserts(n, parsed, (prev, now, flags), skip, learner)
    for qual in sorted(in_place, key=lambda q: changed[q][0].lineno):
        inserts.append(_mark_change(n, qual, learner))
    lines = list(learner.lines)
    if lines and not lines[-1].endswith('\n'):
        lines[-1] += '\n'
    # 뒤에서부터 넣는다; 같은 자리이면 뒤의 덩어리를 먼저 (원본의 순서대로 남게)
    numbered = ((i, line, body) for i, (line, body) in enumerate(inserts))
    for _, line, body in sorted(numbered, key=lambda x: (x[1], x[0]), reverse=True):
        lines[line:line] = body
    return ''.join(lines)


def _run_inserts(n, parsed, texts, skip, learner):
    """[(학습자 파일의 줄, 넣을 줄들)]: N단계의 새 줄 덩어리마다 (빈칸으로 바꾼 것)."""
    prev, now, flags = texts
    tree, prev_tree = ast.parse(now), ast.parse(prev)
    now_lines = now.splitlines(keepends=True)
    prev_lines = prev.splitlines(keepends=True)
    repl = replacements(n, prev, now, flags)
    inserts = []
    for run in _runs(parsed, n, flags, skip):
        what = f'{n}단계의 {_run_names(tree, run[1], run[2])}'
        body = _render(now_lines, run[1], run[2], repl)
        lines = range(run[1], run[2] + 1)
        first = next((i for i in lines if now_lines[i - 1].strip()), run[1])
        scope = _scope(tree, first)
        line = _anchor_line(run, prev_tree, prev_lines, scope, learner, what)
        if not scope and now_lines[run[1] - 1].strip():  # 모듈 맨 위: 앞 부품의 빈 줄 뒤로
            line = learner.after(line)
        inserts.append((line, body))
    return inserts


def _mark_change(n, qual, learner):
    """그 자리에서 바뀌는 부품: 학습자의 몸통 맨 위에 무엇을 바꿀지와 raise를 넣는다."""
    have = pieces(learner.tree)
    if qual not in have:
        raise PlaceError(f'{learner.name}: {n}단계에 고칠 {qual}이(가) 없다.')
    node = have[qual]
    doc = _docstring_node(node)
    line = doc.end_lineno if doc else _start(node.body[0]) - 1
    stmts = node.body[1:] if doc else node.body
    pad = _indent(learner.lines, node)
    hint = CHANGE_HINTS.get(n, f'docs/tutorial/mydezero.md의 {n}단계 diff를 보세요')
    return line, [f'{pad}# {n}단계: 이 부품을 고치세요.\n', f'{pad}# ({hint})\n',
                  f'{pad}# 고친 뒤 아래 raise 줄을 지운다.\n',
                  f"{pad}raise NotImplementedError('{n}단계: {qual}을(를) 고치세요')\n"]
