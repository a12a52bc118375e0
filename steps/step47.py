"""47단계: 소프트맥스와 교차 엔트로피 -- 다중 클래스 분류의 출력과 손실

분류 신경망은 클래스마다 점수(logit) 하나를 낸다. 소프트맥스는 점수를 확률로 바꾼다.

    p_k = exp(x_k) / sum_j exp(x_j)        (모두 양수, 합이 1)

정답 클래스 t의 확률이 1에 가까울수록 좋으므로 손실은 -log p_t 이다(교차 엔트로피). 배치 N개면
평균을 낸다. 두 함수를 합친 F.softmax_cross_entropy(x, t)의 기울기는 아주 단순하다.

    dL/dx = (p - onehot(t)) / N

exp는 큰 점수에서 넘친다(exp(1000) = inf). 그래서 패키지의 F.softmax는 각 행의 최댓값을 빼고
계산한다: 모든 점수에서 같은 값을 빼도 확률은 변하지 않는다.

배열의 일부를 꺼내는 x[1], x[:, 2]도 함수(GetItem)다. 역전파하면 꺼낸 자리에만 기울기가 가고
나머지는 0이다.

출력에서 볼 것
* GetItem: 꺼낸 원소 자리에만 1이 있는 x.grad
* MLP((10, 3))의 점수, 직접 적은 소프트맥스/교차 엔트로피와 F.softmax/F.softmax_cross_entropy가 같다.
* 기울기가 (p - onehot(t)) / N 과 같다.
* 점수가 1000처럼 클 때: 직접 적은 식은 nan, F.softmax는 정상
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable
from dezero_kr.models import MLP


def softmax_by_hand(x):
    y = F.exp(x)
    return y / F.sum(y, axis=1, keepdims=True)


def cross_entropy_by_hand(x, t):
    p = softmax_by_hand(x)
    N = x.shape[0]
    log_p = F.log(p[np.arange(N), t])  # 각 행에서 정답 클래스의 확률만 꺼낸다
    return -F.sum(log_p) / N


if __name__ == '__main__':
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
    print('직접 적은 소프트맥스와 같은가:', np.allclose(softmax_by_hand(scores).data, p.data))

    loss = F.softmax_cross_entropy(scores, t)
    print(f'\nF.softmax_cross_entropy = {float(loss.data):.6f},  직접 적은 식 = '
          f'{float(cross_entropy_by_hand(scores, t).data):.6f}')

    scores = Variable(scores.data)  # 점수에서 다시 시작해 기울기를 본다
    F.softmax_cross_entropy(scores, t).backward()
    expected = (p.data - np.eye(3)[t]) / len(t)
    print('dL/dx:\n', np.round(scores.grad.data, 6), sep='')
    print('(p - onehot(t)) / N 과 같은가:', np.allclose(scores.grad.data, expected))

    big = Variable(np.array([[1000.0, 1001.0, 1002.0]]))
    with np.errstate(over='ignore', invalid='ignore'):  # 직접 적은 식이 넘치는 것을 보여 주려는 것
        naive = softmax_by_hand(big).data
    print('\n점수 [1000, 1001, 1002]: 직접 적은 식', naive, ' F.softmax', np.round(F.softmax(big).data, 6))
