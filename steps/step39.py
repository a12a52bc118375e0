"""39단계: 합계 함수 sum -- axis와 keepdims

y = sum(x)는 원소들을 더한다. 각 원소는 y에 "그대로 한 번" 더해지므로 dy/dx_i = 1이다. 그래서
역전파는 출력 쪽 기울기 gy를 입력의 모든 원소에 복사한다(브로드캐스트).

    x (2, 3) --sum--> y ()             backward: gy () -> (2, 3)로 복사
    x (2, 3) --sum(axis=0)--> y (3,)   backward: gy (3,) -> (1, 3) -> (2, 3)로 복사

axis를 주면 그 축만 더한다. keepdims=True이면 더한 축을 길이 1로 남긴다((2, 3) -> (1, 3)).
axis로 줄인 기울기를 복사하기 전에 먼저 길이 1인 축을 다시 끼워 넣어야 올바른 방향으로
브로드캐스트된다. (axis=1로 (2, 3) -> (2,)를 만든 뒤 기울기 (2,)를 바로 (2, 3)으로 브로드캐스트하면
NumPy는 마지막 축에 맞추려다 실패한다.) 이 일은 dezero_kr.array_utils.reshape_sum_backward가 한다.

출력에서 볼 것
* axis와 keepdims에 따른 y의 모양
* 출력 쪽 기울기에 서로 다른 값을 주면, 더해진 축 방향으로 같은 값이 복사된 x.grad
* 역전파 기울기와 수치 미분(gradient_check)이 일치한다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable
from dezero_kr.utils import gradient_check


if __name__ == '__main__':
    x_data = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    for axis, keepdims in [(None, False), (0, False), (1, False), (1, True), ((0, 1), True)]:
        x = Variable(x_data)
        y = F.sum(x, axis=axis, keepdims=keepdims)
        gy = np.arange(1.0, y.size + 1).reshape(y.shape)  # 출력 쪽 기울기 1, 2, ...
        y.grad = Variable(gy)  # backward는 y.grad를 시작값으로 쓴다 (없으면 1로 채운다)
        y.backward()
        print(f'sum(axis={axis}, keepdims={keepdims}): y {y.shape} = {y.data.tolist()}')
        print(f'  y.grad = {gy.tolist()} -> x.grad {x.grad.shape} = {x.grad.data.tolist()}')

    # 메서드로도 부를 수 있다
    x = Variable(x_data)
    print('\nx.sum() =', x.sum(), '  x.sum(axis=1) =', x.sum(axis=1))

    # 수치 미분과 비교 (무작위 3차원 텐서, 여러 axis)
    rng = np.random.default_rng(0)
    x3 = rng.standard_normal((2, 3, 4))
    for axis in (None, 0, 2, (0, 2)):
        ok = gradient_check(lambda v: F.sum(v, axis=axis) ** 2, x3)
        print(f'gradient_check(sum(x, axis={axis}) ** 2):', ok)
