"""제4고지(42~51단계) 연습 문제의 확인: docs/tutorial/stage4.md의 "연습 문제".

답은 학습자가 만드는 패키지 ``mydezero``(steps/mydezero/)로 쓴다. 그래서 답에 넘기는
Variable, Parameter, 모델도 mydezero의 것이다. 기대값은 기준 패키지 ``dezero_kr``의 같은
부품(F.tanh, Adam, DataLoader, ...)과 중앙 차분으로 계산한다.
"""
import numpy as np

import dezero_kr
import dezero_kr.optimizers
import mydezero.functions as F
from mydezero import Parameter, Variable
from mydezero.models import MLP

from . import central_diff, exercise

STUB_TANH = '''
"""제4고지 문제 1: Tanh 함수. y = tanh(x), dy/dx = 1 - y^2."""
import numpy as np

from mydezero import Function


class Tanh(Function):
    def forward(self, x):
        """x: ndarray -> tanh(x)"""
        raise NotImplementedError

    def backward(self, gy):
        """gy * (1 - y^2). 순전파의 출력 y는 self.outputs[0]()로 꺼낸다."""
        raise NotImplementedError


def tanh(x):
    return Tanh()(x)
'''


@exercise(1, 'Tanh 함수', STUB_TANH)
def check_tanh(t):
    tanh = t.get('tanh')
    xs = np.linspace(-3, 3, 13)
    mine, package = Variable(xs.copy()), dezero_kr.Variable(xs.copy())
    with t.part('tanh(x)의 순전파와 역전파'):
        y = tanh(mine)
        y.backward()
    y_pkg = dezero_kr.functions.tanh(package)
    y_pkg.backward()
    t.close('tanh(x)의 값 (F.tanh와 비교)', y, y_pkg.data, rtol=1e-14)
    t.close('x.grad (F.tanh의 기울기와 비교)', mine.grad, package.grad.data, rtol=1e-12)
    x0 = np.random.default_rng(0).standard_normal((3, 4))
    x = Variable(x0.copy())
    with t.part('sum(tanh(x)^2)의 역전파'):
        (tanh(x) ** 2).sum().backward()
    num = central_diff(lambda a: (np.tanh(a) ** 2).sum(), x0)
    t.close('sum(tanh(x)^2)의 기울기 (중앙 차분과 비교)', x.grad, num, rtol=1e-6, atol=1e-9)


STUB_COUNT = '''
"""제4고지 문제 2: 매개변수 세기."""


def count_params(layer):
    """layer.params()의 매개변수 원소 수의 합. 아직 만들어지지 않은 W(data가 None)는 세지 않는다."""
    raise NotImplementedError


# 2차원 점을 넣는 MLP((10, 20, 3))의 매개변수 원소 수: 손으로 세어 적는다
params_before = ...   # 첫 forward 전
params_after = ...    # 첫 forward 뒤
'''


@exercise(2, '매개변수 세기', STUB_COUNT)
def check_count(t):
    count_params = t.get('count_params')
    np.random.seed(0)
    model = MLP((10, 20, 3))
    with t.part('count_params(MLP((10, 20, 3))), 첫 forward 전'):
        before = count_params(model)
    t.equal('count_params(MLP((10, 20, 3))), 첫 forward 전', before, 33)
    t.equal('params_before (손으로 센 값)', t.get('params_before'), 33)
    model(np.zeros((1, 2)))
    with t.part('count_params(MLP((10, 20, 3))), 2차원 입력의 forward 뒤'):
        after = count_params(model)
    t.equal('count_params(MLP((10, 20, 3))), 2차원 입력의 forward 뒤', after, 313)
    t.equal('params_after (손으로 센 값)', t.get('params_after'), 313)
    other = MLP((5, 2))
    other(np.zeros((1, 4)))
    with t.part('count_params(MLP((5, 2))), 4차원 입력'):
        n = count_params(other)
    t.equal('count_params(MLP((5, 2))), 4차원 입력', n, 4 * 5 + 5 + 5 * 2 + 2)


STUB_BATCHES = '''
"""제4고지 문제 3: 남는 배치. 샘플 1,000개, batch_size=64."""

n_batches = ...    # 에폭당 배치 수
last_batch = ...   # 마지막 배치의 샘플 수
'''


@exercise(3, '남는 배치', STUB_BATCHES)
def check_batches(t):
    data = [(np.array([i], dtype=np.float32), i) for i in range(1000)]
    np.random.seed(0)
    sizes, seen = [], []
    for x, label in dezero_kr.DataLoader(data, batch_size=64):
        sizes.append(len(label))
        seen.extend(label.tolist())
    t.equal('n_batches (DataLoader가 한 에폭에 낸 배치 수)', t.get('n_batches'), len(sizes))
    t.equal('last_batch (마지막 배치의 크기)', t.get('last_batch'), sizes[-1])
    t.true('한 에폭에 모든 샘플이 한 번씩', sorted(seen) == list(range(1000)))


STUB_XENT = '''
"""제4고지 문제 4: 손으로 푸는 교차 엔트로피. x = (ln 1, ln 2, ln 5), 정답 t = 2."""

loss_value = ...   # 손실 L (소수 여섯째 자리까지면 된다)
x_grad = ...       # dL/dx, 원소 세 개의 목록
'''


@exercise(4, '손으로 푸는 교차 엔트로피', STUB_XENT)
def check_xent(t):
    x = dezero_kr.Variable(np.log(np.array([[1.0, 2.0, 5.0]])))
    loss = dezero_kr.functions.softmax_cross_entropy(x, np.array([2]))
    loss.backward()
    t.close('loss_value (F.softmax_cross_entropy와 비교)', t.get('loss_value'), loss.data,
            rtol=1e-6)
    t.close('x_grad (역전파와 비교)', np.reshape(t.get('x_grad'), (1, 3)), x.grad.data,
            rtol=1e-6, atol=1e-12)


STUB_ADAM = '''
"""제4고지 문제 5: Adam을 직접 만든다 (갱신 규칙과 편향 보정).

단계 t(1부터)에서 매개변수 p의 기울기 g로:
    m <- m + (1 - beta1) (g - m)
    v <- v + (1 - beta2) (g^2 - v)
    lr_t = alpha * sqrt(1 - beta2^t) / (1 - beta1^t)     # 편향 보정
    p <- p - lr_t * m / (sqrt(v) + eps)
m, v는 매개변수마다 0에서 시작한다. 단계 수 t는 Adam이 직접 센다: 46단계의
Optimizer에는 t가 없으므로, self.t = 0에서 시작해 update()를 덮어쓰고 거기서
self.t를 1 늘린 뒤 기반 클래스의 update()를 부른다(그래서 update_one이 불릴 때는
이미 이번 단계의 값). steps/mydezero/optimizers.py의 Adam과 같은 모양이고,
기준 패키지의 dezero_kr.optimizers.Adam과 여러 단계 동안 같은 값을 내야 한다.
"""
import numpy as np

from mydezero.optimizers import Optimizer


class Adam(Optimizer):
    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__()
        raise NotImplementedError

    def update(self):
        """self.t를 1 늘리고 기반 클래스의 update()를 부른다."""
        raise NotImplementedError

    def update_one(self, param):
        """param.data를 param.grad.data로 제자리에서 갱신한다."""
        raise NotImplementedError
'''


class _Params:
    """params()로 매개변수를 내놓는 가장 작은 모델 (옵티마이저의 setup에 넘긴다).
    ``parameter``는 mydezero(답) 또는 dezero_kr(기준)의 Parameter."""

    def __init__(self, arrays, parameter):
        self.list = [parameter(a.copy()) for a in arrays]

    def params(self):
        yield from self.list


def _adam_loss(ps, target, functions):
    a, b = ps
    return (((a - target) ** 2 * np.array([1.0, 10.0, 0.1])).sum()
            + functions.sum(functions.sin(b) * b))


@exercise(5, 'Adam 만들기', STUB_ADAM)
def check_adam(t):
    cls = t.get('Adam')
    rng = np.random.default_rng(1)
    start = [rng.standard_normal(3), rng.standard_normal((2, 2))]
    target = np.array([1.0, -2.0, 0.5])
    with t.part('Adam()의 기본값'):
        default = cls()
    defaults = (('alpha', 0.001), ('beta1', 0.9), ('beta2', 0.999), ('eps', 1e-8))
    for name, value in defaults:
        t.equal(f'Adam().{name}의 기본값', getattr(default, name, None), value)
    for kwargs in (dict(alpha=0.1), dict(alpha=0.05, beta1=0.8, beta2=0.99, eps=1e-6)):
        call = 'Adam(' + ', '.join(f'{k}={v}' for k, v in kwargs.items()) + ')'
        with t.part(f'{call} 만들기와 setup'):
            mine = _Params(start, Parameter)
            opt = cls(**kwargs).setup(mine)
        ref = _Params(start, dezero_kr.Parameter)
        ref_opt = dezero_kr.optimizers.Adam(**kwargs).setup(ref)
        for step in range(1, 7):
            for model, functions in ((mine, F), (ref, dezero_kr.functions)):
                for p in model.list:
                    p.cleargrad()
                _adam_loss(model.list, target, functions).backward()
            with t.part(f'{call}의 {step}번째 update()'):
                opt.update()
            ref_opt.update()
            for i, (p, q) in enumerate(zip(mine.list, ref.list)):
                t.close(f'{call}: {step}번째 갱신 뒤 매개변수 {i} (dezero_kr의 Adam과 비교)',
                        p.data, q.data,
                        rtol=1e-9, atol=1e-10)


STUB_GETITEM = '''
"""제4고지 문제 6: GetItem(x[slices])의 역전파.

y = x[slices]. 역전파: x와 같은 모양의 0에 gy를 slices 자리에 **더한다**. 같은 원소를
여러 번 꺼냈으면(slices = [0, 2, 2]처럼) 그 자리에 기울기가 모두 더해져야 한다
(힌트: np.add.at). 정수, 슬라이스, 정수 배열, 그 튜플을 모두 받는다.
"""
import numpy as np

from mydezero import Function


class GetItem(Function):
    def __init__(self, slices):
        self.slices = slices

    def forward(self, x):
        raise NotImplementedError

    def backward(self, gy):
        """x와 같은 모양의 기울기 (ndarray 또는 Variable)."""
        raise NotImplementedError


def get_item(x, slices):
    return GetItem(slices)(x)
'''

GETITEM_CASES = (
    ('정수 1', 1),
    ('슬라이스 1:4', slice(1, 4)),
    ('정수 배열 [0, 2, 2, 4, 0] (겹치는 자리)', np.array([0, 2, 2, 4, 0])),
    ('튜플 ([0, 0, 1], [1, 1, 2]) (같은 원소 두 번)',
     (np.array([0, 0, 1]), np.array([1, 1, 2]))),
    ('튜플 (:, [2, 0, 2])', (slice(None), np.array([2, 0, 2]))),
)


@exercise(6, 'GetItem의 역전파', STUB_GETITEM)
def check_getitem(t):
    get_item = t.get('get_item')
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((5, 3))
    for name, slices in GETITEM_CASES:
        x = Variable(x0.copy())
        with t.part(f'x[{name}]의 순전파'):
            y = get_item(x, slices)
        t.close(f'x[{name}]의 값', y, x0[slices], rtol=0.0)
        gy = rng.standard_normal(np.shape(x0[slices]))
        y.grad = Variable(gy)
        with t.part(f'x[{name}]의 역전파'):
            y.backward()
        expected = np.zeros_like(x0)
        np.add.at(expected, slices, gy)
        t.close(f'x[{name}]의 x.grad (0에 gy를 slices 자리에 더한 것)', x.grad, expected,
                rtol=1e-15)
    slices = GETITEM_CASES[2][1]
    w = rng.standard_normal(len(slices))[:, None]
    x = Variable(x0.copy())
    with t.part('sum(x[[0, 2, 2, 4, 0]] * w)의 역전파'):
        (get_item(x, slices) * w).sum().backward()
    num = central_diff(lambda a: (a[slices] * w).sum(), x0)
    t.close('sum(x[[0, 2, 2, 4, 0]] * w)의 기울기 (중앙 차분과 비교)', x.grad, num,
            rtol=1e-7, atol=1e-9)

