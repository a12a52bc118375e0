"""44단계: 매개변수를 모아 두는 계층 -- Parameter와 Layer

43단계에서는 W1, b1, W2, b2를 하나하나 만들고, 기울기를 비우고, 갱신했다. 층이 늘면 번거롭다.

* Parameter: Variable과 똑같이 동작하지만 "학습으로 갱신할 값"이라는 표시가 붙은 클래스.
* Layer: Parameter(와 다른 Layer)를 속성으로 가지는 객체. 속성에 Parameter를 넣으면 Layer가
  기억해 두었다가 params()로 모두 꺼내 준다. cleargrads()는 그 전부의 기울기를 비운다.
* L.Linear(out_size): y = x W + b 를 하는 Layer. 입력 크기는 처음 데이터가 들어올 때 정해진다
  (W는 그때 만들어진다: 지연 초기화). W는 randn * sqrt(1/입력 크기)로, b는 0으로 시작한다.

F.sigmoid와 F.mean_squared_error는 43단계에서 직접 적었던 함수를 패키지가 제공하는 것이다.

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 6,000회(약 1.5초), 그냥 실행하면 책과 같은 10,000회(약 2초).

출력에서 볼 것
* Layer가 모은 매개변수의 이름(경로)과 모양. 첫 forward 전에는 W가 아직 None이다.
* 43단계와 같은 문제를 같은 방식으로 학습하지만 코드의 갱신 부분이 두 줄로 줄었다.
"""
import numpy as np

import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import Parameter, Variable

from _common import FAST


if __name__ == '__main__':
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
                for name, param in layer.named_params():
                    print(f'  {layer_name}/{name}: 모양 {param.shape}, dtype {param.dtype}')
            print()
        if i % (iters // 10) == 0 or i == iters - 1:
            print(f'{i:5d}회: loss = {float(loss.data):.6f}')
        l1.cleargrads()
        l2.cleargrads()
        loss.backward()
        for layer in (l1, l2):
            for param in layer.params():
                param.data -= lr * param.grad.data
