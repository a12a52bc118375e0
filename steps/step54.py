"""54단계: 드롭아웃과 테스트 모드

드롭아웃은 학습할 때 뉴런의 출력을 무작위로 끄는(0으로 만드는) 기법이다. 매번 다른 일부 뉴런만으로
답을 맞혀야 하므로 특정 뉴런에 기대는 과적합이 줄어든다. 테스트할 때는 모든 뉴런을 쓴다.

역 드롭아웃(inverted dropout): 학습 때 살아남은 값을 1 / (1 - ratio)배 키워 두면 출력의 기댓값이
테스트 때와 같아진다. 그래서 테스트 때는 아무 일도 하지 않으면 된다.

    학습:    y = x * mask / (1 - ratio),  mask ~ 베르누이(1 - ratio)
             역전파: gy * mask / (1 - ratio)
    테스트:  y = x

어느 쪽인지는 mydezero.Config.train이 정하고, with mydezero.test_mode(): 블록 안에서만 False가 된다
(둘 다 이 단계에서 mydezero/core.py에 더한다. 배치 정규화도 같은 스위치를 본다). dropout 함수는 이
단계에서 mydezero/functions.py에 직접 만든다: 마스크를 곱하고
(1 - ratio)로 나누는 것은 이미 있는 연산(곱셈, 나눗셈)이라 역전파는 저절로 gy * mask / (1 - ratio)가
된다. 같은 시드의 기준 패키지 F.dropout과 출력, 기울기가 같은지 확인한다. 마스크는 NumPy 전역 난수에서
나오므로 np.random.seed로 재현된다.

에폭: DEZERO_KR_FAST=1(테스트)이면 10에폭(약 1초), 그냥 실행하면 40에폭(약 2초) (Digits).

출력에서 볼 것
* 직접 만든 dropout == 기준 패키지의 F.dropout (같은 시드에서 출력과 기울기, 테스트 모드에서는 그대로)
* 1로 채운 배열에 dropout(ratio=0.5): 절반 정도가 0, 나머지는 2.0, 평균은 약 1. 테스트 모드에서는 그대로.
* 역전파된 기울기도 같은 마스크를 쓴다.
* 드롭아웃 모델을 학습 모드로 평가하면 부를 때마다 정확도가 달라지고 낮다. test_mode()로 평가하면
  늘 같은 값이 나온다: 평가와 추론은 반드시 test_mode() 안에서.
  (드롭아웃이 과적합을 얼마나 줄이는지는 모델이 크고 데이터가 적을 때 잘 보인다. 이 작은 예제로는
  수 초 안에 뚜렷한 차이를 보이기 어려워 생략한다.)
"""
import numpy as np

import dezero_kr  # 기준 패키지
import dezero_kr.functions as RF
import mydezero
import mydezero.functions as F
import mydezero.layers as L
from mydezero import DataLoader, Model, Variable, optimizers
from mydezero.datasets import Digits
from mydezero.functions import dropout

from _common import FAST


def check_against_package():
    """같은 시드에서 dropout == 기준 패키지의 F.dropout (출력과 기울기),
    테스트 모드에서는 둘 다 x 그대로."""
    a = np.random.default_rng(0).standard_normal((4, 5))
    for ratio in (0.5, 0.25):
        results = []
        for package in (mydezero, dezero_kr):
            np.random.seed(0)
            x = package.Variable(a)
            y = package.functions.dropout(x, ratio)
            package.functions.sum(y * y).backward()
            results.append((y.data, x.grad.data))
        for mine, reference in zip(*results):
            np.testing.assert_allclose(mine, reference, rtol=1e-15)
    with mydezero.test_mode(), dezero_kr.test_mode():
        assert dropout(a).data is a and RF.dropout(a).data is a
    print('dropout 확인: 같은 시드에서 F.dropout과 출력, 기울기가 같고'
          '\n  테스트 모드에서는 둘 다 입력 그대로')


class Net(Model):
    """64 -> 100 -> 100 -> 10, ReLU.
    dropout_ratio > 0 이면 각 은닉층 뒤에 드롭아웃."""

    def __init__(self, dropout_ratio):
        super().__init__()
        self.l1 = L.Linear(100)
        self.l2 = L.Linear(100)
        self.l3 = L.Linear(10)
        self.dropout_ratio = dropout_ratio

    def forward(self, x):
        h = dropout(F.relu(self.l1(x)), self.dropout_ratio)
        h = dropout(F.relu(self.l2(h)), self.dropout_ratio)
        return self.l3(h)


def accuracy(model, x, t):
    # 평가는 드롭아웃 없이(test_mode), 그래프 없이(no_grad)
    with mydezero.test_mode(), mydezero.no_grad():
        return float(F.accuracy(model(x), t).data)


if __name__ == '__main__':
    check_against_package()
    np.random.seed(0)
    x = Variable(np.ones((2, 10)))
    y = dropout(x, dropout_ratio=0.5)
    print('학습 모드 dropout(1로 채운 2x10):\n', y.data, sep='')
    print(f'0의 비율 {np.mean(y.data == 0):.2f}, 평균 {float(y.data.mean()):.2f}')
    y.backward()
    print('x.grad (같은 마스크):', np.array_equal(x.grad.data, y.data))

    big = dropout(np.ones(100000), 0.3)
    print(f'ratio=0.3, 원소 10만 개: 0의 비율 {np.mean(big.data == 0):.4f}, '
          f'평균 {float(big.data.mean()):.4f}')
    with mydezero.test_mode():
        y = dropout(x, dropout_ratio=0.5)
    print('테스트 모드 dropout:', y.data[0])
    print('  Config.train은 블록 밖에서 다시', mydezero.Config.train)

    # 드롭아웃을 넣은 모델을 학습하고, 평가를 학습 모드/테스트 모드로 비교한다
    train_set = Digits(train=True)
    x_test, t_test = Digits(train=False)[:]
    max_epoch = 10 if FAST else 40
    np.random.seed(1)
    model = Net(dropout_ratio=0.5)
    optimizer = optimizers.Adam(alpha=0.001).setup(model)
    loader = DataLoader(train_set, batch_size=50)
    for epoch in range(max_epoch):
        for x, t in loader:
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
    print(f'\n드롭아웃(0.5) 모델을 {max_epoch}에폭 학습한 뒤 테스트 정확도:')
    with mydezero.no_grad():
        in_train_mode = [float(F.accuracy(model(x_test), t_test).data)
                         for _ in range(3)]
    print('  학습 모드로 세 번 평가 (매번 다른 뉴런이 꺼진다):',
          ', '.join(f'{a:.4f}' for a in in_train_mode))
    in_test_mode = [accuracy(model, x_test, t_test) for _ in range(3)]
    print('  test_mode()로 세 번 평가 (모든 뉴런, 늘 같은 값) :',
          ', '.join(f'{a:.4f}' for a in in_test_mode))
