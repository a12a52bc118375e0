"""44단계: 매개변수를 모아 두는 층 -- Parameter와 Layer

43단계에서는 W1, b1, W2, b2를 하나하나 만들고, 기울기를 비우고, 갱신했다. 층이 늘면 번거롭다.

이번 단계에서 세 부품을 직접 만든다: Parameter는 mydezero/core.py에, Layer와 Linear는 새 파일
mydezero/layers.py에 (import mydezero.layers as L).

* Parameter: Variable과 똑같이 동작하지만 "학습으로 갱신할 값"이라는 표시가 붙은 클래스.
  (본문이 비어 있다: 클래스 자체가 표시다.)
* Layer: Parameter를 속성으로 가지는 객체. __setattr__가 속성에 대입되는 값을 보고 Parameter면
  이름을 _params에 적어 둔다(넣은 순서대로). params()는 그 이름들로 Parameter를 꺼내 주고, cleargrads()는 그 전부의
  기울기를 비운다. __call__은 forward를 부른다.
* Linear(out_size): y = x W + b 를 하는 Layer. 입력 크기는 처음 데이터가 들어올 때 정해진다
  (W는 그때 만들어진다: 지연 초기화). W는 randn * sqrt(1/입력 크기)로, b는 0으로 시작한다.
  계산은 43단계에서 만든 F.linear를 쓴다.

직접 만든 Linear를 기준 패키지의 dezero_kr.layers.Linear와 같은 시드로 만들어 W, 출력, 기울기가
똑같은지 본다. F.sigmoid와 F.mean_squared_error는 43단계, 42단계에서 mydezero에 넣은 함수다.

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 6,000회(약 1.5초), 그냥 실행하면 책과 같은 10,000회(약 2초).

출력에서 볼 것
* 직접 만든 L.Linear와 dezero_kr의 Linear가 같은 W, 같은 출력, 같은 기울기를 낸다.
* Layer가 모은 매개변수의 이름(경로)과 모양. 첫 forward 전에는 W가 아직 None이다.
* 43단계와 같은 문제를 같은 방식으로 학습하지만 코드의 갱신 부분이 두 줄로 줄었다.
"""
import numpy as np

import dezero_kr.functions as RF  # 기준 패키지
import dezero_kr.layers as RL
import mydezero.functions as F
import mydezero.layers as L
from mydezero import Parameter, Variable

from _common import FAST


def check_against_package():
    """같은 시드의 L.Linear와 dezero_kr의 Linear: W, 출력, 기울기가 비트까지 같다."""
    x = np.random.default_rng(0).standard_normal((5, 3))
    results = []
    for make, sum_ in ((L.Linear, F.sum), (RL.Linear, RF.sum)):
        np.random.seed(0)
        layer = make(4)
        y = layer(x)
        sum_(y * y).backward()
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

    l1 = L.Linear(10)  # 출력 크기만 정한다
    l2 = L.Linear(1)
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
                for name in layer._params:  # Layer가 적어 둔 이름들
                    param = getattr(layer, name)
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
