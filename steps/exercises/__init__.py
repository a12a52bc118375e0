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
"""
import contextlib
import importlib
import importlib.util
import pathlib
import sys
import traceback
import warnings

import numpy as np

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


def get(ident):
    """id로 문제를 찾는다. 없으면 KeyError (비슷한 id를 알려 준다)."""
    group = ident.split('.')[0]
    if group in GROUPS:
        _load_group(group)
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


class Checker:
    """확인 함수가 받는 도구: 답 모듈 ``m``과 비교 메서드.

    ``part(이름)``으로 지금 무엇을 확인하는지 적어 두면, 답 코드가 예외를 낼 때도
    그 이름을 알려 준다. ``count``는 통과한 확인의 수.
    """

    def __init__(self, module):
        self.m = module
        self.count = 0
        self.current = '첫 확인 전'

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
        self.current = label
        if not condition:
            raise CheckFailed(f'틀린 확인: {label}' + (f'\n  {detail}' if detail else ''))
        self.count += 1

    def equal(self, label, got, expected):
        """정확히 같아야 하는 값 (정수, 모양, 목록, 정확한 부동소수점)."""
        self.current = label
        if isinstance(expected, list) and isinstance(got, (tuple, np.ndarray)):
            got = list(got.tolist() if isinstance(got, np.ndarray) else got)
        elif isinstance(expected, tuple) and isinstance(got, list):
            got = tuple(got)
        number = isinstance(expected, (np.ndarray, float, int)) \
            and not isinstance(expected, bool)
        if number and got is not None and not isinstance(got, (tuple, list, str)):
            return self.close(label, got, expected, rtol=0.0, atol=0.0)
        if got is Ellipsis:
            raise CheckFailed(f'틀린 확인: {label}\n  값이 ...입니다 (스텁의 ...을 답으로 바꾸세요).')
        if got != expected:
            raise CheckFailed(f'틀린 확인: {label}\n'
                              f'  기대값: {expected!r}\n  받은 값: {got!r}')
        self.count += 1

    def close(self, label, got, expected, rtol=1e-7, atol=0.0):
        """|받은 값 - 기대값| <= atol + rtol * |기대값| (원소마다). 모양도 같아야 한다."""
        self.current = label
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
        self.count += 1


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


def _where_in_answer(exc, answer_file):
    """예외의 traceback에서 답 파일 안의 마지막 줄: ' (파일 a.py, 12번째 줄, 함수 f)'."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if answer_file and pathlib.Path(f.filename).resolve() == answer_file]
    if not frames:
        return ''
    f = frames[-1]
    return f' ({answer_file.name} {f.lineno}번째 줄, {f.name})'


def run(ident, module=None, path=None):
    """문제 ``ident``를 답 모듈(또는 파일 ``path``)로 확인한다.

    돌려주는 값: ``(통과했는가, 한국어 메시지)``. 답 코드의 예외도 실패로 바꾸어
    어느 확인 도중이었는지 알린다.
    """
    ex = get(ident)
    steps_on_path()  # 01~22단계 문제의 답은 step09 같은 단계 모듈을 import한다
    answer_file = pathlib.Path(path).resolve() if path is not None else None
    if answer_file is None and module is not None and getattr(module, '__file__', None):
        answer_file = pathlib.Path(module.__file__).resolve()
    t = Checker(module)
    head = f'{ex.id} ({ex.title})'
    try:
        if module is None:
            t.current = '답 파일 불러오기 (import)'
            t.m = module = load_file(path)
            t.current = '첫 확인 전'
        with np.errstate(all='ignore'), warnings.catch_warnings():
            # 고차 미분 문제의 x.grad에 남는 그래프(순환 참조) 경고: 확인이 끝나면 모두 버린다
            warnings.filterwarnings('ignore',
                                    message=r'backward\(create_graph=True\) stored')
            ex.check(t)
    except CheckFailed as e:
        return False, f'실패: {head}\n{e}\n(통과한 확인 {t.count}개)'
    except Exception as e:  # noqa: BLE001  답 코드의 어떤 예외든 실패로 알린다
        hint = ''
        if isinstance(e, NotImplementedError):
            hint = '\n  아직 구현하지 않은 곳입니다 (스텁 그대로).'
        return False, (f'실패: {head}\n예외가 난 확인: {t.current}\n'
                       f'  답 코드가 낸 예외{_where_in_answer(e, answer_file)}:\n'
                       f'  {type(e).__name__}{": " if str(e) else ""}{e}{hint}\n'
                       f'(통과한 확인 {t.count}개)')
    return True, f'통과: {head} — 확인 {t.count}개 모두 맞습니다.'


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
