"""33단계: 뉴턴 방법 -- 2차 미분도 자동으로

29단계의 뉴턴 방법 x <- x - f'(x) / f''(x) 에서 손으로 적었던 f''(x)를 32단계의 방법(기울기를
한 번 더 역전파)으로 바꾼다. 함수 f(x) = x^4 - 2x^2는 29단계에서 가져온다.

    y = f(x)
    y.backward(create_graph=True)   # gx = f'(x), 기울기 그래프까지 기록
    gx = x.grad
    x.cleargrad()
    gx.backward()                   # x.grad = f''(x)
    x.data -= gx.data / x.grad.data

이제 f를 바꿔도 미분 식을 다시 손으로 유도할 필요가 없다. 여기서는 core_simple이 아니라 보통의
dezero_kr.Variable을 쓴다(기울기가 Variable이어야 다시 미분할 수 있다).

출력에서 볼 것
* 29단계(손으로 적은 2차 미분)와 같은 x 값이 같은 순서로 나온다.
* 다른 함수 f(x) = exp(x) - 2x 에도 코드 수정 없이 쓸 수 있다: 최솟점 x = ln 2 = 0.693147...
  (뉴턴 방법은 f'(x) = 0 인 점을 찾는다. f''(x) < 0 인 곳에서 출발하면 최댓점 쪽으로 가거나
  발산할 수 있으니, 볼록한 곳에서 쓰는 것이 안전하다.)
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable

from step29 import f


def newton(f, x0, iters):
    x = Variable(np.array(x0))
    for i in range(iters):
        print(f'  {i}회: x = {float(x.data):.15f}')
        x.cleargrad()
        y = f(x)
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        gx2 = x.grad
        x.data -= gx.data / gx2.data
    return x


if __name__ == '__main__':
    print('f(x) = x^4 - 2x^2, x0 = 2 (29단계와 같은 결과):')
    newton(f, 2.0, 8)

    print('f(x) = exp(x) - 2x, x0 = 0:')
    x = newton(lambda x: F.exp(x) - 2 * x, 0.0, 6)
    print(f'  ln 2  = {np.log(2.0):.15f}')
