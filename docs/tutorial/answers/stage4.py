"""제4고지(42~51단계) 연습 문제의 정답. docs/tutorial/stage4.md에 접혀서 보인다.

문제마다 스텁(``python steps/check.py stage4.N --stub``)이 요구하는 이름을 정의한다.
확인 코드는 steps/exercises/stage4.py 한 곳에 있고, 학습자의 답과 이 파일이 같은
확인을 지난다. 23단계부터처럼 직접 만든 패키지 mydezero(steps/mydezero/)를 쓴다.
"""
import numpy as np

from mydezero import Function
from mydezero.optimizers import Optimizer


# --- 문제 1 -------------------------------------------------------------------
class Tanh(Function):
    """y = tanh(x), dy/dx = 1 - y^2.

    미분을 출력 y로 적을 수 있으므로 backward는 입력 대신 순전파의 출력을
    다시 쓴다. Variable 연산으로 적었으니 2차 미분도 된다.
    """

    def forward(self, x):
        return np.tanh(x)

    def backward(self, gy):
        y = self.outputs[0]()  # 순전파의 출력을 다시 쓴다
        return gy * (1 - y * y)


def tanh(x):
    return Tanh()(x)


# --- 문제 2 -------------------------------------------------------------------
def count_params(layer):
    """data가 있는 매개변수의 원소 수의 합.

    2 -> 10 -> 20 -> 3: 2*10+10 + 10*20+20 + 20*3+3 = 313. 첫 forward 전에는
    편향만 있다(10 + 20 + 3 = 33): W는 입력 크기를 본 뒤에 만들어진다.
    """
    return sum(p.data.size for p in layer.params() if p.data is not None)


params_before = 10 + 20 + 3
params_after = 2 * 10 + 10 + 10 * 20 + 20 + 20 * 3 + 3

# --- 문제 3 -------------------------------------------------------------------
# ceil(1000 / 64) = 16개. 마지막 배치는 1000 - 15 * 64 = 40개.
n_batches = -(-1000 // 64)
last_batch = 1000 - 15 * 64

# --- 문제 4 -------------------------------------------------------------------
# p = (1/8, 2/8, 5/8)이므로 L = -ln(5/8) = ln 1.6 = 0.470004,
# dL/dx = p - onehot(t) = (0.125, 0.25, -0.375).
loss_value = float(np.log(1.6))
x_grad = [1 / 8, 2 / 8, 5 / 8 - 1]


# --- 문제 5 -------------------------------------------------------------------
class Adam(Optimizer):
    """Adam (Kingma & Ba 2015), DeZero의 식 그대로.

    m과 v는 기울기와 기울기 제곱의 지수 이동 평균이다. 둘 다 0에서 시작하므로
    처음 몇 단계는 0 쪽으로 치우쳐 있다(t = 1이면 m = (1 - beta1) g = 0.1 g). 그
    치우침을 나누어 없애는 것이 편향 보정 1 / (1 - beta1^t)와 sqrt(1 -
    beta2^t)이다. 빼먹으면 첫 단계의 보폭이 alpha가 아니라 alpha * 0.1 /
    sqrt(0.001) = 3.16 alpha가 된다.

    46단계의 Optimizer는 단계를 세지 않으므로 t는 Adam이 센다
    (steps/mydezero/optimizers.py의 Adam과 같다)."""

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__()
        self.t = 0
        self.alpha, self.beta1, self.beta2, self.eps = alpha, beta1, beta2, eps
        self.ms, self.vs = {}, {}

    def update(self):
        self.t += 1  # update_one들이 불리기 전에: 이번 단계 (1부터)
        super().update()

    def update_one(self, param):
        key = id(param)
        if key not in self.ms:
            self.ms[key] = np.zeros_like(param.data)
            self.vs[key] = np.zeros_like(param.data)
        m, v, g = self.ms[key], self.vs[key], param.grad.data
        m += (1 - self.beta1) * (g - m)
        v += (1 - self.beta2) * (g * g - v)
        t = self.t
        lr = self.alpha * np.sqrt(1 - self.beta2 ** t) / (1 - self.beta1 ** t)
        param.data -= lr * m / (np.sqrt(v) + self.eps)


# --- 문제 6 -------------------------------------------------------------------
class GetItem(Function):
    """y = x[slices]. 역전파는 GetItemGrad: 0에 gy를 slices 자리에 더한다."""

    def __init__(self, slices):
        self.slices = slices

    def forward(self, x):
        return x[self.slices]

    def backward(self, gy):
        x, = self.inputs
        return GetItemGrad(self.slices, x.shape)(gy)


class GetItemGrad(Function):
    """gx = zeros(in_shape); gx[slices] += gy, 같은 자리는 모두 더한다.

    ``gx[slices] = gy``로 쓰면 같은 원소를 두 번 꺼냈을 때 마지막 기울기 하나만
    남는다(덮어쓰기). np.add.at은 자리마다 하나씩 더한다. 이것도 Function이므로
    다시 미분할 수 있다: 그 역전파는 다시 ggx[slices]다."""

    def __init__(self, slices, in_shape):
        self.slices, self.in_shape = slices, in_shape

    def forward(self, gy):
        gx = np.zeros(self.in_shape, dtype=gy.dtype)
        np.add.at(gx, self.slices, gy)
        return gx

    def backward(self, ggx):
        return get_item(ggx, self.slices)


def get_item(x, slices):
    return GetItem(slices)(x)
