"""62단계: 순방향 모드 자동 미분 -- JVP와 VJP, 그리고 어느 쪽이 싼가

지금까지의 역전파는 역방향(reverse) 모드다. 함수 f: R^n -> R^m 의 야코비 행렬 J (m x n)에 대해

    VJP (역방향):  v^T J   출력 쪽 벡터 v 하나를 출력에서 입력으로 한 번 거슬러 보낸다.
    JVP (순방향):  J t     입력 쪽 방향 t 하나를 순전파와 함께 입력에서 출력으로 한 번 밀어 보낸다.

순방향 모드는 각 변수 옆에 "접선(tangent)" dx를 붙여 다니며, 함수마다 jvp 규칙(예: sin이면
dy = cos(x) dx, 곱셈이면 d(ab) = da b + a db)으로 출력의 접선을 계산한다. 역방향과 달리 그래프를
저장했다가 거꾸로 따라갈 필요가 없다.

야코비 행렬 전체가 필요하면 기저 방향을 하나씩 넣는다: 순방향 모드는 열 하나씩 n번, 역방향은 행
하나씩 m번. 그래서
* 손실처럼 출력이 하나(m = 1)이고 매개변수가 많으면(n 큼) 역방향 한 번이면 기울기 전체가 나온다.
  신경망 학습이 역전파를 쓰는 이유다.
* 입력이 하나(n = 1)이고 출력이 많으면 순방향 모드 한 번이면 된다.
(방향 수가 곧 실제 속도 배수는 아니다: 한 번의 전파 비용, 메모리, 벡터화도 영향을 준다.)

dezero_kr.autograd:  jvp(f, primals, tangents), vjp(f, *primals, v=...),
                     jacobian(f, x, mode=...)

출력에서 볼 것
* f(x) = [x0 x1, sin(x0) + x2, x1^2 x2] 의 야코비 행렬을 순방향 모드(순전파 3번)와 역방향 모드
  (순전파 1번 + 역전파 3번)로 구한 것이 같다.
* JVP = J t, VJP = v^T J 를 야코비 행렬 곱과 비교
* 입력 200개 -> 출력 1개이면 역방향이 역전파 1번, 입력 1개 -> 출력 200개이면 순방향 모드가 순전파
  1번으로 끝난다. 반대쪽 모드는 200번 전파한다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable
from dezero_kr.autograd import jacobian, jvp, vjp


def f(x):
    """R^3 -> R^3: [x0 x1, sin(x0) + x2, x1^2 x2]"""
    return F.stack([x[0] * x[1], F.sin(x[0]) + x[2], x[1] ** 2 * x[2]])


def exact_jacobian(x):
    x0, x1, x2 = x
    return np.array([[x1, x0, 0.0],
                     [np.cos(x0), 0.0, 1.0],
                     [0.0, 2 * x1 * x2, x1 ** 2]])


def count_passes(g, point, mode):
    """jacobian(g, point, mode)를 구하며 (순전파 횟수, 역전파 횟수, 결과)를
    센다.

    순전파: g가 불린 횟수 (순방향 모드에서는 접선을 싣고 한 번 지나가는 것이 JVP
    한 번이다). 역전파: 입력 변수에 건 hook이 불린 횟수 (역전파 한 번마다 입력의
    기울기가 한 번 완성된다).
    """
    counts = {'forward': 0, 'backward': 0}

    def counted(x):
        counts['forward'] += 1
        return g(x)

    x = Variable(point)
    def count_backward(grad):
        counts['backward'] += 1

    x.register_hook(count_backward)
    result = jacobian(counted, x, mode=mode)
    return counts['forward'], counts['backward'], result


if __name__ == '__main__':
    x = np.array([1.0, 2.0, 3.0])
    J = exact_jacobian(x)
    print('손으로 구한 야코비 행렬 J:\n', np.round(J, 6), sep='')
    for mode in ('forward', 'reverse'):
        n_fwd, n_bwd, Jm = count_passes(f, x, mode)
        print(f'jacobian(mode={mode!r}): J와 같은가 {np.allclose(Jm, J)}, '
              f'순전파 {n_fwd}번, 역전파 {n_bwd}번')

    t = np.array([1.0, 0.0, -1.0])
    y, jt = jvp(f, (x,), (t,))
    print('\nJVP  t =', t, ' -> J t =', np.round(jt.data, 6))
    print('                     J @ t =', np.round(J @ t, 6))
    v = np.array([0.0, 1.0, 2.0])
    y, vj = vjp(f, x, v=v)
    print('VJP  v =', v, ' -> v^T J =', np.round(vj.data, 6))
    print('                     v @ J =', np.round(v @ J, 6))

    # 순방향 모드의 접선이 실제로 어떻게 흐르는지:
    # y = sin(x) * x,  dy = (cos(x) x + sin(x)) dx
    x1 = Variable(np.array(0.5))
    y, dy = jvp(lambda x: F.sin(x) * x, (x1,), (np.array(1.0),))
    print(f'\ny = sin(x) x, x = 0.5, dx = 1: jvp의 dy = {float(dy.data):.9f}')
    print(f'  식 cos(x) x + sin(x) = {np.cos(0.5) * 0.5 + np.sin(0.5):.9f}')

    print('\n야코비 행렬 전체를 구하는 비용 (순전파 / 역전파 횟수):')
    n = 200
    cases = [(f'입력 {n}개 -> 출력 1개 (손실)', lambda w: F.sum(F.sin(w) * w),
              np.linspace(-1, 1, n)),
             (f'입력 1개 -> 출력 {n}개 (곡선)', lambda s: F.sin(s * np.arange(1.0, n + 1)),
              np.array([0.3]))]
    for label, g, point in cases:
        fwd = count_passes(g, point, 'forward')
        rev = count_passes(g, point, 'reverse')
        print(f'  {label}: 결과 같음 {np.allclose(fwd[2], rev[2])}')
        print(f'    순방향 모드: 순전파 {fwd[0]:3d}번')
        print(f'    역방향 모드: 순전파 {rev[0]:3d}번 + 역전파 {rev[1]:3d}번')
