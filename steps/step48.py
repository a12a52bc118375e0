"""48단계: 다중 클래스 분류 -- 나선형 데이터

점 300개가 세 갈래 나선(클래스 0, 1, 2)을 이루는 데이터(새 파일 mydezero/datasets.py의 get_spiral)를
분류한다. 난수는 get_spiral 안의 자기 RandomState에서 뽑으므로 전역 난수(np.random.seed)에 영향이 없다.
직선 몇 개로는 나눌 수 없는 모양이라 은닉층이 있는 신경망이 필요하다.

    모델      MLP((10, 3)): 2차원 점 -> 은닉 10 -> 점수 3개
    손실      F.softmax_cross_entropy (47단계에서 직접 만든 것)
    미니배치  데이터 300개를 매 에폭마다 섞고 30개씩 잘라 10번 갱신한다.

미니배치: 데이터 전체로 기울기를 구하는 대신 일부(배치)로 구한 기울기로 자주 갱신한다. 계산이
가볍고, 섞인 순서가 주는 잡음이 평평한 곳을 빠져나가는 데 도움이 되기도 한다. 한 에폭 = 데이터
전체를 한 번 훑는 것.

그림: matplotlib이 있으면 현재 폴더에 step48_spiral_boundary.png (학습한 모델의 결정 경계)를 저장한다.

에폭: DEZERO_KR_FAST=1(테스트)이면 100에폭, 그냥 실행하면 책과 같은 300에폭(약 2초).

출력에서 볼 것
* 에폭마다의 평균 손실이 1.1 근처(세 클래스를 무작위로 맞히는 -log(1/3) = 1.0986)에서 줄어드는 모습
* 학습 뒤 훈련 데이터 정확도
"""
import math

import numpy as np

import dezero_kr.datasets
from dezero_kr.plot import plot_decision_boundary
import mydezero.functions as F
from mydezero import optimizers
from mydezero.datasets import get_spiral
from mydezero.models import MLP

from _common import FAST, save_plot


if __name__ == '__main__':
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
