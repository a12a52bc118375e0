"""47단계: 소프트맥스와 교차 엔트로피 -- 다중 클래스 분류의 출력과 손실

분류 신경망은 클래스마다 점수(logit) 하나를 낸다. 소프트맥스는 점수를 확률로 바꾼다.

    p_k = exp(x_k) / sum_j exp(x_j)        (모두 양수, 합이 1)

정답 클래스 t의 확률이 1에 가까울수록 좋으므로 손실은 -log p_t 이다(교차 엔트로피). 배치 N개면
평균을 낸다. 두 함수를 합친 F.softmax_cross_entropy(x, t)의 기울기는 아주 단순하다.

    dL/dx = (p - onehot(t)) / N

exp는 큰 점수에서 넘친다(exp(1000) = inf). 그래서 F.softmax는 각 행의 최댓값을 빼고
계산한다: 모든 점수에서 같은 값을 빼도 확률은 변하지 않는다.

이 단계에서 mydezero/functions.py에 직접 만드는 것: Softmax(각 행의 최댓값을 빼서 넘치지 않는)와,
손실을 한 번에 계산하는 Function SoftmaxCrossEntropy. 순전파는 log-sum-exp(utils.logsumexp)로
-log p_t 를 바로 구하고(log p = x - m - log sum exp(x - m), m = 행의 최댓값), 역전파는 위의 식
하나다. 기준 패키지 dezero_kr의 F.softmax_cross_entropy와 값과 기울기를 맞춰 보고, float64 중앙
차분과도 맞춰 본다.

같은 두 식을 이미 있는 연산(exp, sum, 나눗셈, log, x[...])으로 적은 조립판 softmax_simple,
softmax_cross_entropy_simple(DeZero와 같은 이름)과, 넘치지 않는 log softmax(log_softmax)도 더한다.
조립판은 큰 점수에서 넘치고 그래프에 중간 변수가 모두 남는다.

배열의 일부를 꺼내는 x[1], x[:, 2]도 함수(GetItem)다. 역전파하면 꺼낸 자리에만 기울기가 가고
나머지는 0이다. 그 역전파 GetItemGrad는 0 배열의 꺼낸 자리에 gy를 더한다(np.add.at: 같은 자리를
두 번 꺼냈으면 두 번 더한다). Variable에 x[...]가 생긴다(__getitem__).

출력에서 볼 것
* GetItem: 꺼낸 원소 자리에만 1이 있는 x.grad
* MLP((10, 3))의 점수, 조립판 softmax_simple/softmax_cross_entropy_simple과
  F.softmax/F.softmax_cross_entropy가 같다.
* 기울기가 (p - onehot(t)) / N 과 같다.
* 직접 만든 SoftmaxCrossEntropy가 기준 패키지 dezero_kr와 같은 값, 같은 기울기를 내고 수치 미분과 맞는다.
* 점수가 1000처럼 클 때: 단순한 식(softmax_simple)은 nan, 최댓값을 빼는 softmax(mydezero)와 기준 패키지의
  F.softmax, 그리고 log_softmax는 정상
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
import mydezero.functions as F
from mydezero import Variable
from mydezero.models import MLP

from _common import gradient_check


def check_against_package():
    """값과 기울기 == F.softmax_cross_entropy, 기울기 == (p - onehot) / N, 수치 미분과 일치."""
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((5, 4)) * 3
    t = np.array([0, 3, 1, 1, 2])
    results = []
    for f, variable in ((F.softmax_cross_entropy, Variable),
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
    assert gradient_check(lambda v: F.softmax_cross_entropy(v, t), scores)
    print(f'SoftmaxCrossEntropy 확인: 손실 {loss:.6f} == F.softmax_cross_entropy,'
          '\n  기울기 == (p - onehot(t)) / N == 패키지, 수치 미분과 일치')


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

    np.random.seed(0)
    model = MLP((10, 3))
    x = np.array([[0.2, -0.4], [0.3, 0.5], [1.3, -3.2], [2.1, 0.3]])
    t = np.array([2, 0, 1, 0])
    scores = model(x)
    print('\n점수 (4개 샘플 x 3개 클래스):\n', np.round(scores.data, 6), sep='')
    p = F.softmax(scores)
    print('F.softmax:\n', np.round(p.data, 6), sep='')
    print('행마다의 합:', np.round(p.data.sum(axis=1), 6))
    simple = F.softmax_simple(scores)  # 이미 있는 연산으로 적은 조립판
    print('조립판 F.softmax_simple과 같은가:', np.allclose(simple.data, p.data))

    loss = F.softmax_cross_entropy(scores, t)
    loss_simple = F.softmax_cross_entropy_simple(scores, t)
    print(f'\nF.softmax_cross_entropy = {float(loss.data):.6f},  '
          f'F.softmax_cross_entropy_simple = {float(loss_simple.data):.6f}')

    scores = Variable(scores.data)  # 점수에서 다시 시작해 기울기를 본다
    F.softmax_cross_entropy(scores, t).backward()
    expected = (p.data - np.eye(3)[t]) / len(t)
    print('dL/dx:\n', np.round(scores.grad.data, 6), sep='')
    print('(p - onehot(t)) / N 과 같은가:', np.allclose(scores.grad.data, expected))

    big = Variable(np.array([[1000.0, 1001.0, 1002.0]]))
    with np.errstate(over='ignore', invalid='ignore'):  # 직접 적은 식이 넘치는 것을 보여 주려는 것
        naive = F.softmax_simple(big).data
    print('\n점수 [1000, 1001, 1002]: 단순한 식 F.softmax_simple', naive)
    print('  최댓값을 빼는 softmax', np.round(F.softmax(big).data, 6))
    reference = RF.softmax(dezero_kr.Variable(big.data)).data  # 기준 패키지
    print('  F.softmax             ', np.round(reference, 6))
    big_loss = F.softmax_cross_entropy(big, np.array([2]))
    print(f'  SoftmaxCrossEntropy(정답 2) = {float(big_loss.data):.6f}'
          f' (= -log {float(F.softmax(big).data[0, 2]):.6f})')
    log_p = F.log_softmax(big).data  # x - m - log sum exp(x - m): log를 따로 부르지 않는다
    np.testing.assert_allclose(log_p, np.log(F.softmax(big).data), rtol=1e-12)
    print('  F.log_softmax         ', np.round(log_p, 6))
