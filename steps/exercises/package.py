"""패키지 확인기: ``python steps/check.py package N 폴더``가 N단계에 더한 부품을 확인한다.

N단계의 확인 함수 ``check(t)``에서 ``t.m``은 확인할 ``mydezero`` 패키지다. 확인기의
프로세스에서는 기준 패키지(``steps/mydezero``)로 돌려 기대값을 모으고, 자식 프로세스에서는
학습자의 패키지(``폴더/mydezero``)로 돌려 받은 값을 돌려받는다(연습 문제와 같은 길:
``exercises.run``). 기대값은 두 가지다.

* ``dezero_kr``로 계산한 값과 기울기, 그리고 float64 중앙 차분 (``_function_case``): 역전파는
  1이 아닌 gy(시드 고정 난수)에서 시작하므로 gy를 잊은 backward도 틀린다.
* 기준 패키지가 낸 값 (``_same``): 층의 초깃값, 데이터셋, 그래프의 DOT 글처럼 dezero_kr와
  일부러 다른 것(docs/tutorial/mydezero.md의 "DeZero와 다른 점")은 기준 패키지와 비교한다.

부품이 없는 단계(24, 25 ...)는 확인할 것이 없고, check.py가 단계 스크립트의 출력만 비교한다.
"""
import importlib
import os
import re
import tempfile

import numpy as np

import dezero_kr
import dezero_kr.functions as RF
import dezero_kr.functions_conv as RFC
import dezero_kr.layers as RL
import dezero_kr.optimizers as RO

from . import central_diff

STEPS = {}  # 단계 -> (제목, 확인 함수)


def step(n, title):
    """N단계의 확인 함수를 등록한다. 끝에 "N단계까지의 빈칸이 남지 않았다"를 더한다(확인
    함수가 부르지 않는 부품도, 빈칸 그대로이면 여기서 틀린다)."""
    def register(check):
        def with_stub_scan(t):
            check(t)
            _no_stub_left(t, n)
        STEPS[n] = (f'{n}단계: {title}', with_stub_scan)
        return check
    return register


STUB = re.compile(r"raise NotImplementedError\('(\d+)단계: ([\w.]+)을\(를\) (?:채우|고치)세요'\)")


def _no_stub_left(t, n):
    """패키지의 파일에 N단계까지의 빈칸(mydezero_at.py --blank의 raise 줄)이 남았는가."""
    with t.part('남은 빈칸 찾기'):
        folder = os.path.dirname(os.path.abspath(mod('').__file__))
        left = []
        for name in sorted(os.listdir(folder)):
            if name.endswith('.py'):
                with open(os.path.join(folder, name), encoding='utf-8', errors='replace') as f:
                    left += [f'{name}: {m.group(2)} ({m.group(1)}단계)'
                             for m in STUB.finditer(f.read()) if int(m.group(1)) <= n]
    t.equal(f'{n}단계까지 채우지 않은 빈칸 (raise NotImplementedError 줄)', left, [])


def mod(name):
    """확인하는 패키지의 모듈 (``mod('functions')`` = mydezero.functions)."""
    return importlib.import_module('mydezero.' + name if name else 'mydezero')


def _data(v):
    return getattr(v, 'data', v)


RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3))
B = RNG.standard_normal((2, 3))
ROW = RNG.standard_normal(3)
COL = RNG.standard_normal((2, 1))
POS = RNG.uniform(0.5, 2.0, (2, 3))
T3 = RNG.standard_normal((2, 3, 4))
MAT = RNG.standard_normal((3, 4))
X4 = RNG.standard_normal((2, 3, 7, 7))
W4 = RNG.standard_normal((4, 3, 3, 3))
B4 = RNG.standard_normal(4)
BIAS = RNG.standard_normal(4)
DROP = RNG.standard_normal((50, 40))
DX = RNG.standard_normal((1, 2, 3, 3))
DW = RNG.standard_normal((2, 3, 3, 3))
COL2IM = RNG.standard_normal((16, 8))  # im2col(DX, 2, 1, 1)의 모양
# 위의 배열은 불러올 때 한 번 만든다: 확인 함수 안에서 RNG를 쓰면 확인기와 자식 프로세스의
# 난수 상태가 달라진다


def _seed_grad(core, gy):  # noqa: D401
    """출력 쪽 기울기: core_simple은 ndarray, core는 Variable."""
    return gy if core.__name__.endswith('core_simple') else core.Variable(gy)


def _function_case(t, label, mine, ref, arrays, core='core', rtol=1e-10, ref_core=None):
    """mine(*Variables)와 dezero_kr의 ref(*Variables): 값, dtype, 입력마다 기울기(dezero_kr와,
    그리고 중앙 차분과). 역전파는 고정 난수 gy에서 시작한다."""
    core = mod(core)
    ref_core = ref_core or dezero_kr
    xs = [core.Variable(np.array(a, dtype=np.float64)) for a in arrays]
    rxs = [ref_core.Variable(np.array(a, dtype=np.float64)) for a in arrays]
    ry = ref(*rxs)
    gy = np.random.default_rng(len(label)).standard_normal(ry.shape)
    with t.part(f'{label}: 순전파'):
        y = mine(*xs)
    t.close(f'{label}: 값 (dezero_kr와 비교)', _data(y), ry.data, rtol=rtol, atol=1e-12)
    t.equal(f'{label}: 값의 dtype', str(np.asarray(_data(y)).dtype), str(ry.data.dtype))
    with t.part(f'{label}: 역전파 (gy는 1이 아닌 난수)'):
        y.grad = _seed_grad(core, gy)
        y.backward()
    ry.grad = ref_core.Variable(gy)
    ry.backward()
    for i, (x, rx) in enumerate(zip(xs, rxs)):
        name = f'{label}: 입력 {i}의 기울기'
        t.close(f'{name} (dezero_kr와 비교)', _data(x.grad), _data(rx.grad), rtol=rtol,
                atol=1e-12)
        t.close(f'{name} (중앙 차분과 비교)', _data(x.grad),
                _numeric(ref, ref_core, arrays, i, gy), rtol=1e-5, atol=1e-7)


def _numeric(ref, ref_core, arrays, i, gy):
    def f(a):
        args = [np.array(x, dtype=np.float64) for x in arrays]
        args[i] = a
        with ref_core.no_grad():
            return float(np.sum(_data(ref(*[ref_core.Variable(x) for x in args])) * gy))
    return central_diff(f, arrays[i])


def _same(t, label, value, rtol=1e-12, atol=1e-12):
    """기준 패키지(steps/mydezero)가 같은 코드로 낸 값과 비교한다 (확인기의 프로세스에서
    ``value``가 곧 기대값이다). 배열의 목록은 개수를 먼저, 그다음 하나씩."""
    if isinstance(value, list) and any(isinstance(v, np.ndarray) for v in value):
        t.equal(f'{label}: 개수 (기준 패키지와 비교)', len(value), len(value))
        for i, v in enumerate(value):
            _same(t, f'{label} [{i}]', v, rtol, atol)
    elif isinstance(value, (str, bool, tuple, list, int)) or value is None:
        t.equal(f'{label} (기준 패키지와 비교)', value, value)
    else:
        t.close(f'{label} (기준 패키지와 비교)', value, value, rtol=rtol, atol=atol)


def _close_all(t, label, got, expected, **tol):
    """배열의 목록: 개수, 그다음 하나씩 (기대값의 개수만큼: 확인의 차례가 답에 따라
    달라지지 않게)."""
    t.equal(f'{label}: 개수', len(got), len(expected))
    for i, e in enumerate(expected):
        t.close(f'{label} [{i}]', got[i], e, **tol)


def _arithmetic(t, core, ref_core):
    cases = [
        ('사칙연산과 거듭제곱 (Add, Mul, Sub, Div, Pow, Neg)',
         lambda a, b: (a + b) * a - b / (a * a + 1) + a ** 3 - (-b), (A, B)),
        ('파이썬 수와의 연산 (radd, rmul, rsub, rdiv)',
         lambda a: 3.0 - a * 2.0 + 1.0 / (a * a + 1.0) + 2 * a - a / 4.0 + 5 + a, (A,)),
        ('같은 변수를 여러 번 (기울기 더하기, 세대 순서)',
         lambda a: (a * a) * (a * a) + a * a + a, (A,)),
    ]
    for label, f, arrays in cases:
        _function_case(t, label, f, f, arrays, core=core, ref_core=ref_core)


def _variable_basics(t, core):
    V = mod(core).Variable
    x = V(np.arange(6.0).reshape(2, 3))
    with t.part('Variable의 속성'):
        props = (x.shape, x.ndim, x.size, str(x.dtype), len(x))
    t.equal('Variable의 shape, ndim, size, dtype, len', props, ((2, 3), 2, 6, 'float64', 2))
    with t.part('repr(Variable)'):
        text = repr(V(np.array([1.0, 2.0])))
    _same(t, 'repr(Variable([1., 2.]))', text)
    with t.part('no_grad 안의 계산'):
        with mod(core).no_grad():
            y = x * 2.0
    t.true('no_grad 안에서 만든 변수에는 creator가 없다', y.creator is None)
    with t.part('retain_grad 없는 역전파'):
        h = x * x
        z = h + x
        z.backward()
    t.true('역전파 뒤 중간 변수의 grad는 None (retain_grad=False)', h.grad is None)


@step(23, 'core_simple (Variable, Function, 연산자, 역전파)')
def check_23(t):
    cs = mod('core_simple')
    _variable_basics(t, 'core_simple')
    _arithmetic(t, 'core_simple', dezero_kr)
    _function_case(t, 'exp(x ** 2)', lambda a: cs.exp(a ** 2),
                   lambda a: RF.exp(a ** 2), (A * 0.5,), core='core_simple')
    x = cs.Variable(np.array(2.0))
    with t.part('Variable을 받지 않는 연산 (as_array, as_variable)'):
        arr = cs.as_array(3.0)
    t.true('as_array(3.0)은 0차원 ndarray', isinstance(arr, np.ndarray) and arr.ndim == 0)
    t.true('as_variable(Variable)은 그대로', cs.as_variable(x) is x)


@step(26, 'utils.get_dot_graph (계산 그래프의 DOT 글)')
def check_26(t):
    cs = mod('core_simple')
    utils = mod('utils')
    x = cs.Variable(np.array(1.0), name='x')
    y = cs.Variable(np.array(2.0), name='y')
    z = (x + y) * x
    z.name = 'z'
    with t.part('get_dot_graph(z)'):
        text = utils.get_dot_graph(z, verbose=False)
    _same(t, 'get_dot_graph(z, verbose=False)', text)
    with t.part('get_dot_graph(z, verbose=True)'):
        text = utils.get_dot_graph(z, verbose=True)
    _same(t, 'get_dot_graph(z, verbose=True)', text)


@step(30, 'core (기울기도 Variable), functions의 sin/cos/exp/log, utils의 수치 미분')
def check_30(t):
    _variable_basics(t, 'core')
    _arithmetic(t, 'core', dezero_kr)
    F = mod('functions')
    _function_case(t, 'sin, cos, exp, log', lambda a, p: F.sin(a) * F.cos(p) + F.exp(a) * F.log(p),
                   lambda a, p: RF.sin(a) * RF.cos(p) + RF.exp(a) * RF.log(p), (A, POS))
    _higher_order(t, 'sin', F.sin, RF.sin)
    utils = mod('utils')
    core = mod('core')
    with t.part('utils.numerical_grad'):
        num = utils.numerical_grad(lambda v: F.sin(v) * v, core.Variable(A.copy()))
    _same(t, 'utils.numerical_grad(sin(x) * x, x)', num, rtol=1e-6, atol=1e-9)
    with t.part('utils.array_allclose, array_equal'):
        same = (bool(utils.array_equal(A, A.copy())), bool(utils.array_allclose(A, A + 1e-12)),
                bool(utils.array_equal(A, B)))
    t.equal('array_equal(A, A), array_allclose(A, A+1e-12), array_equal(A, B)', same,
            (True, True, False))


def _higher_order(t, name, mine, ref):
    """create_graph=True로 세 번 미분한 값 (dezero_kr와 비교)."""
    def derivatives(core, f):
        x = core.Variable(np.array([0.3, -1.2]))
        y = f(x)
        out = []
        for _ in range(3):
            x.cleargrad()
            y.backward(create_graph=True)
            y = x.grad
            out.append(np.array(_data(y)))
        x.cleargrad()
        return out
    with t.part(f'{name}의 고차 미분 (backward(create_graph=True))'):
        got = derivatives(mod('core'), mine)
    _close_all(t, f'{name}의 1~3차 도함수 (dezero_kr와 비교)', got,
               derivatives(dezero_kr, ref), rtol=1e-10, atol=1e-12)


@step(35, 'Tanh와 고차 미분')
def check_35(t):
    F = mod('functions')
    _function_case(t, 'tanh', F.tanh, RF.tanh, (A,))
    _higher_order(t, 'tanh', F.tanh, RF.tanh)


@step(38, 'reshape, transpose (함수와 Variable의 메서드), flatten')
def check_38(t):
    F = mod('functions')
    cases = [
        ('reshape(x, (3, 2))', lambda a: F.reshape(a, (3, 2)), lambda a: RF.reshape(a, (3, 2)),
         (A,)),
        ('x.reshape(6), x.reshape((3, 2))', lambda a: a.reshape(6).reshape((3, 2)),
         lambda a: a.reshape(6).reshape((3, 2)), (A,)),
        ('transpose(x) (2차원)', F.transpose, RF.transpose, (A,)),
        ('transpose(x, (2, 0, 1)) (축을 준 전치)', lambda a: F.transpose(a, (2, 0, 1)),
         lambda a: RF.transpose(a, (2, 0, 1)), (T3,)),
        ('x.transpose(1, 2, 0), x.T', lambda a: a.transpose(1, 2, 0) + a.T.transpose(1, 0, 2),
         lambda a: a.transpose(1, 2, 0) + a.T.transpose(1, 0, 2), (T3,)),
        ('flatten(x (2, 3, 4))', F.flatten, RF.flatten, (T3,)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays)


@step(39, 'sum (axis, keepdims), average, mean, broadcast_to(값만)')
def check_39(t):
    F = mod('functions')
    cases = [
        ('sum(x)', F.sum, RF.sum, (T3,)),
        ('sum(x, axis=1)', lambda a: F.sum(a, axis=1), lambda a: RF.sum(a, axis=1), (T3,)),
        ('sum(x, axis=(0, 2), keepdims=True)', lambda a: F.sum(a, (0, 2), True),
         lambda a: RF.sum(a, (0, 2), True), (T3,)),
        ('x.sum(axis=0)', lambda a: a.sum(axis=0), lambda a: a.sum(axis=0), (A,)),
        ('average(x)', F.average, RF.average, (A,)),
        ('mean(x, axis=0)', lambda a: F.mean(a, axis=0), lambda a: RF.mean(a, axis=0), (A,)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays)
    with t.part('broadcast_to(x, (2, 3))'):
        y = F.broadcast_to(mod('core').Variable(ROW.copy()), (2, 3))
    t.close('broadcast_to(x (3,), (2, 3))의 값', _data(y), np.broadcast_to(ROW, (2, 3)))


@step(40, '브로드캐스트: sum_to, broadcast_to, 사칙연산의 역전파')
def check_40(t):
    F = mod('functions')
    sums = [((1, 3, 4), T3.sum(0, keepdims=True), ' (keepdims로 모양을 지킨다)'),
            ((2, 1, 1), T3.sum((1, 2), keepdims=True), ''), ((4,), T3.sum((0, 1)), ''),
            ((3, 1), T3.sum((0, 2))[:, None], '')]
    for shape, expected, note in sums:
        label = f'utils.sum_to(x (2, 3, 4), {shape}){note}'
        with t.part(label):
            got = mod('utils').sum_to(T3, shape)
        t.close(label, got, expected)
    cases = [
        ('sum_to(x, (1, 3))', lambda a: F.sum_to(a, (1, 3)), lambda a: RF.sum_to(a, (1, 3)),
         (A,)),
        ('sum_to(x, (2, 1))', lambda a: F.sum_to(a, (2, 1)), lambda a: RF.sum_to(a, (2, 1)),
         (A,)),
        ('broadcast_to(x (3,), (2, 3))', lambda r: F.broadcast_to(r, (2, 3)),
         lambda r: RF.broadcast_to(r, (2, 3)), (ROW,)),
        ('x (2, 3) + y (3,)', lambda a, r: a + r, lambda a, r: a + r, (A, ROW)),
        ('x (2, 3) - y (2, 1)', lambda a, c: a - c, lambda a, c: a - c, (A, COL)),
        ('x (2, 1) - y (2, 3)', lambda c, a: c - a, lambda c, a: c - a, (COL, A)),
        ('x (2, 3) * y (2, 1)', lambda a, c: a * c, lambda a, c: a * c, (A, COL)),
        ('x (3,) / y (2, 3)', lambda r, p: r / p, lambda r, p: r / p, (ROW, POS)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays)


@step(41, '행렬 곱 MatMul (matmul, x.matmul, x.dot, x @ W)')
def check_41(t):
    F = mod('functions')
    _function_case(t, 'matmul(x (2, 3), W (3, 4))', F.matmul, RF.matmul, (A, MAT))
    _function_case(t, 'x.matmul(W) + x.dot(W) + x @ W',
                   lambda a, w: a.matmul(w) + a.dot(w) + a @ w,
                   lambda a, w: RF.matmul(a, w) * 3, (A, MAT))


@step(42, '평균 제곱 오차 (mean_squared_error)')
def check_42(t):
    F = mod('functions')
    _function_case(t, 'mean_squared_error_simple(x, y)', F.mean_squared_error_simple,
                   RF.mean_squared_error, (A, B))
    _function_case(t, 'mean_squared_error(x, y)', F.mean_squared_error, RF.mean_squared_error,
                   (A, B))


@step(43, 'linear, sigmoid')
def check_43(t):
    F = mod('functions')
    _function_case(t, 'linear(x, W, b)', F.linear, RF.linear, (A, MAT, BIAS))
    _function_case(t, 'linear(x, W) (b 없이)', F.linear, RF.linear, (A, MAT))
    _function_case(t, 'sigmoid(x)', F.sigmoid, RF.sigmoid, (A,))


def _layer_grads(t, label, layer, x, loss_fn):
    with t.part(f'{label}: 순전파와 역전파'):
        y = layer(x)
        layer.cleargrads()
        loss = loss_fn(y)
        loss.backward()
        grads = [_data(p.grad) for p in layer.params()]
    _same(t, f'{label}: 출력', _data(y), rtol=1e-10)
    _same(t, f'{label}: 매개변수의 기울기', grads, rtol=1e-10)


@step(44, 'Parameter, Layer, layers.Linear')
def check_44(t):
    core, L, F = mod('core'), mod('layers'), mod('functions')
    p = core.Parameter(np.ones(2))
    t.true('Parameter는 Variable이다', isinstance(p, core.Variable))
    np.random.seed(0)
    layer = L.Linear(3)
    with t.part('Linear(3)에 x (2, 4)를 넣는다'):
        y = layer(A @ np.ones((3, 4)))
    t.equal('Linear(3)(x (2, 4))의 모양과 W의 모양', (y.shape, layer.W.shape), ((2, 3), (4, 3)))
    np.random.seed(0)
    layer = L.Linear(3, in_size=3)
    _layer_grads(t, 'Linear(3, in_size=3)', layer, A, lambda y: F.sum(y * y))
    with t.part('Layer.params, cleargrads'):
        names = sorted(k for k in ('W', 'b') if isinstance(getattr(layer, k), core.Parameter))
        count = len(list(layer.params()))
        layer.cleargrads()
        cleared = all(q.grad is None for q in layer.params())
    t.equal('Linear의 매개변수 (W, b)와 params()의 수', (names, count), (['W', 'b'], 2))
    t.true('cleargrads() 뒤 모든 grad가 None', cleared)


@step(45, 'Model, MLP, Layer.named_params (층 안의 층)')
def check_45(t):
    models, F = mod('models'), mod('functions')
    np.random.seed(0)
    model = models.MLP((5, 3))
    _layer_grads(t, 'MLP((5, 3))', model, A, lambda y: F.sum(y * y))
    with t.part('MLP.params, named_params'):
        count = len(list(model.params()))
        names = [name for name, _ in model.named_params()]
    t.equal('MLP((5, 3))의 params()의 수', count, 4)
    _same(t, 'MLP((5, 3)).named_params()의 이름', names)
    np.random.seed(0)
    tanh_mlp = models.MLP((4, 4, 2), activation=F.tanh)
    _layer_grads(t, 'MLP((4, 4, 2), activation=tanh)', tanh_mlp, A, lambda y: F.sum(y * y))


def _train(models_mod, opt_mod, F, name, hooks=()):
    np.random.seed(5)
    model = models_mod.MLP((6, 2))
    opt = getattr(opt_mod, name)().setup(model)
    for hook in hooks:
        opt.add_hook(hook(model))
    x = np.random.default_rng(1).standard_normal((20, 3))
    y = np.random.default_rng(2).standard_normal((20, 2))
    for _ in range(4):
        loss = F.mean_squared_error(model(x), y)
        model.cleargrads()
        loss.backward()
        opt.update()
    return [np.array(_data(p)) for p in model.params()]


def _optimizers(t, names):
    """names의 옵티마이저로 MLP((6, 2))를 4번 갱신한 매개변수 (dezero_kr의 같은 이름과 비교)."""
    O, models, F = mod('optimizers'), mod('models'), mod('functions')
    for name in names:
        with t.part(f'{name}으로 MLP((6, 2))를 4번 갱신'):
            got = _train(models, O, F, name)
        _close_all(t, f'{name}: 4번 갱신한 뒤의 매개변수 (dezero_kr의 {name}와 비교)', got,
                   _train(dezero_kr.models, RO, RF, name), rtol=1e-5, atol=1e-7)


def _hook(t, label, make):
    """SGD에 훅 make(model, optimizers 모듈)을 달고 4번 갱신한 매개변수 (dezero_kr와 비교)."""
    O, models, F = mod('optimizers'), mod('models'), mod('functions')
    with t.part(f'SGD와 훅 {label}'):
        got = _train(models, O, F, 'SGD', [lambda m: make(m, O)])
    _close_all(t, f'SGD와 훅 {label} (dezero_kr와 비교)', got,
               _train(dezero_kr.models, RO, RF, 'SGD', [lambda m: make(m, RO)]),
               rtol=1e-5, atol=1e-7)


@step(46, '옵티마이저 (Optimizer, SGD, MomentumSGD)')
def check_46(t):
    _optimizers(t, ['SGD', 'MomentumSGD'])


@step(47, 'get_item, softmax_simple, softmax_cross_entropy_simple, clip')
def check_47(t):
    F = mod('functions')
    labels = np.array([2, 0])
    cases = [
        ('x[1], x[:, 1:]', lambda a: a[1] * a[:, 1:].sum(), lambda a: a[1] * a[:, 1:].sum(),
         (A,)),
        ('get_item(x, 같은 위치 여러 번)',
         lambda a: F.get_item(a, (np.array([0, 1, 0]), np.array([2, 2, 2]))),
         lambda a: RF.get_item(a, (np.array([0, 1, 0]), np.array([2, 2, 2]))), (A,)),
        ('softmax_simple(x)', F.softmax_simple, RF.softmax, (A,)),
        ('softmax_cross_entropy_simple(x, t)', lambda a: F.softmax_cross_entropy_simple(a, labels),
         lambda a: RF.softmax_cross_entropy(a, labels), (A,)),
        ('clip(x, -0.5, 0.5)', lambda a: F.clip(a, -0.5, 0.5), lambda a: RF.clip(a, -0.5, 0.5),
         (A,)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays)


@step(48, 'datasets.get_spiral, 넘치지 않는 softmax, softmax_cross_entropy, log_softmax, '
          'logsumexp')
def check_48(t):
    with t.part('get_spiral(train=True)'):
        x, label = mod('datasets').get_spiral(train=True)
    _same(t, 'get_spiral(train=True)의 x', x)
    _same(t, 'get_spiral(train=True)의 t', label)
    F = mod('functions')
    labels = np.array([2, 0])
    cases = [
        ('softmax(x)', F.softmax, RF.softmax, (A,)),
        ('log_softmax(x)', F.log_softmax, RF.log_softmax, (A,)),
        ('softmax_cross_entropy(x, t)', lambda a: F.softmax_cross_entropy(a, labels),
         lambda a: RF.softmax_cross_entropy(a, labels), (A,)),
        ('softmax(x * 300) (큰 점수에서 넘치지 않게)', lambda a: F.softmax(a * 300),
         lambda a: RF.softmax(a * 300), (A,)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays)
    with t.part('utils.logsumexp'):
        got = mod('utils').logsumexp(A * 300, axis=1)
    t.close('utils.logsumexp(x * 300, axis=1) (넘치지 않게)', got,
            np.log(np.exp(A * 300 - (A * 300).max(1, keepdims=True)).sum(1, keepdims=True))
            + (A * 300).max(1, keepdims=True), rtol=1e-12)


@step(49, 'Dataset, Spiral, transforms')
def check_49(t):
    ds, T = mod('datasets'), mod('transforms')
    with t.part('Spiral(train=False)'):
        data = ds.Spiral(train=False)
        first = data[3]
        size = len(data)
    _same(t, 'Spiral(train=False)[3]', [np.asarray(first[0]), int(first[1])])
    t.equal('len(Spiral(train=False))', size, 300)
    x = np.arange(12.0).reshape(3, 4)
    with t.part('transforms.Compose, Normalize, Flatten, AsType, ToFloat'):
        got = [T.Compose([T.Normalize(2.0, 4.0), T.Flatten()])(x),
               T.AsType(np.float32)(x), T.ToFloat()(x.astype(np.int64))]
    _same(t, 'Compose([Normalize(2, 4), Flatten()])(x)', got[0])
    for label, value in zip(('AsType(float32)', 'ToFloat()'), got[1:]):
        t.equal(f'transforms.{label}(x)의 dtype', str(value.dtype), str(value.dtype))
        _same(t, f'transforms.{label}(x)', value)
    with t.part('Spiral(transform=...)'):
        item = ds.Spiral(train=False, transform=lambda v: v * 2)[0][0]
    _same(t, 'Spiral(transform=lambda v: v * 2)[0]의 x', np.asarray(item))


@step(50, 'DataLoader, accuracy')
def check_50(t):
    F = mod('functions')
    y = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    label = np.array([1, 0, 0, 0])
    with t.part('accuracy(y, t)'):
        acc = F.accuracy(y, label)
    t.close('accuracy(y, t)', _data(acc), RF.accuracy(y, label).data)
    with t.part('DataLoader(Spiral, 100, shuffle=True)를 두 바퀴'):
        np.random.seed(0)
        loader = mod('').DataLoader(mod('datasets').Spiral(train=False), 100, shuffle=True)
        batches = [b for _ in range(2) for b in loader]
    t.equal('DataLoader 두 바퀴의 배치 수', len(batches), 6)
    _same(t, 'DataLoader의 배치 (x, t)', [np.asarray(v) for b in batches for v in b])


@step(51, 'relu, Digits')
def check_51(t):
    F = mod('functions')
    _function_case(t, 'relu(x)', F.relu, RF.relu, (A,))
    with t.part('datasets.Digits(train=False)'):
        data = mod('datasets').Digits(train=False)
        arrays = [np.asarray(data.data), np.asarray(data.label)]
    _same(t, 'Digits(train=False)의 data와 label', arrays)


@step(52, 'cuda (CuPy가 없을 때 NumPy로), 배열 모듈을 고르는 코어')
def check_52(t):
    cuda, core = mod('cuda'), mod('core')
    x = core.Variable(A.copy())
    with t.part('cuda.get_array_module, as_numpy'):
        got = (cuda.get_array_module(x) is np, cuda.get_array_module(A) is np,
               type(cuda.as_numpy(A)) is np.ndarray, float(cuda.as_numpy(np.float64(2.0))))
    t.equal('get_array_module(Variable), get_array_module(ndarray), as_numpy', got,
            (True, True, True, 2.0))
    with t.part('Variable.to_cpu'):
        x.to_cpu()
    t.true('to_cpu() 뒤에도 ndarray', type(x.data) is np.ndarray)
    _arithmetic(t, 'core', dezero_kr)
    F = mod('functions')
    labels = np.array([2, 0])
    _function_case(t, 'broadcast_to, get_item, softmax_cross_entropy',
                   lambda a, r: F.softmax_cross_entropy(F.broadcast_to(r, (2, 3)) * a[:, :], labels),
                   lambda a, r: RF.softmax_cross_entropy(RF.broadcast_to(r, (2, 3)) * a, labels),
                   (A, ROW))
    check_44(t)
    check_50(t)
    O, models = mod('optimizers'), mod('models')
    with t.part('MomentumSGD로 MLP((6, 2))를 4번 갱신'):
        got = _train(models, O, F, 'MomentumSGD')
    _close_all(t, 'MomentumSGD: 4번 갱신한 뒤의 매개변수 (dezero_kr와 비교)', got,
               _train(dezero_kr.models, RO, RF, 'MomentumSGD'), rtol=1e-5, atol=1e-7)


@step(53, 'Layer.save_weights, load_weights')
def check_53(t):
    models = mod('models')
    np.random.seed(0)
    model = models.MLP((5, 3))
    y = _data(model(A))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, 'w.npz')
        with t.part('save_weights'):
            model.save_weights(path)
        np.random.seed(1)
        other = models.MLP((5, 3))
        other(A)
        with t.part('load_weights'):
            other.load_weights(path)
            again = _data(other(A))
    t.close('save_weights 뒤 load_weights한 모델의 출력 (처음 모델과 같다)', again, y, rtol=0)
    _same(t, '처음 모델의 출력', y)


@step(54, 'dropout, test_mode, Config.train, AdaGrad, RMSprop, Adam, WeightDecay')
def check_54(t):
    F, core = mod('functions'), mod('core')
    x = DROP
    np.random.seed(3)
    with t.part('dropout(x, 0.3) (학습 중)'):
        got = _data(F.dropout(core.Variable(x), 0.3))
    np.random.seed(3)
    t.close('dropout(x, 0.3) (학습 중: 남긴 값은 1/(1-0.3)배, dezero_kr와 비교)', got,
            RF.dropout(dezero_kr.Variable(x), 0.3).data, rtol=1e-12)
    with t.part('test_mode 안의 dropout(x)'):
        with core.test_mode():
            train_flag = bool(core.Config.train)
            got = _data(F.dropout(core.Variable(x), 0.3))
    t.equal('test_mode 안의 Config.train', train_flag, False)
    t.close('test_mode 안의 dropout(x, 0.3) (평가 때는 x 그대로)', got, x, rtol=0)
    t.equal('test_mode 밖의 Config.train', bool(core.Config.train), True)
    _optimizers(t, ['AdaGrad', 'RMSprop', 'Adam'])
    _hook(t, 'WeightDecay(0.1)', lambda m, o: o.WeightDecay(0.1))


@step(55, 'utils.get_conv_outsize, get_deconv_outsize, pair, max_backward_shape, max, min')
def check_55(t):
    utils = mod('utils')
    with t.part('get_conv_outsize, get_deconv_outsize, pair'):
        got = [utils.get_conv_outsize(7, 3, 2, 1), utils.get_conv_outsize(4, 3, 1, 1),
               utils.get_deconv_outsize(4, 3, 2, 1), utils.pair(3), utils.pair((2, 1))]
    t.equal('get_conv_outsize(7, 3, 2, 1), (4, 3, 1, 1), get_deconv_outsize(4, 3, 2, 1), '
            'pair(3), pair((2, 1))', got, [4, 4, 7, (3, 3), (2, 1)])
    with t.part('max_backward_shape'):
        got = [utils.max_backward_shape(X4, (0, 2)), utils.max_backward_shape(X4, 1),
               utils.max_backward_shape(X4, None)]
    t.equal('max_backward_shape(x (2, 3, 7, 7), (0, 2)), (.., 1), (.., None)', got,
            [[1, 3, 1, 7], [2, 1, 7, 7], [1, 1, 1, 1]])
    F = mod('functions')
    cases = [
        ('max(x, axis=1), min(x, axis=0)', lambda a: F.max(a, axis=1) * F.min(a, axis=0).sum(),
         lambda a: RF.max(a, axis=1) * RF.min(a, axis=0).sum(), (A,)),
        ('max(x), min(x, axis=1, keepdims=True)',
         lambda a: F.max(a) * F.min(a, axis=1, keepdims=True),
         lambda a: RF.max(a) * RF.min(a, axis=1, keepdims=True), (A,)),
        ('max(x, axis=(2, 3)) (창의 최댓값)', lambda x: F.max(x, axis=(2, 3)),
         lambda x: RF.max(x, axis=(2, 3)), (X4,)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays, rtol=1e-9)


IM2COL_SETTINGS = [(X4, 3, 2, 1), (X4, (2, 3), (1, 2), 0), (DX, 2, 1, 1)]


@step(56, 'im2col_array, col2im_array, im2col, col2im, average_pooling')
def check_56(t):
    FC = mod('functions_conv')
    for x, k, s, p in IM2COL_SETTINGS:
        args = f'x {x.shape}, {k}, stride={s}, pad={p}'
        for to_matrix in (True, False):
            label = f'im2col_array({args}, to_matrix={to_matrix})'
            with t.part(label):
                col = FC.im2col_array(x, k, s, p, to_matrix)
            expected = RFC.im2col_array(x, k, s, p, to_matrix)
            t.close(f'{label} (dezero_kr와 비교)', col, expected, rtol=0)
            c = np.random.default_rng(len(label)).standard_normal(expected.shape)
            label = f'col2im_array(c, {args}, to_matrix={to_matrix})'
            with t.part(label):
                img = FC.col2im_array(c, x.shape, k, s, p, to_matrix)
            t.close(f'{label} (dezero_kr와 비교)', img,
                    RFC.col2im_array(c, x.shape, k, s, p, to_matrix), rtol=1e-12)
    cases = [
        ('im2col(x, 3, stride=2, pad=1)', lambda x: FC.im2col(x, 3, 2, 1),
         lambda x: RF.im2col(x, 3, 2, 1), (X4,)),
        ('im2col(x, (2, 3), stride=(1, 2), pad=0, to_matrix=False)',
         lambda x: FC.im2col(x, (2, 3), (1, 2), 0, to_matrix=False),
         lambda x: RF.im2col(x, (2, 3), (1, 2), 0, to_matrix=False), (X4,)),
        ('col2im(c, (1, 2, 3, 3), 2, stride=1, pad=1)',
         lambda c: FC.col2im(c, DX.shape, 2, 1, 1),
         lambda c: RF.col2im(c, DX.shape, 2, 1, 1), (COL2IM,)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays, rtol=1e-9)
    with t.part('F.im2col, F.col2im (functions에서 내보낸다)'):
        F = mod('functions')
        same = (F.im2col is FC.im2col, F.col2im is FC.col2im)
    t.equal('F.im2col is functions_conv.im2col, F.col2im is functions_conv.col2im', same,
            (True, True))
    cases = [
        ('average_pooling(x, 2, 2)', lambda x: FC.average_pooling(x, 2, 2),
         lambda x: RF.average_pooling(x, 2, 2), (X4,)),
        ('average_pooling(x, 3, 2, 1)', lambda x: FC.average_pooling(x, 3, 2, 1),
         lambda x: RF.average_pooling(x, 3, 2, 1), (X4,)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays, rtol=1e-9)


@step(57, 'conv2d_simple, conv2d, deconv2d, layers.Conv2d, layers.Deconv2d')
def check_57(t):
    F = mod('functions')
    cases = [
        ('conv2d_simple(x, W, b, stride=2, pad=1)', lambda x, w, b: F.conv2d_simple(x, w, b, 2, 1),
         lambda x, w, b: RF.conv2d(x, w, b, 2, 1), (X4, W4, B4)),
        ('conv2d(x, W, b, stride=2, pad=1)', lambda x, w, b: F.conv2d(x, w, b, 2, 1),
         lambda x, w, b: RF.conv2d(x, w, b, 2, 1), (X4, W4, B4)),
        ('conv2d(x, W) (b 없이, stride=1)', F.conv2d, RF.conv2d, (X4, W4)),
        ('deconv2d(x, W, stride=2, pad=1)', lambda x, w: F.deconv2d(x, w, stride=2, pad=1),
         lambda x, w: RF.deconv2d(x, w, stride=2, pad=1),
         (DX, DW)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays, rtol=1e-9)
    L = mod('layers')
    np.random.seed(0)
    _layer_grads(t, 'layers.Conv2d(4, 3, stride=2, pad=1)', L.Conv2d(4, 3, 2, 1), X4,
                 lambda y: F.sum(y * y))
    np.random.seed(0)
    _layer_grads(t, 'layers.Deconv2d(2, 3, stride=2, pad=1)', L.Deconv2d(2, 3, 2, 1), X4,
                 lambda y: F.sum(y * y))


@step(58, 'pooling_simple, pooling, x.max/x.min, models.VGG16, FreezeParam')
def check_58(t):
    F = mod('functions')
    cases = [
        ('pooling_simple(x, 2, 2)', lambda x: F.pooling_simple(x, 2, 2),
         lambda x: RF.pooling(x, 2, 2), (X4,)),
        ('pooling(x, 3, 2, 1)', lambda x: F.pooling(x, 3, 2, 1), lambda x: RF.pooling(x, 3, 2, 1),
         (X4,)),
        ('x.max(), x.min(axis=1, keepdims=True)', lambda a: a.max() * a.min(axis=1, keepdims=True),
         lambda a: a.max() * a.min(axis=1, keepdims=True), (A,)),
    ]
    for label, mine, ref, arrays in cases:
        _function_case(t, label, mine, ref, arrays, rtol=1e-9)
    np.random.seed(0)
    with t.part('VGG16()의 순전파 (1, 3, 32, 32)'):
        y = mod('models').VGG16()(np.random.default_rng(0).standard_normal((1, 3, 32, 32)))
    _same(t, 'VGG16()(x (1, 3, 32, 32))의 출력', _data(y), rtol=1e-9, atol=1e-12)
    _hook(t, 'FreezeParam(l0)', lambda m, o: o.FreezeParam(m.l0))


def _recurrent(t, label, make, ref_make, F, steps=3):
    xs = np.random.default_rng(4).standard_normal((steps, 2, 1))

    def run(make, f):
        np.random.seed(1)
        cell = make(4)
        ys = [cell(x) for x in xs]
        loss = f.sum(ys[-1] * ys[-1])
        loss.backward()
        return [np.array(_data(y)) for y in ys] + [np.array(_data(p.grad)) for p in cell.params()]
    with t.part(f'{label}: 3걸음과 역전파'):
        got = run(make, F)
    _close_all(t, f'{label}: 3걸음의 출력과 기울기 (dezero_kr와 비교)', got, run(ref_make, RF),
               rtol=1e-8, atol=1e-10)


@step(59, 'unchain_backward, RNN, SimpleRNN, SinCurve')
def check_59(t):
    core, F, L = mod('core'), mod('functions'), mod('layers')
    x = core.Variable(np.array(2.0))
    with t.part('unchain_backward'):
        h = x * x
        y = h * 3.0
        y.unchain_backward()
        cut = (h.creator is None, y.creator is not None)
        y.backward()
    t.equal('unchain_backward 뒤 (h.creator is None, y.creator is not None)', cut, (True, True))
    t.true('unchain_backward 뒤의 역전파는 x까지 가지 않는다 (x.grad is None)', x.grad is None)
    t.close('unchain_backward 뒤 h.grad', _data(h.grad), 3.0)
    _recurrent(t, 'RNN(4)', L.RNN, RL.RNN, F)
    with t.part('SinCurve()'):
        data = mod('datasets').SinCurve()
        arrays = [np.asarray(data.data), np.asarray(data.label)]
    _same(t, 'SinCurve()의 data와 label', arrays)
    with t.part('SimpleRNN(4, 1)'):
        np.random.seed(0)
        model = mod('models').SimpleRNN(4, 1)
        ys = [_data(model(np.array([[v]]))) for v in (0.1, 0.5, -0.3)]
    _same(t, 'SimpleRNN(4, 1)의 3걸음 출력', ys, rtol=1e-10)


@step(60, 'LSTM, SeqDataLoader')
def check_60(t):
    _recurrent(t, 'LSTM(4)', mod('layers').LSTM, RL.LSTM, mod('functions'))
    with t.part('SeqDataLoader(SinCurve(), 100) 두 바퀴'):
        loader = mod('').SeqDataLoader(mod('datasets').SinCurve(), 100)
        batches = [np.asarray(v) for _ in range(2) for b in loader for v in b]
    t.equal('SeqDataLoader 두 바퀴의 배열 수', len(batches), 40)
    _same(t, 'SeqDataLoader의 배치 (x, t)', batches)
