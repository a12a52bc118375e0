"""44단계: 매개변수를 모아 두는 계층 -- Parameter와 Layer

43단계에서는 W1, b1, W2, b2를 하나하나 만들고, 기울기를 비우고, 갱신했다. 층이 늘면 번거롭다.

이번 단계에서 세 부품을 직접 만든다.

* Parameter: Variable과 똑같이 동작하지만 "학습으로 갱신할 값"이라는 표시가 붙은 클래스.
  (본문이 비어 있다: 클래스 자체가 표시다.)
* Layer: Parameter를 속성으로 가지는 객체. __setattr__가 속성에 대입되는 값을 보고 Parameter면
  이름을 적어 둔다. params()는 그 이름들로 Parameter를 꺼내 주고, cleargrads()는 그 전부의
  기울기를 비운다. __call__은 forward를 부른다.
* Linear(out_size): y = x W + b 를 하는 Layer. 입력 크기는 처음 데이터가 들어올 때 정해진다
  (W는 그때 만들어진다: 지연 초기화). W는 randn * sqrt(1/입력 크기)로, b는 0으로 시작한다.
  계산은 43단계에서 확인한 F.linear를 쓴다.

직접 만든 Linear를 dezero_kr.layers.Linear와 같은 시드로 만들어 W, 출력, 기울기가 똑같은지 본다.
F.sigmoid와 F.mean_squared_error는 43단계, 42단계에서 직접 만들고 확인한 함수의 패키지판이다.

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 6,000회(약 1.5초), 그냥 실행하면 책과 같은 10,000회(약 2초).

출력에서 볼 것
* 직접 만든 Linear와 L.Linear가 같은 W, 같은 출력, 같은 기울기를 낸다.
* Layer가 모은 매개변수의 이름(경로)과 모양. 첫 forward 전에는 W가 아직 None이다.
* 43단계와 같은 문제를 같은 방식으로 학습하지만 코드의 갱신 부분이 두 줄로 줄었다.
"""
import math

import numpy as np

import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import Variable

from _common import FAST


class Parameter(Variable):
    """학습으로 갱신할 값. Variable과 똑같고, Layer가 알아보는 표시만 다르다."""
    pass


class Layer:
    """Parameter를 속성으로 가지는 객체. 대입한 순서대로 이름을 기억한다."""

    def __init__(self):
        self._params = []  # Parameter가 들어 있는 속성의 이름들

    def __setattr__(self, name, value):
        if isinstance(value, Parameter) and name not in self._params:
            self._params.append(name)
        super().__setattr__(name, value)

    def __call__(self, *inputs):
        return self.forward(*inputs)

    def forward(self, *inputs):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward가 없습니다')

    def named_params(self):
        for name in self._params:
            yield name, self.__dict__[name]

    def params(self):
        for _, param in self.named_params():
            yield param

    def cleargrads(self):
        for param in self.params():
            param.cleargrad()


class Linear(Layer):
    """y = x W + b. x (N, I) -> (N, O).
    W (I, O)는 첫 입력을 볼 때 만든다."""

    def __init__(self, out_size, in_size=None, dtype=np.float32):
        super().__init__()
        self.in_size = in_size
        self.out_size = out_size
        self.dtype = dtype
        self.W = Parameter(None, name='W')
        if in_size is not None:
            self._init_W()
        self.b = Parameter(np.zeros(out_size, dtype=dtype), name='b')

    def _init_W(self):
        I, O = self.in_size, self.out_size
        # math.sqrt는 파이썬 float: float32 배열과 곱해도 float32로 남는다
        # (np.sqrt는 np.float64를 돌려줘 NumPy 2에서 배열이 float64가 된다)
        W = np.random.randn(I, O).astype(self.dtype)
        self.W.data = W * math.sqrt(1 / I)

    def forward(self, x):
        if self.W.data is None:  # 지연 초기화: 입력 크기를 이제 안다
            self.in_size = x.shape[1]
            self._init_W()
        return F.linear(x, self.W, self.b)


def check_against_package():
    """같은 시드의 Linear와 L.Linear: W, 출력, 기울기가 비트까지 같다."""
    x = np.random.default_rng(0).standard_normal((5, 3))
    results = []
    for make in (Linear, L.Linear):
        np.random.seed(0)
        layer = make(4)
        y = layer(x)
        F.sum(y * y).backward()
        results.append([layer.W.data, y.data, layer.W.grad.data, layer.b.grad.data])
    for mine, package in zip(*results):
        assert mine.dtype == package.dtype
        np.testing.assert_array_equal(mine, package)
    print(f'Linear 확인: L.Linear와 W {results[0][0].shape} {results[0][0].dtype}, '
          '출력, 기울기가 같다')


if __name__ == '__main__':
    check_against_package()

    # Parameter는 Variable이다. 연산도 같고, 차이는 "종류 표시" 하나뿐이다
    p = Parameter(np.array(2.0))
    v = Variable(np.array(3.0))
    print('p * v =', p * v, '| p는 Parameter인가:', isinstance(p, Parameter),
          '| p * v는 Parameter인가:', isinstance(p * v, Parameter))

    np.random.seed(0)
    x = np.random.rand(100, 1)
    y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)

    l1 = Linear(10)  # 출력 크기만 정한다
    l2 = Linear(1)
    print('\n첫 forward 전 l1.W.data:', l1.W.data, '| l1.b 모양:', l1.b.shape)

    def predict(x):
        return l2(F.sigmoid(l1(x)))

    lr = 0.2
    iters = 6000 if FAST else 10000
    for i in range(iters):
        loss = F.mean_squared_error(predict(x), y)
        if i == 0:
            print('첫 forward 뒤 매개변수:')
            for layer_name, layer in (('l1', l1), ('l2', l2)):
                for name, param in layer.named_params():
                    print(f'  {layer_name}/{name}: 모양 {param.shape}, '
                          f'dtype {param.dtype}')
            print()
        if i % (iters // 10) == 0 or i == iters - 1:
            print(f'{i:5d}회: loss = {float(loss.data):.6f}')
        l1.cleargrads()
        l2.cleargrads()
        loss.backward()
        for layer in (l1, l2):
            for param in layer.params():
                param.data -= lr * param.grad.data
