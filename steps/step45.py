"""45단계: 계층을 모으는 계층 -- Model과 MLP

44단계의 Layer는 Parameter만 기억했다. 다른 Layer도 속성으로 기억하게 하면 신경망 전체를 하나의
Layer로 묶을 수 있고, named_params()는 안쪽 Layer까지 내려가 모든 매개변수를 꺼내 준다. 이름은
경로로 붙는다: 'l1/W', 'l1/b', ... (53단계의 가중치 파일과 옵티마이저 상태의 키가 이것이다.)

이번 단계에서 직접 만드는 것:
* Layer: 44단계의 Layer에서 두 군데만 바꾼다. __setattr__가 Layer도 기억하고, named_params가
  안쪽 Layer의 경로 앞에 자기 속성 이름을 붙여 내려간다. params, cleargrads는 그대로다.
* Model: Layer에 plot(입력, to_file=...)이 더해진 것. 신경망을 정의할 때 상속한다.
* MLP(출력 크기들, activation=F.sigmoid): Linear를 원하는 만큼 쌓은 Model. 층은 l0, l1, ...
  MLP((10, 1))은 아래 TwoLayerNet과 같은 구조다.
직접 만든 MLP를 dezero_kr.models.MLP와 같은 시드로 만들어 경로, 값, 출력, 기울기가 같은지 본다.

그림: 현재 폴더에 step45_two_layer_net.png(.dot)를 저장한다. 매개변수 노드에 l1/W 같은 경로가
붙는다(model.plot(x)).

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 2,000회, 그냥 실행하면 10,000회(약 3초).

출력에서 볼 것
* 직접 만든 MLP와 dezero_kr.models.MLP의 매개변수 경로, 값, 출력, 기울기가 같다.
* TwoLayerNet의 매개변수 경로, 모양, 총 개수(1x10 + 10 + 10x1 + 1 = 31)
* 같은 시드로 만든 TwoLayerNet과 MLP((10, 1))은 매개변수도, 학습 중의 손실도 똑같다.
* 층을 쌓은 MLP((10, 20, 30, 1))의 구조
"""
import numpy as np

import dezero_kr.functions as F
import dezero_kr.models

import step44
from _common import FAST, save_graph
from step44 import Linear, Parameter


class Layer(step44.Layer):
    """44단계의 Layer + 속성으로 넣은 Layer도 기억한다.
    named_params는 안쪽 Layer의 매개변수까지 경로로 꺼낸다."""

    def __setattr__(self, name, value):
        is_part = isinstance(value, (Parameter, step44.Layer))
        if is_part and name not in self._params:
            self._params.append(name)
        object.__setattr__(self, name, value)

    def named_params(self):
        for name in self._params:
            obj = self.__dict__[name]
            if isinstance(obj, step44.Layer):
                # 안쪽 Layer: 그 경로 앞에 내 속성 이름을 붙인다
                for path, param in obj.named_params():
                    yield f'{name}/{path}', param
            else:
                yield name, obj


class Model(Layer):
    """신경망 전체. plot(x)로 매개변수에 경로를 붙인 계산 그래프를 그린다."""

    def plot(self, *inputs, to_file='model.png'):
        save_graph(self.forward(*inputs), to_file, param_names=self)


class MLP(Model):
    """Linear(크기 0) -> activation -> ... -> Linear(마지막 크기)."""

    def __init__(self, fc_output_sizes, activation=F.sigmoid):
        super().__init__()
        self.activation = activation
        self.layers = []
        for i, out_size in enumerate(fc_output_sizes):
            layer = Linear(out_size)
            # self.l0 = layer 와 같다: __setattr__가 기억한다
            setattr(self, f'l{i}', layer)
            self.layers.append(layer)

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)


class TwoLayerNet(Model):
    def __init__(self, hidden_size, out_size):
        super().__init__()
        self.l1 = Linear(hidden_size)
        self.l2 = Linear(out_size)

    def forward(self, x):
        y = F.sigmoid(self.l1(x))
        return self.l2(y)


def check_against_package():
    """같은 시드의 MLP((4, 3, 2))와 dezero_kr.models.MLP: 경로, 값, 출력, 기울기가 같다."""
    x = np.random.default_rng(0).standard_normal((5, 3))
    results = []
    for make in (MLP, dezero_kr.models.MLP):
        np.random.seed(0)
        model = make((4, 3, 2))
        y = model(x)
        F.sum(y * y).backward()
        named = list(model.named_params())
        results.append(([path for path, _ in named], y.data,
                         [p.data for _, p in named], [p.grad.data for _, p in named]))
    (paths, y, values, grads), (paths_pkg, y_pkg, values_pkg, grads_pkg) = results
    assert paths == paths_pkg, (paths, paths_pkg)
    np.testing.assert_array_equal(y, y_pkg)
    for a, b in zip(values + grads, values_pkg + grads_pkg):
        np.testing.assert_array_equal(a, b)
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
    for (i, a), (_, b) in zip(train(net, x, y, 0.2, iters, 5), train(mlp, x, y, 0.2, iters, 5)):
        print(f'{i:6d}  {a:12.6f}  {b:12.6f}')

    deep = MLP((10, 20, 30, 1))
    deep(x)
    print('\nMLP((10, 20, 30, 1)):')
    describe(deep)
