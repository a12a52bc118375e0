"""32단계: 고차 미분 (구현) -- 직접 만든 함수와 엔진으로 n차 미분

30단계의 Sin/Cos처럼 backward를 Variable 연산으로 적은 함수와, 31단계의 엔진
y.backward(create_graph=True)가 있으면 미분을 몇 번이든 되풀이할 수 있다. 곱셈 Mul과 거듭제곱 Pow도
같은 방식으로 적혀 있다 (mydezero/core.py: core_simple.py에서는 x.data로 계산하던 것을 Variable로).

    Mul:  y = x0 * x1     backward: gy * x1, gy * x0          (Variable끼리의 곱)
    Pow:  y = x ** c      backward: c * pow(x, c - 1) * gy    (pow를 다시 부른다: Pow(c - 1))

기울기 gx = x.grad를 다시 역전파하면 d(gx)/dx, 즉 2차 미분이 x.grad에 들어온다. 순서는 이렇다.

    y.backward(create_graph=True)   # 1차 미분 gx = dy/dx (그래프가 달린 Variable)
    gx = x.grad                     # 잠깐 꺼내 둔다
    # 중요: 비우지 않으면 2차 미분이 1차 미분 위에 더해진다
    x.cleargrad()
    gx.backward(create_graph=True)  # 2차 미분 -> x.grad (3차를 원하면 또 반복)

역전파는 잎의 기울기를 "덮어쓰지 않고 더한다". 한 변수가 여러 곳에 쓰일 때 각 경로의 기여를
합해야 하기 때문이다(14단계). 그래서 고차 미분을 반복할 때는 매번 cleargrad가 필요하다.

    정답: y = x^4 (x = 2)에서 y' = 4x^3 = 32,  y'' = 12x^2 = 48,
          y''' = 24x = 48,  y'''' = 24

출력에서 볼 것
* mydezero의 pow와 엔진으로 구한 1~4차 미분이 32, 48, 48, 24이고 5차 미분은 0이다. 4차 미분 24도
  pow(x, 0) 같은 항을 거쳐 x에 연결된 그래프로 계산되었기 때문에 0이라는 기울기가 흐른다.
  (y가 x와 전혀 연결되지 않았다면 x.grad는 None으로 남는다. derivatives는 그때 멈춘다.)
* dezero_kr의 x ** 4 + y.backward(create_graph=True)도 같은 다섯 값을 낸다.
* 곱셈만으로 쓴 x * x * x * x는 1~4차가 같고 5차가 None이다. 4차 미분 24가 시작값 1들의 곱과
  합으로만 계산되어(x가 들어가지 않는다) x와 연결되지 않았기 때문이다. 값으로는 0이 맞지만,
  그래프로는 "x와 무관한 상수"다.
* cleargrad를 빼먹으면 2차 미분 자리에 32 + 48 = 80이 나온다.
"""
import numpy as np

import dezero_kr
from mydezero import Variable
from mydezero.core import mul, pow


def create_graph(y):
    y.backward(create_graph=True)


def derivatives(x, f, n, engine=create_graph):
    """f의 1~n차 미분을 x에서 차례로 구한 리스트 (끊기면 None).

    engine: 역전파 함수 (기본: y.backward(create_graph=True)).
    """
    y = f(x)
    results = []
    for _ in range(n):
        x.cleargrad()
        engine(y)
        if x.grad is None:  # y가 x와 연결되어 있지 않다 (상수)
            results.append(None)
            break
        results.append(float(x.grad.data))
        y = x.grad  # 다음 차수는 방금 구한 미분을 다시 미분한다
    return results


if __name__ == '__main__':
    x = Variable(np.array(2.0), name='x')
    found = derivatives(x, lambda x: pow(x, 4), 5, engine=create_graph)
    for order, value in enumerate(found, 1):
        print(f'{order}차 미분: {value}')

    x = Variable(np.array(2.0), name='x')
    by_mul = derivatives(x, lambda x: mul(mul(mul(x, x), x), x), 5, engine=create_graph)
    x = dezero_kr.Variable(np.array(2.0), name='x')  # 기준 패키지
    package = derivatives(x, lambda x: x ** 4, 5)
    assert found == package == [32.0, 48.0, 48.0, 24.0, 0.0], (found, package)
    assert by_mul == [32.0, 48.0, 48.0, 24.0, None], by_mul
    print('dezero_kr의 x ** 4 (create_graph=True):', package)
    print('곱셈만 쓴 mul(mul(mul(x, x), x), x):', by_mul)

    # 함정: cleargrad 없이 2차 미분을 구하면 1차 미분(32)이 x.grad에 그대로 남아 있어 더해진다
    x = Variable(np.array(2.0), name='x')
    y = pow(x, 4)
    y.backward(create_graph=True)
    gx = x.grad
    gx.backward()
    print('\ncleargrad를 빼먹은 "2차 미분":', float(x.grad.data), '(= 32 + 48)')
