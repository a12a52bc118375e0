"""38단계: 모양을 바꾸는 함수 -- reshape와 transpose

원소 값은 그대로 두고 배치만 바꾸는 함수다. 계산은 없지만 역전파에서 기울기의 모양을 입력에 맞게
되돌려야 한다.

    reshape:   forward  x (2, 3) -> y (6,)        backward  gy (6,) -> gy.reshape(2, 3)
    transpose: forward  x (2, 3) -> y (3, 2)      backward  gy (3, 2) -> gy.T
               축 순서 axes를 주면 (예: (1, 2, 0)) backward는 그 역순열 (2, 0, 1)로 되돌린다.

Variable에서는 NumPy처럼 부를 수 있다: x.reshape(3, 2), x.reshape((3, 2)), x.T, x.transpose(1, 0).

출력에서 볼 것
* 각 변환 뒤 모양과, 역전파된 x.grad가 x와 같은 모양으로 돌아온 것
* 출력 쪽 기울기에 서로 다른 값(0, 1, 2, ...)을 넣어 보면, 각 값이 자기를 만든 원래 원소의
  자리로 돌아간다: transpose의 x.grad는 그 값들의 전치다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable


def backward_with_labels(y):
    """y의 각 원소에 서로 다른 기울기 0, 1, 2, ...를 주고 역전파한다 (어디로 가는지 보이도록)."""
    y.grad = Variable(np.arange(y.size, dtype=float).reshape(y.shape))
    y.backward()


if __name__ == '__main__':
    cases = [('F.reshape(x, (6,))', lambda x: F.reshape(x, (6,))),
             ('x.reshape(3, 2)', lambda x: x.reshape(3, 2)),
             ('x.T  (= F.transpose(x))', lambda x: x.T)]
    for label, f in cases:
        x = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        y = f(x)
        backward_with_labels(y)
        print(f'{label}: y {y.shape}, x.grad {x.grad.shape}')
        print('  y.data  =', y.data.tolist())
        print('  y.grad  =', np.arange(y.size).reshape(y.shape).tolist())
        print('  x.grad  =', x.grad.data.tolist())

    # 3차원: 축 순서를 바꾸는 transpose. backward는 역순열로 되돌린다.
    x = Variable(np.arange(24, dtype=float).reshape(2, 3, 4))
    y = x.transpose(1, 2, 0)
    backward_with_labels(y)
    print(f'\nx (2, 3, 4).transpose(1, 2, 0) -> y {y.shape}; x.grad {x.grad.shape}')
    print('  x.grad가 y.grad의 역전치와 같은가:',
          np.array_equal(x.grad.data, np.arange(24.0).reshape(3, 4, 2).transpose(2, 0, 1)))
