"""38단계: 모양을 바꾸는 함수 -- Reshape와 Transpose를 직접 만든다 (mydezero/functions.py)

원소 값은 그대로 두고 배치만 바꾸는 함수다. 계산은 없지만 역전파에서 기울기의 모양을 입력에 맞게
되돌려야 한다(37단계의 규칙: x.grad의 모양 = x.data의 모양).

    reshape:   forward  x (2, 3) -> y (6,)      backward  gy (6,) -> reshape(gy, (2, 3))
    transpose: forward  x (2, 3) -> y (3, 2)      backward  gy (3, 2) -> transpose(gy)
               축 순서 axes를 주면 (예: (1, 2, 0)) backward는 그 역순열 (2, 0, 1)로 되돌린다.
               역순열은 np.argsort(axes): y의 j번 축이 x의 axes[j]번 축이었으므로, x의 i번 축은
               y에서 axes.index(i)번째에 있다.

backward도 30단계처럼 Variable 연산(자기 자신 reshape, transpose)으로 적는다. 그래서 이 함수들도 몇 번이든
다시 미분된다. Variable에도 메서드를 더해(mydezero/core.py) NumPy처럼 부를 수 있다:
x.reshape(3, 2), x.T, x.transpose(1, 0).

출력에서 볼 것
* 각 변환 뒤 모양과, 역전파된 x.grad가 x와 같은 모양으로 돌아온 것
* 출력 쪽 기울기에 서로 다른 값(0, 1, 2, ...)을 넣어 보면, 각 값이 자기를 만든 원래 원소의
  자리로 돌아간다: transpose의 x.grad는 그 값들의 전치다.
* mydezero의 reshape, transpose가 기준 패키지 dezero_kr와 같은 값·기울기를 내고 중앙 차분과 맞는다.
"""
import numpy as np

import dezero_kr.functions as RF  # 기준 패키지
from mydezero import Variable
from mydezero.functions import reshape, transpose

from _common import report, report_header


def backward_with_labels(y):
    """y의 원소마다 다른 기울기 0, 1, 2, ...를 주고 역전파한다 (어디로 가나)."""
    y.grad = Variable(np.arange(y.size, dtype=float).reshape(y.shape))
    y.backward()


if __name__ == '__main__':
    cases = [('reshape(x, (6,))', lambda x: reshape(x, (6,))),
             ('reshape(x, (3, 2))', lambda x: reshape(x, (3, 2))),
             ('transpose(x)', lambda x: transpose(x))]
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
    y = transpose(x, (1, 2, 0))
    backward_with_labels(y)
    print(f'\ntranspose(x (2, 3, 4), (1, 2, 0)) -> y {y.shape}; x.grad {x.grad.shape}')
    print('  역순열 np.argsort((1, 2, 0)) =', tuple(int(i) for i in np.argsort((1, 2, 0))))
    print('  x.grad가 y.grad의 역전치와 같은가:',
          np.array_equal(x.grad.data,
                         np.arange(24.0).reshape(3, 4, 2).transpose(2, 0, 1)))

    report_header('dezero_kr와 비교')
    rng = np.random.default_rng(38)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3, 4))
    report('reshape (6,)', lambda x: reshape(x, (6,)), lambda x: RF.reshape(x, (6,)), a)
    report('reshape (4, 6)', lambda x: reshape(x, (4, 6)), lambda x: x.reshape(4, 6), b)
    report('transpose', transpose, lambda x: x.T, a)
    report('transpose (1, 2, 0)', lambda x: transpose(x, (1, 2, 0)),
           lambda x: RF.transpose(x, (1, 2, 0)), b)
    report('transpose (2, 0, 1)', lambda x: transpose(x, (2, 0, 1)),
           lambda x: x.transpose(2, 0, 1), b)
