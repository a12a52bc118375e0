"""24단계: 복잡한 함수의 미분 -- 최적화 벤치마크 함수 세 개

최적화 기법을 시험할 때 자주 쓰는 "테스트 함수"를 연산자만으로 적고, 미분은 y.backward() 한
줄에 맡긴다. 식이 길어져도 코드는 수식을 옮겨 적은 모양 그대로다. 미분 식을 손으로 유도할 필요가
없다는 것이 자동 미분(define-by-run)의 힘이다.

    sphere(x, y)    = x^2 + y^2
    matyas(x, y)    = 0.26 (x^2 + y^2) - 0.48 x y
    goldstein(x, y) = [1 + (x + y + 1)^2 (19 - 14x + 3x^2 - 14y + 6xy + 3y^2)]
                      * [30 + (2x - 3y)^2 (18 - 32x + 12x^2 + 48y - 36xy + 27y^2)]

(1, 1)에서의 정답: sphere 기울기 (2, 2), matyas 기울기 (0.04, 0.04),
goldstein 값 1876과 기울기 (-5376, 8064). goldstein의 최솟값은 (0, -1)에서 3이다.

계산은 23단계에서 만든 패키지 mydezero(core_simple)로 한다. 마지막 표는 같은 세 함수를 기준 패키지
dezero_kr로도 계산해(연산자만 쓰니 코드가 그대로다) 값과 기울기가 같은지 확인한다. 정답이 정수로 알려진
goldstein (1, 1)의 값 1876과 기울기 (-5376, 8064)는 정확히 같은지 assert로 확인한다.

출력에서 볼 것
* 역전파 기울기와 중앙 차분(수치 미분) 기울기가 소수 셋째 자리까지 같다. 수치 미분은 뺄셈의
  자릿수 손실 때문에 값이 클수록(goldstein) 끝자리가 어긋난다. 역전파는 정확한 정수를 낸다.
* goldstein의 최솟점 (0, -1)에서는 기울기가 (0, 0)이다.
* mydezero(기울기가 NumPy 값)로 구한 값·기울기가 dezero_kr와 같다.
"""
import numpy as np

import dezero_kr
from dezero_kr.utils import numerical_grad
from mydezero.core_simple import Variable

from _common import ljust


def sphere(x, y):
    return x ** 2 + y ** 2


def matyas(x, y):
    return 0.26 * (x ** 2 + y ** 2) - 0.48 * x * y


def goldstein(x, y):
    a = 1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x ** 2 - 14 * y + 6 * x * y
                                + 3 * y ** 2)
    b = 30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x ** 2 + 48 * y
                                     - 36 * x * y + 27 * y ** 2)
    return a * b


def grads_by_backprop(f, x0, y0):
    """(f 값, df/dx, df/dy)를 mydezero의 역전파로 구한다. 기울기는 NumPy 값이다."""
    x, y = Variable(np.array(x0)), Variable(np.array(y0))
    z = f(x, y)
    z.backward()
    return float(z.data), float(x.grad), float(y.grad)


def grads_by_reference(f, x0, y0):
    """같은 값과 기울기를 기준 패키지 dezero_kr로. 그 기울기는 Variable이다."""
    x, y = dezero_kr.Variable(np.array(x0)), dezero_kr.Variable(np.array(y0))
    z = f(x, y)
    z.backward()
    return float(z.data), float(x.grad.data), float(y.grad.data)


def grads_by_difference(f, x0, y0):
    """같은 기울기를 중앙 차분으로: 한 변수씩 흔들고 다른 변수는 상수로
    고정한다."""
    dx = numerical_grad(lambda x: f(x, y0), np.array(x0))
    dy = numerical_grad(lambda y: f(x0, y), np.array(y0))
    return float(dx), float(dy)


if __name__ == '__main__':
    print(ljust('함수', 10) + ljust('점', 12) + ljust('값', 10) + '  '
          + ljust('역전파 (dx, dy)', 24) + '수치 미분 (dx, dy)')
    for f, point in [(sphere, (1.0, 1.0)), (matyas, (1.0, 1.0)),
                     (goldstein, (1.0, 1.0)), (goldstein, (0.0, -1.0))]:
        value, dx, dy = grads_by_backprop(f, *point)
        ndx, ndy = grads_by_difference(f, *point)
        backprop = f'({dx:.3f}, {dy:.3f})'
        print(f'{f.__name__:<10}{str(point):<12}{value:>10.3f}  '
              f'{backprop:<24}({ndx:.3f}, {ndy:.3f})')

    assert grads_by_backprop(goldstein, 1.0, 1.0) == (1876.0, -5376.0, 8064.0)
    print('\ndezero_kr로 같은 계산 (값, dx, dy가 mydezero와 같은가):')
    for f, point in [(sphere, (1.0, 1.0)), (matyas, (1.0, 1.0)),
                     (goldstein, (1.0, 1.0)), (goldstein, (0.0, -1.0))]:
        ref = grads_by_reference(f, *point)
        np.testing.assert_allclose(ref, grads_by_backprop(f, *point), rtol=1e-14)
        print(f'  {f.__name__:<10}{str(point):<12}({ref[0]:.3f}, {ref[1]:.3f}, '
              f'{ref[2]:.3f})  같다')
