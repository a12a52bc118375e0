"""45단계: 층을 모으는 층 -- Model과 MLP

44단계의 Layer는 Parameter만 기억했다. 다른 Layer도 속성으로 기억하게 하면 신경망 전체를 하나의
Layer로 묶을 수 있고, named_params()는 안쪽 Layer까지 내려가 모든 매개변수를 꺼내 준다. 이름은
경로로 붙는다: 'l1/W', 'l1/b', ... (53단계의 가중치 파일과 옵티마이저 상태의 키가 이것이다.)

이번 단계에서 직접 만드는 것 (mydezero/layers.py와 새 파일 mydezero/models.py):
* Layer: 44단계의 Layer에서 두 군데만 바꾼다. __setattr__가 Layer도 기억하고, named_params가
  안쪽 Layer의 경로 앞에 자기 속성 이름을 붙여 내려간다. params, cleargrads는 그대로다.
* Model: Layer에 plot(입력, to_file=...)이 더해진 것. 신경망을 정의할 때 상속한다.
* MLP(출력 크기들, activation=F.sigmoid): Linear를 원하는 만큼 쌓은 Model. 층은 l0, l1, ...
  MLP((10, 1))은 아래 TwoLayerNet과 같은 구조다.
직접 만든 MLP를 기준 패키지의 dezero_kr.models.MLP와 같은 시드로 만들어 경로, 값, 출력, 기울기가 같은지 본다.

그림: 현재 폴더에 step45_two_layer_net.png(.dot)를 저장한다(model.plot(x): Graphviz의 dot이 있으면
그림까지, 없으면 .dot만).

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 2,000회, 그냥 실행하면 10,000회(약 3초).

출력에서 볼 것
* 직접 만든 MLP와 dezero_kr.models.MLP의 매개변수 경로, 값, 출력, 기울기가 같다.
* TwoLayerNet의 매개변수 경로, 모양, 총 개수(1x10 + 10 + 10x1 + 1 = 31)
* 같은 시드로 만든 TwoLayerNet과 MLP((10, 1))은 매개변수도, 학습 중의 손실도 똑같다.
* 층을 쌓은 MLP((10, 20, 30, 1))의 구조
"""
import numpy as np

import dezero_kr.functions as RF  # 기준 패키지
import dezero_kr.models
import mydezero.functions as F
import mydezero.layers as L
from mydezero import Model
from mydezero.models import MLP

from _common import FAST


class TwoLayerNet(Model):
    def __init__(self, hidden_size, out_size):
        super().__init__()
        self.l1 = L.Linear(hidden_size)
        self.l2 = L.Linear(out_size)

    def forward(self, x):
        y = F.sigmoid(self.l1(x))
        return self.l2(y)


def check_against_package():
    """같은 시드의 MLP((4, 3, 2))와 dezero_kr.models.MLP: 경로, 값, 출력, 기울기가 같다."""
    x = np.random.default_rng(0).standard_normal((5, 3))
    results = []
    for make, sum_ in ((MLP, F.sum), (dezero_kr.models.MLP, RF.sum)):
        np.random.seed(0)
        model = make((4, 3, 2))
        y = model(x)
        sum_(y * y).backward()
        named = list(model.named_params())
        results.append(([path for path, _ in named], y.data,
                         [p.data for _, p in named], [p.grad.data for _, p in named]))
    (paths, y, values, grads), (paths_pkg, y_pkg, values_pkg, grads_pkg) = results
    assert paths == paths_pkg, (paths, paths_pkg)
    np.testing.assert_array_equal(y, y_pkg)
    for a, b in zip(values, values_pkg):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(grads, grads_pkg):  # float32: 곱하는 순서에 따라 끝자리가 다를 수 있다
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    print(f'MLP 확인: dezero_kr.models.MLP와 경로, 값, 출력, 기울기가 같다\n  경로 {paths}')


def train(model, x, y, lr, iters, report):
    """43단계의 학습 루프를 Model 하나로. report개의 (반복, 손실)을 돌려준다."""
    losses = []
    for i in range(iters):
        loss = F.mean_squared_error(model(x), y)
        if i % (iters // report) == 0 or i == iters - 1:
            losses.append((i, float(loss.data)))
        model.cleargrads()
        loss.backward()
        for p in model.params():
            p.data -= lr * p.grad.data
    return losses


def describe(model):
    for name, p in model.named_params():
        print(f'  {name:<6} {p.shape}')
    print('  매개변수 총 개수:', sum(p.size for p in model.params()))


if __name__ == '__main__':
    check_against_package()
    np.random.seed(0)
    x = np.random.rand(100, 1)
    y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
    iters = 2000 if FAST else 10000

    np.random.seed(1)  # 모델의 초깃값 (두 모델을 같은 값으로 시작하려고 다시 시드를 준다)
    net = TwoLayerNet(10, 1)
    net.plot(x, to_file='step45_two_layer_net.png')
    print('TwoLayerNet(10, 1):')
    describe(net)
    np.random.seed(1)
    mlp = MLP((10, 1))
    mlp(x)  # 첫 forward에서 W가 만들어진다
    print('MLP((10, 1)):')
    describe(mlp)
    print('초깃값이 같은가:', all(np.array_equal(a.data, b.data)
                                 for a, b in zip(net.params(), mlp.params())))

    print(f'\n{"반복":>6}  {"TwoLayerNet":>12}  {"MLP((10, 1))":>12}')
    for (i, a), (_, b) in zip(train(net, x, y, 0.2, iters, 5),
                              train(mlp, x, y, 0.2, iters, 5)):
        print(f'{i:6d}  {a:12.6f}  {b:12.6f}')

    deep = MLP((10, 20, 30, 1))
    deep(x)
    print('\nMLP((10, 20, 30, 1)):')
    describe(deep)
