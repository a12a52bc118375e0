"""45단계: 계층을 모으는 계층 -- Model과 MLP

Layer는 Parameter뿐 아니라 다른 Layer도 속성으로 가질 수 있다. 그러면 신경망 전체를 하나의
Layer로 묶을 수 있고, params()는 안쪽 Layer까지 내려가 모든 매개변수를 꺼내 준다. 이름은
경로로 붙는다: 'l1/W', 'l1/b', ... (save_weights 파일의 키와 옵티마이저 상태의 키가 이것이다.)

* Model: Layer에 plot(입력, to_file=...)이 더해진 것. 신경망을 정의할 때 상속한다.
* MLP(출력 크기들, activation=F.sigmoid): 완전연결층(Linear)을 원하는 만큼 쌓은 Model.
  MLP((10, 1))은 아래 TwoLayerNet과 같은 구조다.

그림: 현재 폴더에 two_layer_net.png(.dot)를 저장한다. 매개변수 노드에 l1/W 같은 경로가 붙는다
(model.plot(x)도 같은 그림을 그린다).

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 2,000회, 그냥 실행하면 10,000회(약 3초).

출력에서 볼 것
* TwoLayerNet의 매개변수 경로, 모양, 총 개수(1x10 + 10 + 10x1 + 1 = 31)
* 같은 시드로 만든 TwoLayerNet과 MLP((10, 1))은 매개변수도, 학습 중의 손실도 똑같다.
* 층을 쌓은 MLP((10, 20, 30, 1))의 구조
"""
import numpy as np

import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr.models import MLP, Model

from _common import FAST, save_graph


class TwoLayerNet(Model):
    def __init__(self, hidden_size, out_size):
        super().__init__()
        self.l1 = L.Linear(hidden_size)
        self.l2 = L.Linear(out_size)

    def forward(self, x):
        y = F.sigmoid(self.l1(x))
        return self.l2(y)


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
    np.random.seed(0)
    x = np.random.rand(100, 1)
    y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
    iters = 2000 if FAST else 10000

    np.random.seed(1)  # 모델의 초깃값 (두 모델을 같은 값으로 시작하려고 다시 시드를 준다)
    net = TwoLayerNet(10, 1)
    save_graph(net(x), 'two_layer_net.png', param_names=net)
    print('TwoLayerNet(10, 1):')
    describe(net)
    np.random.seed(1)
    mlp = MLP((10, 1))
    mlp(x)  # 첫 forward에서 W가 만들어진다
    print('MLP((10, 1)):')
    describe(mlp)
    print('초깃값이 같은가:', all(np.array_equal(a.data, b.data) for a, b in zip(net.params(), mlp.params())))

    print(f'\n{"반복":>6}  {"TwoLayerNet":>12}  {"MLP((10, 1))":>12}')
    for (i, a), (_, b) in zip(train(net, x, y, 0.2, iters, 5), train(mlp, x, y, 0.2, iters, 5)):
        print(f'{i:6d}  {a:12.6f}  {b:12.6f}')

    deep = MLP((10, 20, 30, 1))
    deep(x)
    print('\nMLP((10, 20, 30, 1)):')
    describe(deep)
