"""47단계: 소프트맥스와 교차 엔트로피 -- 다중 클래스 분류의 출력과 손실

분류 신경망은 클래스마다 점수(logit) 하나를 낸다. 소프트맥스는 점수를 확률로 바꾼다.

    p_k = exp(x_k) / sum_j exp(x_j)        (모두 양수, 합이 1)

정답 클래스 t의 확률이 1에 가까울수록 좋으므로 손실은 -log p_t 이다(교차 엔트로피). 배치 N개면
평균을 낸다. 두 함수를 합친 손실의 기울기는 아주 단순하다.

    dL/dx = (p - onehot(t)) / N

이 단계에서 mydezero/functions.py에 직접 만드는 것은 두 식을 이미 있는 연산(exp, sum, 나눗셈, log,
x[...])으로 그대로 적은 softmax_simple과 softmax_cross_entropy_simple(DeZero와 같은 이름)이다.
역전파는 그 연산들이 해 준다. 기준 패키지 dezero_kr의 F.softmax, F.softmax_cross_entropy와 값과 기울기를
맞춰 보고, float64 중앙 차분과도 맞춰 본다.

정답 자리의 log p_t 를 꺼내는 것은 x[...]다. 배열의 일부를 꺼내는 x[1], x[:, 2]도 함수(GetItem)다.
역전파하면 꺼낸 자리에만 기울기가 가고 나머지는 0이다. 그 역전파 GetItemGrad는 0 배열의 꺼낸 자리에
gy를 더한다(np.add.at: 같은 자리를 두 번 꺼냈으면 두 번 더한다). Variable에 x[...]가 생긴다
(__getitem__, 함수로는 get_item).

log(0) = -inf를 피하려고 softmax_cross_entropy_simple은 확률을 [1e-15, 1]로 자른다: Clip(clip).
자른 범위 밖의 원소에는 기울기가 가지 않는다(그 자리의 기울기는 0).

조립판은 큰 점수에서 넘치고(exp(1000) = inf) 그래프에 중간 변수가 모두 남는다. 넘치지 않고 한 번에
계산하는 Function(softmax, softmax_cross_entropy)은 학습에 쓰기 시작하는 48단계에서 만든다.

출력에서 볼 것
* GetItem: 꺼낸 원소 자리에만 1이 있는 x.grad, 같은 자리를 두 번 꺼내면 2
* clip: 자른 원소 자리의 기울기는 0
* MLP((10, 3))의 점수와 softmax_simple(행마다 합이 1), softmax_cross_entropy_simple의 손실
* 기울기가 (p - onehot(t)) / N 과 같다.
* 직접 만든 조립판이 기준 패키지 dezero_kr와 같은 값, 같은 기울기를 내고 수치 미분과 맞는다.
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
import mydezero.functions as F
from mydezero import Variable
from mydezero.models import MLP

from _common import gradient_check


def check_against_package():
    """softmax_simple, softmax_cross_entropy_simple의 값과 기울기 == dezero_kr의 F.softmax,
    F.softmax_cross_entropy, 기울기 == (p - onehot) / N, 수치 미분과 일치."""
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((5, 4)) * 3
    t = np.array([0, 3, 1, 1, 2])
    results = []
    for f, variable in ((F.softmax_cross_entropy_simple, Variable),
                        (RF.softmax_cross_entropy, dezero_kr.Variable)):
        x = variable(scores)
        loss = f(x, t)
        loss.backward()
        results.append((float(loss.data), x.grad.data))
    (loss, gx), (loss_pkg, gx_pkg) = results
    np.testing.assert_allclose(loss, loss_pkg, rtol=1e-14)
    np.testing.assert_allclose(gx, gx_pkg, rtol=1e-12, atol=1e-16)
    p = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(gx, (p - np.eye(4)[t]) / 5, rtol=1e-12, atol=1e-16)
    assert gradient_check(lambda v: F.softmax_cross_entropy_simple(v, t), scores)
    np.testing.assert_allclose(F.softmax_simple(Variable(scores)).data,
                               RF.softmax(dezero_kr.Variable(scores)).data, rtol=1e-14)
    assert gradient_check(lambda v: F.softmax_simple(v) * np.arange(4.0), scores)
    print(f'softmax_cross_entropy_simple 확인: 손실 {loss:.6f} == F.softmax_cross_entropy,'
          '\n  기울기 == (p - onehot(t)) / N == 패키지, 수치 미분과 일치'
          '\nsoftmax_simple 확인: 값 == F.softmax, 기울기가 수치 미분과 일치')


if __name__ == '__main__':
    check_against_package()
    print()
    x = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    y = x[1]
    y.backward()
    print('x[1] =', y.data, '  x.grad =', x.grad.data.tolist())
    x.cleargrad()
    y = x[:, 2]
    y.backward()
    print('x[:, 2] =', y.data, '  x.grad =', x.grad.data.tolist())
    x.cleargrad()
    y = F.get_item(x, (np.array([0, 0, 1]), np.array([1, 1, 2])))  # (0, 1)을 두 번
    y.backward()
    print('x[[0, 0, 1], [1, 1, 2]] =', y.data, '\n  x.grad =', x.grad.data.tolist())
    x.cleargrad()
    y = F.clip(x, 2.0, 5.0)
    y.backward()
    print('clip(x, 2, 5) =', y.data.tolist(), '\n  x.grad =', x.grad.data.tolist())

    np.random.seed(0)
    model = MLP((10, 3))
    x = np.array([[0.2, -0.4], [0.3, 0.5], [1.3, -3.2], [2.1, 0.3]])
    t = np.array([2, 0, 1, 0])
    scores = model(x)
    print('\n점수 (4개 샘플 x 3개 클래스):\n', np.round(scores.data, 6), sep='')
    p = F.softmax_simple(scores)
    print('F.softmax_simple:\n', np.round(p.data, 6), sep='')
    print('행마다의 합:', np.round(p.data.sum(axis=1), 6))

    scores = Variable(scores.data)  # 점수에서 다시 시작해 기울기를 본다
    loss = F.softmax_cross_entropy_simple(scores, t)
    print(f'\nF.softmax_cross_entropy_simple = {float(loss.data):.6f}'
          f' (= -log p_t의 평균 {-np.log(p.data[np.arange(4), t]).mean():.6f})')
    loss.backward()
    expected = (p.data - np.eye(3)[t]) / len(t)
    print('dL/dx:\n', np.round(scores.grad.data, 6), sep='')
    print('(p - onehot(t)) / N 과 같은가:', np.allclose(scores.grad.data, expected))
