"""34단계: sin 함수의 고차 미분 -- 벡터 하나로 200개 점을 한꺼번에

x에 점 200개를 담은 벡터를 넣으면 F.sin(mydezero/functions.py, 30단계)은 원소마다 계산한다.
y.backward()의 시작 기울기는 y와 같은 모양의 1로 채운 배열이므로, 원소마다 독립인 함수라면 x.grad[i]
= d y[i] / d x[i]가 된다. 32단계처럼 기울기를 되풀이해 역전파하면 sin의 1~3차 미분을 모든 점에서 한
번에 얻는다.

    sin' = cos,   sin'' = -sin,   sin''' = -cos

그림: matplotlib이 있으면 현재 폴더에 step34_sin_derivatives.png를 저장한다 (없으면 건너뛴다:
pip install matplotlib). 저장했는지는 표준 오류로 알리고, 표준 출력에는 어느 환경에서나 같은
숫자만 쓴다.

출력에서 볼 것
* 몇 개 점에서의 y, y', y'', y''' 값과, 200개 점 전체에서 정답 공식(cos, -sin, -cos)과의 최대 오차
  (0에 가깝다: 자동 미분은 근사가 아니라 정확한 미분이다)
* 기준 패키지 dezero_kr의 F.sin과 y.backward로 구해도 같은 값이다.
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
import mydezero.functions as F
from mydezero import Variable

from _common import save_lines


def sin_derivatives(xs, n, sin=F.sin, variable=Variable):
    """[sin(xs), sin'(xs), ..., sin^(n)(xs)] 를 ndarray 리스트로.

    sin, variable: 쓸 sin 함수와 Variable 클래스 (기본은 mydezero의 것).
    """
    x = variable(xs)
    y = sin(x)
    logs = [y.data]
    for _ in range(n):
        x.cleargrad()
        y.backward(create_graph=True)
        y = x.grad
        logs.append(y.data)
    x.cleargrad()  # 기울기에 달린 그래프를 놓아준다
    return logs


if __name__ == '__main__':
    xs = np.linspace(-7, 7, 200)
    logs = sin_derivatives(xs, 3)
    labels = ['y=sin(x)', "y'", "y''", "y'''"]

    print(f'{"x":>9}' + ''.join(f'{label:>12}' for label in labels))
    for i in (0, 50, 100, 150, 199):
        print(f'{xs[i]:9.4f}' + ''.join(f'{values[i]:12.6f}' for values in logs))

    exact = [np.sin(xs), np.cos(xs), -np.sin(xs), -np.cos(xs)]
    for label, values, answer in zip(labels, logs, exact):
        print(f'{label:<9} 정답 공식과의 최대 오차: {np.abs(values - answer).max():.1e}')

    ref = sin_derivatives(xs, 3, sin=RF.sin, variable=dezero_kr.Variable)  # 기준 패키지
    difference = max(np.abs(a - b).max() for a, b in zip(ref, logs))
    assert difference == 0.0, difference
    print(f'dezero_kr로 구한 값과의 최대 차이: {difference:.1e}')
    save_lines(xs, dict(zip(labels, logs)), 'step34_sin_derivatives.png')
