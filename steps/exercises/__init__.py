"""연습 문제의 확인 코드: 학습자의 파일과 정답 파일이 같은 assert를 지난다.

문제 하나는 id(예: ``stage4.5``), 제목, 스텁(시작 파일)의 글, 그리고 확인 함수
``check(t)``로 이루어진다. 확인 함수는 답 파일을 모듈로 불러온 ``t.m``에서 문제가
요구한 이름(``Cube``, ``Adam`` ...)을 꺼내 값과 기울기를 비교한다. 비교는 모두
``Checker``의 메서드(``close``, ``equal``, ``true``)로 하므로, 틀렸을 때 **어느 확인**
이 **얼마나** 틀렸는지(최대 절대 차이, 기대값과 받은 값)를 한국어로 알려 준다.

같은 확인 함수를 두 곳이 쓴다.

* ``python steps/check.py ID 내_답.py``: 학습자의 파일을 확인한다.
* ``tests/test_exercises.py``: ``docs/tutorial/answers/``의 정답 파일이 모든 확인을
  통과하고, 스텁과 일부러 틀린 답은 실패하는지 본다.

그래서 정답과 확인이 어긋날 수 없다. 문제 묶음(고지)마다 이 폴더에 모듈이 하나 있고,
모듈 안에서 ``@exercise(번호, 제목, 스텁)``으로 문제를 등록한다.

학습자의 파일은 확인기의 프로세스에서 돌지 않는다(``run(ID, path=...)``). 확인 함수를
두 번 돌린다: 확인기의 프로세스에서 정답 파일로 돌려 확인마다 기대값과 허용을 모으고
(``expected_checks``), 자식 프로세스(``child.py``, ``sandbox.py``)에서 학습자의 파일로
돌려 확인마다 받은 값을 돌려받는다. 비교와 판정은 확인기가 한다. 그래서 답 코드가
``np.abs``를 바꾸거나 ``sys.exit(0)``을 불러도 통과가 되지 않고, 끝나지 않으면 시간
제한에서 자식의 프로세스 그룹째 끝낸다. 확인 함수의 차례(확인의 수와 순서)는 답에 따라
달라지지 않아야 한다. ``t.true``의 조건만은 자식 안에서 계산된 참/거짓을 믿는다.
"""
import contextlib
import importlib
import importlib.util
import pathlib
import sys
import traceback
import warnings

import numpy as np

from . import sandbox

# 문제 묶음: id의 앞부분 = 이 폴더의 모듈 이름 = docs/tutorial/answers/의 파일 이름
GROUPS = ('stage1', 'stage2', 'stage3', 'stage4_tensors', 'stage4', 'stage5',
          'stage6_beyond', 'theory')

_REGISTRY = {}


class Exercise:
    """문제 하나: id, 제목, 스텁의 글, 확인 함수 ``check(t)``."""

    def __init__(self, ident, title, stub, check):
        self.id, self.title, self.stub, self.check = ident, title, stub, check


def exercise(number, title, stub):
    """확인 함수를 ``<묶음>.<number>`` 문제로 등록하는 데코레이터."""
    def register(check):
        group = check.__module__.rsplit('.', 1)[-1]
        ident = f'{group}.{number}'
        _REGISTRY[ident] = Exercise(ident, title, stub.lstrip('\n'), check)
        return check
    return register


def _load_group(group):
    importlib.import_module(f'{__name__}.{group}')


def all_exercises():
    """등록된 모든 문제, 묶음 순서대로 (같은 묶음 안에서는 번호 순)."""
    for group in GROUPS:
        _load_group(group)

    def order(ident):
        group, number = ident.split('.')
        return GROUPS.index(group), int(number)
    return [_REGISTRY[i] for i in sorted(_REGISTRY, key=order)]


PACKAGE = 'package'  # 패키지 확인기의 묶음: package.N = N단계 (exercises/package.py)


def package_steps():
    """{단계: 제목}: 패키지 확인기가 부품을 확인하는 단계."""
    from . import package
    return {n: title for n, (title, _) in sorted(package.STEPS.items())}


def _package_exercise(ident):
    from . import package
    number = ident.split('.', 1)[1]
    if not number.isascii() or not number.isdigit() or int(number) not in range(23, 61):
        return None
    n = int(number)
    title, check = package.STEPS.get(n, (f'{n}단계: 패키지에 더한 부품이 없다', lambda t: None))
    return Exercise(f'{PACKAGE}.{n}', title, '', check)


def get(ident):
    """id로 문제를 찾는다. 없으면 KeyError (비슷한 id를 알려 준다). ``package.N``은
    N단계(23~60)의 패키지 확인."""
    group = ident.split('.')[0]
    if group in GROUPS:
        _load_group(group)
    if group == PACKAGE and '.' in ident:
        found = _package_exercise(ident)
        if found is not None:
            return found
    if ident not in _REGISTRY:
        ids = [e.id for e in all_exercises()]
        near = [i for i in ids if i.startswith(group)] or ids
        raise KeyError(f'연습 문제 {ident!r}는 없습니다. 있는 것: {", ".join(near)}')
    return _REGISTRY[ident]


class CheckFailed(Exception):
    """확인 하나가 틀렸다: 메시지가 어느 확인인지와 차이를 말한다."""


def _array(value):
    """Variable이면 .data를, 아니면 그대로 ndarray로."""
    value = getattr(value, 'data', value)
    return np.asarray(value)


def _fmt(a):
    a = np.asarray(a)
    if a.ndim == 0:
        return repr(a.item()) if a.dtype != object else repr(a)
    return np.array2string(a, precision=10, threshold=12, separator=', ')


def _compare_true(label, got, expected=True, detail=''):
    if not got:
        raise CheckFailed(f'틀린 확인: {label}' + (f'\n  {detail}' if detail else ''))


def _compare_equal(label, got, expected):
    """정확히 같아야 하는 값 (정수, 모양, 목록, 정확한 부동소수점)."""
    if isinstance(expected, list) and isinstance(got, (tuple, np.ndarray)):
        got = list(got.tolist() if isinstance(got, np.ndarray) else got)
    elif isinstance(expected, tuple) and isinstance(got, list):
        got = tuple(got)
    number = isinstance(expected, (np.ndarray, float, int)) \
        and not isinstance(expected, bool)
    if number and got is not None and not isinstance(got, (tuple, list, str)):
        return _compare_close(label, got, expected, rtol=0.0, atol=0.0)
    if got is Ellipsis:
        raise CheckFailed(f'틀린 확인: {label}\n  값이 ...입니다 (스텁의 ...을 답으로 바꾸세요).')
    if got != expected:
        raise CheckFailed(f'틀린 확인: {label}\n'
                          f'  기대값: {expected!r}\n  받은 값: {got!r}')


def _compare_close(label, got, expected, rtol=1e-7, atol=0.0):
    """|받은 값 - 기대값| <= atol + rtol * |기대값| (원소마다). 모양도 같아야 한다."""
    if got is None:
        raise CheckFailed(f'틀린 확인: {label}\n'
                          '  값이 None입니다 (아직 구현하지 않았거나 return을 빠뜨렸나요?).')
    try:
        g = _array(got).astype(np.float64)
    except (TypeError, ValueError):
        hint = ' (스텁의 ...을 답으로 바꾸세요)' if 'Ellipsis' in repr(got) else ''
        raise CheckFailed(f'틀린 확인: {label}\n  숫자가 아닌 값 {got!r}{hint}') from None
    e = _array(expected).astype(np.float64)
    if g.shape != e.shape:
        raise CheckFailed(f'틀린 확인: {label}\n  모양이 다릅니다.\n'
                          f'  기대한 모양: {e.shape}\n  받은 모양: {g.shape}')
    with np.errstate(invalid='ignore'):
        diff = np.abs(g - e)
        bad = ~(diff <= atol + rtol * np.abs(e))
    if bad.any():
        diff = np.where(np.isnan(diff), np.inf, diff)
        where = (np.unravel_index(int(np.argmax(diff)), diff.shape)
                 if diff.ndim else ())
        at = f' (위치 {tuple(int(i) for i in where)})' if where else ''
        count = f' (틀린 원소 {int(bad.sum())}/{bad.size}개)' if bad.size > 1 else ''
        raise CheckFailed(
            f'틀린 확인: {label}\n'
            f'  최대 절대 차이: {diff[where]:.3e}{at}\n'
            f'  허용: atol={atol:g}, rtol={rtol:g}{count}\n'
            f'  기대값: {_fmt(e)}\n  받은 값: {_fmt(g)}')


# 확인의 종류 -> 비교 함수 (label, 받은 값, 기대값, **허용)
COMPARE = {'true': _compare_true, 'equal': _compare_equal, 'close': _compare_close}


class Checker:
    """확인 함수가 받는 도구: 답 모듈 ``m``과 비교 메서드.

    ``part(이름)``으로 지금 무엇을 확인하는지 적어 두면, 답 코드가 예외를 낼 때도
    그 이름을 알려 준다. ``count``는 통과한 확인의 수. 비교는 모두 ``compare``를
    지나고, ``current``가 바뀌면 ``moved``가 불린다: 하위 클래스가 거기서 값을
    기록한다(기준 답의 기대값, 자식 프로세스의 받은 값).
    """

    def __init__(self, module):
        self.m = module
        self.count = 0
        self.current = '첫 확인 전'

    @property
    def current(self):
        """지금 하고 있는 확인의 이름."""
        return self._current

    @current.setter
    def current(self, label):
        self._current = label
        self.moved(label)

    def moved(self, label):
        """current가 바뀔 때마다 (하위 클래스가 자식 프로세스에서 보고한다)."""

    @contextlib.contextmanager
    def part(self, label):
        before, self.current = self.current, label
        yield
        self.current = before

    def get(self, name):
        """답 파일의 이름 ``name``. 없으면 실패 (스텁의 이름을 그대로 써야 한다)."""
        if not hasattr(self.m, name):
            raise CheckFailed(f'답 파일에 `{name}`이(가) 없습니다. 스텁(--stub)에 있는 이름을 '
                              '그대로 쓰세요.')
        return getattr(self.m, name)

    def true(self, label, condition, detail=''):
        self.compare('true', label, bool(condition), True, detail=detail)

    def equal(self, label, got, expected):
        """정확히 같아야 하는 값 (정수, 모양, 목록, 정확한 부동소수점)."""
        self.compare('equal', label, got, expected)

    def close(self, label, got, expected, rtol=1e-7, atol=0.0):
        """|받은 값 - 기대값| <= atol + rtol * |기대값| (원소마다). 모양도 같아야 한다."""
        self.compare('close', label, got, expected, rtol=rtol, atol=atol)

    def compare(self, kind, label, got, expected, **how):
        self.current = label
        try:
            COMPARE[kind](label, got, expected, **how)
        except CheckFailed as e:
            e.at_check = True  # 비교에서 났다 (get의 "이름이 없다"와 구별)
            raise
        self.count += 1


class _Reference(Checker):
    """기준 답으로 돌며 확인마다 (종류, 이름, 기대값, 허용)을 모은다 (부모 프로세스)."""

    def __init__(self, module):
        super().__init__(module)
        self.expected = []

    def compare(self, kind, label, got, expected, **how):
        # 기대값은 그 자리의 사본으로 (뒤의 코드가 배열을 바꾸어도 그대로)
        how = {} if kind == 'true' else how
        self.expected.append((kind, label, sandbox.decode(sandbox.encode(expected)), how))
        super().compare(kind, label, got, expected, **how)


def central_diff(f, x, eps=1e-6):
    """스칼라 함수 f(ndarray) -> float의 기울기를 중앙 차분으로 (float64)."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        old = x[i]
        x[i] = old + eps
        up = float(f(x.copy()))
        x[i] = old - eps
        down = float(f(x.copy()))
        x[i] = old
        grad[i] = (up - down) / (2 * eps)
    return grad


def load_file(path, name='answer'):
    """학습자의 파이썬 파일을 모듈로 불러온다 (``if __name__ == '__main__'`` 아래는 돌지 않는다)."""
    path = pathlib.Path(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise CheckFailed(f'{path}를 파이썬 파일로 읽을 수 없습니다.')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_package(folder):
    """``folder/mydezero``를 ``mydezero``로 불러온다 (학습자의 패키지: 자식 프로세스에서).
    그 폴더의 것이 아니면(없다) CheckFailed."""
    folder = pathlib.Path(folder).resolve()
    for name in [m for m in sys.modules if m == 'mydezero' or m.startswith('mydezero.')]:
        del sys.modules[name]
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    module = importlib.import_module('mydezero')
    where = pathlib.Path(getattr(module, '__file__', None) or '.').resolve()
    if folder / 'mydezero' not in where.parents:
        raise CheckFailed(f'{folder}/mydezero/__init__.py가 없습니다 (패키지 폴더를 주세요).')
    return module


def _in_answer(filename, answer_file):
    path = pathlib.Path(filename).resolve()
    if answer_file.is_dir():
        return answer_file in path.parents
    return path == answer_file


def _where_in_answer(exc, answer_file):
    """예외의 traceback에서 답 파일(또는 패키지 폴더) 안의 마지막 줄:
    ' (a.py 12번째 줄, f)' 또는 ' (mydezero/functions.py 12번째 줄, f)'."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if answer_file and _in_answer(f.filename, answer_file)]
    if not frames:
        return ''
    f = frames[-1]
    path = pathlib.Path(f.filename).resolve()
    name = path.relative_to(answer_file).as_posix() if answer_file.is_dir() else path.name
    return f' ({name} {f.lineno}번째 줄, {f.name})'


def _hint(exc):
    if isinstance(exc, NotImplementedError):
        return '\n  아직 구현하지 않은 곳입니다 (스텁 그대로).'
    if isinstance(exc, SystemExit):
        return '\n  답 파일에서 sys.exit()를 부르지 마세요 (확인이 끝나지 않습니다).'
    return ''


def _text(exc):
    try:
        return str(exc)
    except Exception:  # noqa: BLE001  답 코드의 예외 클래스가 str()에서 다시 예외를 낸다
        return '(메시지를 읽을 수 없는 예외)'


@contextlib.contextmanager
def _seeded():
    """확인 동안 NumPy의 전역 난수를 시드 0에서 (기준 답과 자식이 같은 난수를 보도록)."""
    state = np.random.get_state()
    np.random.seed(0)
    try:
        yield
    finally:
        np.random.set_state(state)


def outcome(ex, t, path=None, catch=Exception):
    """문제 ``ex``의 확인을 Checker ``t``로 돌린다. ``path``가 있으면 먼저 불러와 ``t.m``으로.

    돌려주는 값(JSON으로 보낼 수 있는 dict): ``{'outcome': 'done'}``,
    ``{'outcome': 'failed', 'message', 'at_check'}`` (CheckFailed; at_check는 비교에서
    났는가), ``{'outcome': 'error', 'current', 'where', 'type', 'text', 'hint'}``
    (답 코드의 예외 중 ``catch``에 드는 것: 자식 프로세스는 BaseException을 준다).
    """
    answer_file = pathlib.Path(path).resolve() if path is not None else None
    module_file = getattr(t.m, '__file__', None)
    if answer_file is None and module_file:
        answer_file = pathlib.Path(module_file).resolve()
    try:
        if path is not None:
            t.current = '답 파일 불러오기 (import)'
            t.m = load_package(path) if ex.id.startswith(PACKAGE + '.') else load_file(path)
            t.current = '첫 확인 전'
        with _seeded(), np.errstate(all='ignore'), warnings.catch_warnings():
            # 고차 미분 문제의 x.grad에 남는 그래프(순환 참조) 경고: 확인이 끝나면 모두 버린다
            warnings.filterwarnings('ignore',
                                    message=r'backward\(create_graph=True\) stored')
            ex.check(t)
    except CheckFailed as e:
        return {'outcome': 'failed', 'message': _text(e),
                'at_check': getattr(e, 'at_check', False)}
    except catch as e:  # noqa: BLE001  답 코드의 어떤 예외든 실패로 알린다
        return {'outcome': 'error', 'current': t.current,
                'where': _where_in_answer(e, answer_file), 'type': type(e).__name__,
                'text': _text(e), 'hint': _hint(e)}
    return {'outcome': 'done'}


def _failed(head, text, count):
    return False, f'실패: {head}\n{text}\n(통과한 확인 {count}개)'


def _error_message(head, out, count):
    text = out['text']
    return _failed(head, f'예외가 난 확인: {out["current"]}\n'
                         f'  답 코드가 낸 예외{out["where"]}:\n'
                         f'  {out["type"]}{": " if text else ""}{text}{out["hint"]}', count)


def _head(ex):
    return f'{ex.id} ({ex.title})'


def _passed(ex, count):
    return True, f'통과: {_head(ex)} — 확인 {count}개 모두 맞습니다.'


def _verdict_in_process(ex, t, out):
    if out['outcome'] == 'done':
        return _passed(ex, t.count)
    if out['outcome'] == 'failed':
        return _failed(_head(ex), out['message'], t.count)
    return _error_message(_head(ex), out, t.count)


TIMEOUT = 30.0  # 초: 가장 느린 정답도 1초 안에 끝난다
ANSWERS = pathlib.Path(__file__).resolve().parents[2] / 'docs' / 'tutorial' / 'answers'
_REFERENCES = {}


def _reference_module(group):
    if group not in _REFERENCES:
        _REFERENCES[group] = load_file(ANSWERS / f'{group}.py', f'reference_{group}')
    return _REFERENCES[group]


def expected_checks(ident):
    """기준 답(docs/tutorial/answers/)으로 문제 ``ident``를 이 프로세스에서 돌려 얻은
    확인의 목록 ``[(종류, 이름, 기대값, 허용), ...]``. 기준 답 파일이 없거나 통과하지
    못하면 RuntimeError (확인기 쪽의 잘못이다)."""
    ex = get(ident)
    steps_on_path()
    try:
        group = ident.split('.')[0]
        reference = (importlib.import_module('mydezero') if group == PACKAGE
                     else _reference_module(group))
    except OSError as e:
        raise RuntimeError(f'기준 답 파일을 읽을 수 없습니다: {e.filename} ({e.strerror})') from None
    t = _Reference(reference)
    out = outcome(ex, t)
    if out['outcome'] != 'done':
        raise RuntimeError(f'기준 답이 {ident}의 확인을 통과하지 못했습니다:\n'
                           f'{_verdict_in_process(ex, t, out)[1]}')
    return t.expected


def run(ident, module=None, path=None, timeout=TIMEOUT):
    """문제 ``ident``를 답 모듈(또는 파일 ``path``)로 확인한다.

    돌려주는 값: ``(통과했는가, 한국어 메시지)``. 답 코드의 예외도 실패로 바꾸어
    어느 확인 도중이었는지 알린다.

    * ``path``: 학습자의 파일. 답은 자식 프로세스(``exercises.child``)에서 ``timeout``초
      까지 돌고, 받은 값만 돌려보낸다. 기대값은 이 프로세스가 기준 답으로 계산하고
      비교도 여기서 한다(답 코드가 ``np.abs``를 바꾸어도, ``sys.exit(0)``을 불러도
      통과가 되지 않는다). 시간을 넘기면 "시간 초과"로 실패.
    * ``module``: 믿을 수 있는 모듈(기준 답)을 이 프로세스에서 바로 확인한다.
    """
    ex = get(ident)
    if path is None:
        steps_on_path()  # 01~22단계 문제의 답은 step09 같은 단계 모듈을 import한다
        t = Checker(module)
        return _verdict_in_process(ex, t, outcome(ex, t))
    expected = expected_checks(ident)
    child = sandbox.run_child('exercises.child', [ex.id, pathlib.Path(path).resolve()],
                              timeout)
    return _verdict(ex, expected, child, timeout)


def _verdict(ex, expected, child, timeout):
    """자식이 보낸 줄과 기준 답의 기대값으로 판정한다 (통과는 여기서만 나온다)."""
    head, current, out = _head(ex), '첫 확인 전', None
    got = []
    for line in child.lines:
        if 'part' in line:
            current = str(line['part'])
        elif 'check' in line:
            got.append(line)
        elif 'outcome' in line:
            out = line
            break
    for i, line in enumerate(got):
        problem = _compare_sent(line, expected[i] if i < len(expected) else None)
        if problem:
            return _failed(head, problem, i)
    n = len(got)
    if child.timed_out:
        return _failed(head, f'시간 초과: 답 코드가 {timeout:g}초 안에 끝나지 않았습니다 '
                             f'(끝나지 않는 반복?).\n  확인 중이던 곳: {current}', n)
    if out is None:
        return _failed(head, '답 코드가 확인이 끝나기 전에 프로세스를 끝냈습니다 '
                             f'(종료 코드 {child.returncode}; os._exit()나 sys.exit()?).\n'
                             f'  확인 중이던 곳: {current}', n)
    return _final(ex, out, expected, n)


def _final(ex, out, expected, n):
    head = _head(ex)
    try:
        if out['outcome'] == 'error':
            return _error_message(head, {k: str(out[k]) for k in
                                         ('current', 'where', 'type', 'text', 'hint')}, n)
        if out['outcome'] == 'failed' and out.get('at_check') and n:
            # 기준 답의 기대값으로는 맞는데 자식 안에서 틀렸다: 자식의 기대값이 달랐다
            return _failed(head, f'틀린 확인: {expected[n - 1][1]}\n'
                                 '  답 파일을 불러온 프로세스에서 이 확인의 기대값이 '
                                 '달라졌습니다\n  (답 파일이 numpy나 dezero_kr를 '
                                 '바꾸지 않았나요?).', n - 1)
        if out['outcome'] == 'failed':
            return _failed(head, str(out['message']), n)
    except (KeyError, TypeError):
        pass
    if out.get('outcome') == 'done' and n == len(expected):
        return _passed(ex, n)
    return _failed(head, f'확인 {len(expected)}개 가운데 {n}개만 돌고 끝났습니다.', n)


def _compare_sent(line, expected):
    """자식이 보낸 확인 하나를 기대값과 비교한다: 틀렸으면 메시지, 맞으면 None."""
    if expected is None or line.get('check') != expected[0]:
        return (f'틀린 확인: {expected[1] if expected else line.get("label")}\n'
                '  확인의 차례가 기준 답과 다릅니다.')
    kind, label, value, how = expected
    try:
        got = sandbox.decode(line.get('got'))
    except (ValueError, KeyError, TypeError):
        return f'틀린 확인: {label}\n  자식 프로세스가 보낸 값을 읽을 수 없습니다.'
    if kind == 'true':
        how = {'detail': str(line.get('detail', ''))}
    try:
        COMPARE[kind](label, got, value, **how)
    except CheckFailed as e:
        return str(e)
    return None


def stub_module(ident, folder):
    """스텁을 ``folder``에 파일로 쓰고 그 경로를 돌려준다 (테스트용)."""
    path = pathlib.Path(folder) / f'stub_{ident.replace(".", "_")}.py'
    path.write_text(get(ident).stub, encoding='utf-8')
    return path


def steps_on_path():
    """steps/ 폴더를 sys.path에 (01~22단계의 모듈을 답 파일이 import할 수 있게)."""
    steps = str(pathlib.Path(__file__).resolve().parent.parent)
    if steps not in sys.path:
        sys.path.insert(0, steps)
