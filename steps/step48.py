"""48단계: 다중 클래스 분류 -- 나선형 데이터

점 300개가 세 갈래 나선(클래스 0, 1, 2)을 이루는 데이터(새 파일 mydezero/datasets.py의 get_spiral)를
분류한다. 난수는 get_spiral 안의 자기 RandomState에서 뽑으므로 전역 난수(np.random.seed)에 영향이 없다.
직선 몇 개로는 나눌 수 없는 모양이라 은닉층이 있는 신경망이 필요하다.

    모델      MLP((10, 3)): 2차원 점 -> 은닉 10 -> 점수 3개
    손실      F.softmax_cross_entropy (이 단계에서 직접 만드는 것, 아래)
    미니배치  데이터 300개를 매 에폭마다 섞고 30개씩 잘라 10번 갱신한다.

미니배치: 데이터 전체로 기울기를 구하는 대신 일부(배치)로 구한 기울기로 자주 갱신한다. 계산이
가볍고, 섞인 순서가 주는 잡음이 평평한 곳을 빠져나가는 데 도움이 되기도 한다. 한 에폭 = 데이터
전체를 한 번 훑는 것.

학습에 쓰는 손실은 47단계의 조립판이 아니라, 이 단계에서 mydezero/functions.py에 직접 만드는
넘치지 않는 Function이다. 조립판의 exp는 큰 점수에서 넘친다(exp(1000) = inf, inf / inf = nan). 학습
중에는 점수가 커지기도 하므로 손실이 한 번 nan이 되면 모든 매개변수가 nan이 된다. 그래서

    Softmax               각 행의 최댓값 m을 빼고 계산한다: 모든 점수에서 같은 값을 빼도 확률은 같다.
    utils.logsumexp       log sum exp(x) = m + log sum exp(x - m) (넘치지 않는 log-sum-exp)
    SoftmaxCrossEntropy   log p = x - logsumexp(x)로 -log p_t 를 바로 구하고(log(0)도 clip도 없다),
                          역전파는 47단계의 식 (p - onehot(t)) / N 하나다.
    LogSoftmax            log softmax(x) = x - logsumexp(x) (softmax 뒤에 log를 따로 부르지 않는다)

Function 하나로 계산하므로 그래프에도 함수 하나만 남는다(조립판은 exp, sum, 나눗셈, clip, log,
x[...] ...). 기준 패키지 dezero_kr의 F.softmax, F.softmax_cross_entropy, F.log_softmax와 값,
기울기를 맞춰 보고, float64 중앙 차분과도 맞춰 본다.

그림: matplotlib이 있으면 현재 폴더에 step48_spiral_boundary.png (학습한 모델의 결정 경계)를 저장한다.

에폭: DEZERO_KR_FAST=1(테스트)이면 100에폭, 그냥 실행하면 책과 같은 300에폭(약 2초).

출력에서 볼 것
* 점수 [1000, 1001, 1002]: 조립판 softmax_simple은 nan, 최댓값을 빼는 softmax와 log_softmax,
  softmax_cross_entropy는 정상. 조립판과 Function의 그래프 크기
* 직접 만든 softmax, log_softmax, softmax_cross_entropy가 dezero_kr와 같은 값, 같은 기울기를 낸다.
* 에폭마다의 평균 손실이 1.1 근처(세 클래스를 무작위로 맞히는 -log(1/3) = 1.0986)에서 줄어드는 모습
* 학습 뒤 훈련 데이터 정확도
"""
import math

import numpy as np

import dezero_kr
import dezero_kr.datasets
import dezero_kr.functions as RF  # 기준 패키지
from dezero_kr.plot import plot_decision_boundary
import mydezero.functions as F
from mydezero import Variable, optimizers
from mydezero.datasets import get_spiral
from mydezero.models import MLP
from mydezero.utils import logsumexp

from _common import FAST, gradient_check, graph_size, save_plot


def check_against_package():
    """softmax, log_softmax, softmax_cross_entropy의 값과 기울기 == dezero_kr, 수치 미분과 일치.
    점수가 커도(x 100) 같다."""
    scores = np.random.default_rng(0).standard_normal((5, 4)) * 3
    t = np.array([0, 3, 1, 1, 2])
    weights = np.arange(4.0)  # 행의 합이 늘 1이라 그냥 더하면 기울기가 0이다
    cases = [('softmax', lambda f, v: f.softmax(v) * weights),
             ('log_softmax', lambda f, v: f.log_softmax(v) * weights),
             ('softmax_cross_entropy', lambda f, v: f.softmax_cross_entropy(v, t))]
    for name, f in cases:
        for scale in (1, 100):
            x, rx = Variable(scores * scale), dezero_kr.Variable(scores * scale)
            y, ry = F.sum(f(F, x)), RF.sum(f(RF, rx))
            y.backward()
            ry.backward()
            np.testing.assert_allclose(y.data, ry.data, rtol=1e-13)
            np.testing.assert_allclose(x.grad.data, rx.grad.data,
                                       rtol=1e-12, atol=1e-15)
        assert gradient_check(lambda v, f=f: f(F, v), scores)
    print('softmax, log_softmax, softmax_cross_entropy 확인:\n  값과 기울기 == dezero_kr'
          ' (점수 x 100에서도), 수치 미분과 일치')


def overflow():
    """큰 점수: 조립판(47단계)은 넘치고, 최댓값을 빼는 Function은 넘치지 않는다."""
    big = Variable(np.array([[1000.0, 1001.0, 1002.0]]))
    with np.errstate(over='ignore', invalid='ignore'):  # 조립판이 넘치는 것을 보여 주려는 것
        naive = F.softmax_simple(big).data
        naive_loss = F.softmax_cross_entropy_simple(big, np.array([2]))
    print('\n점수 [1000, 1001, 1002]: 조립판 F.softmax_simple', naive)
    print('  최댓값을 빼는 F.softmax', np.round(F.softmax(big).data, 6))
    log_p = F.log_softmax(big).data  # x - m - log sum exp(x - m): log를 따로 부르지 않는다
    np.testing.assert_allclose(log_p, np.log(F.softmax(big).data), rtol=1e-12)
    print('  F.log_softmax          ', np.round(log_p, 6))
    print('  utils.logsumexp        ', np.round(logsumexp(big.data), 6),
          '(= 1002 + log(e^-2 + e^-1 + 1))')
    loss = F.softmax_cross_entropy(big, np.array([2]))
    print(f'  정답 2의 손실: F.softmax_cross_entropy = {float(loss.data):.6f},'
          f' 조립판 = {float(naive_loss.data)}')
    (f1, v1), (f2, v2) = graph_size(loss), graph_size(naive_loss)
    print(f'  그래프: softmax_cross_entropy는 함수 {f1}개, 변수 {v1}개,'
          f'\n    조립판은 함수 {f2}개, 변수 {v2}개\n')


if __name__ == '__main__':
    check_against_package()
    overflow()
    max_epoch = 100 if FAST else 300
    batch_size = 30
    hidden_size = 10
    lr = 1.0

    x, t = get_spiral(train=True)
    x_ref, t_ref = dezero_kr.datasets.get_spiral(train=True)  # 기준 패키지와 같은 데이터인가
    assert np.array_equal(x, x_ref) and np.array_equal(t, t_ref)
    print('데이터:', x.shape, x.dtype, '| 정답:', t.shape,
          '| 클래스별 개수:', np.bincount(t).tolist())

    np.random.seed(0)  # 모델 초깃값과 배치를 섞는 순서
    model = MLP((hidden_size, 3))
    optimizer = optimizers.SGD(lr).setup(model)

    data_size = len(x)
    max_iter = math.ceil(data_size / batch_size)
    for epoch in range(max_epoch):
        index = np.random.permutation(data_size)  # 에폭마다 새로 섞는다
        sum_loss = 0.0
        for i in range(max_iter):
            batch_index = index[i * batch_size:(i + 1) * batch_size]
            batch_x, batch_t = x[batch_index], t[batch_index]

            y = model(batch_x)
            loss = F.softmax_cross_entropy(y, batch_t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(batch_t)
        if epoch % (max_epoch // 10) == 0 or epoch == max_epoch - 1:
            print(f'epoch {epoch + 1:3d}: 평균 손실 {sum_loss / data_size:.6f}')

    # 정확도: 점수가 가장 큰 클래스가 정답과 같은 비율 (50단계에서 F.accuracy로 만든다)
    accuracy = float((model(x).data.argmax(axis=1) == t).mean())
    print(f'훈련 데이터 정확도: {accuracy:.4f}')
    save_plot(plot_decision_boundary, lambda points: model(points).data, x, t,
              to_file='step48_spiral_boundary.png', figsize=(4.5, 4.5), dpi=90)
