"""39단계: 합계 함수 -- Sum(axis, keepdims)를 직접 만든다 (mydezero/functions.py)

y = sum(x)는 원소들을 더한다. 각 원소는 y에 "그대로 한 번" 더해지므로 dy/dx_i = 1이다. 그래서
역전파는 출력 쪽 기울기 gy를 입력의 모든 원소에 복사한다(브로드캐스트).

    x (2, 3) --sum--> y ()             backward: gy () -> (2, 3)로 복사
    x (2, 3) --sum(axis=0)--> y (3,)   backward: gy (3,) -> (1, 3) -> (2, 3)로 복사

axis를 주면 그 축만 더한다. keepdims=True이면 더한 축을 길이 1로 남긴다((2, 3) -> (1, 3)).
axis로 줄인 기울기를 복사하기 전에 먼저 없어진 축을 길이 1로 다시 끼워 넣어야(38단계의 reshape)
올바른 방향으로 브로드캐스트된다. axis=1로 (2, 3) -> (2,)를 만든 뒤 기울기 (2,)를 바로 (2, 3)으로
브로드캐스트하면 NumPy는 뒤쪽 축부터 맞추므로 (2,)와 3이 맞지 않아 실패한다. 길이가 우연히 같으면
(정사각 행렬) 실패하지 않고 틀린 방향으로 복사된다: 조용히 틀린 답이 가장 나쁘다.

없어진 축을 되살리는 일은 mydezero/utils.py의 reshape_sum_backward가 한다(DeZero와 같은 이름).
복사하는 함수 broadcast_to는 40단계에서 미분할 수 있는 함수로 만든다. 39단계의 mydezero에는 역전파
없이 복사만 하는 임시판이 있다(1차 미분에는 충분하다).

출력에서 볼 것
* axis와 keepdims에 따른 y의 모양
* 출력 쪽 기울기에 서로 다른 값을 주면, 더해진 축 방향으로 같은 값이 복사된 x.grad
* 정사각 행렬에서 축을 끼워 넣지 않으면 조용히 틀린 방향으로 복사되는 예
* mydezero의 sum이 기준 패키지 dezero_kr와 같은 값·기울기를 내고 중앙 차분과 맞는다(여러 axis, keepdims).
"""
import numpy as np

import dezero_kr.functions as RF  # 기준 패키지
from mydezero import Variable
from mydezero.functions import sum

from _common import report, report_header


if __name__ == '__main__':
    x_data = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    for axis, keepdims in [(None, False), (0, False), (1, False), (1, True),
                           ((0, 1), True)]:
        x = Variable(x_data)
        y = sum(x, axis=axis, keepdims=keepdims)
        gy = np.arange(1.0, y.size + 1).reshape(y.shape)  # 출력 쪽 기울기 1, 2, ...
        y.grad = Variable(gy)  # backward는 y.grad를 시작값으로 쓴다 (없으면 1로 채운다)
        y.backward()
        print(f'sum(axis={axis}, keepdims={keepdims}): y {y.shape} = {y.data.tolist()}')
        print(f'  y.grad = {gy.tolist()} -> '
              f'x.grad {x.grad.shape} = {x.grad.data.tolist()}')

    # 함정: 정사각 행렬을 axis=1로 더한 기울기 (2,)를 축을 끼우지 않고 바로 (2, 2)로 복사하면
    gy = np.array([1.0, 2.0])
    print('\n(2, 2)를 axis=1로 더한 기울기 [1, 2]를 복사하면')
    print('  축을 끼워 넣고 (2, 1) -> (2, 2):',
          np.broadcast_to(gy.reshape(2, 1), (2, 2)).tolist())
    print('  바로 (2,) -> (2, 2) (틀림)     :', np.broadcast_to(gy, (2, 2)).tolist())

    report_header('dezero_kr와 비교')
    x3 = np.random.default_rng(39).standard_normal((2, 3, 4))
    for axis, keepdims in [(None, False), (0, False), (2, False), (-1, True),
                           ((0, 2), False), ((0, 2), True)]:
        report(f'sum(axis={axis}, keepdims={keepdims})',
               lambda v: sum(v, axis, keepdims),
               lambda v: RF.sum(v, axis, keepdims), x3)
