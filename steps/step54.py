"""54단계: 드롭아웃과 테스트 모드 (그리고 Adam과 가중치 감쇠)

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

아래 학습은 Adam으로 한다. 46단계의 Optimizer 틀에 update_one만 다른 규칙 셋을 이 단계에서
mydezero/optimizers.py에 직접 만든다(매개변수마다 상태 h, m, v를 zeros_like로 만들어 id(param)으로 둔다).

    AdaGrad  h <- h + g^2;  p <- p - lr g / (sqrt(h) + eps)
             (많이 움직인 매개변수는 천천히)
    RMSprop  h <- a h + (1 - a) g^2;  p <- p - lr g / (sqrt(h) + eps)
             (AdaGrad의 h를 지수 평균으로: 오래된 기울기를 잊는다)
    Adam     m <- m + (1 - b1)(g - m);  v <- v + (1 - b2)(g^2 - v)   (모멘텀 + RMSprop)
             p <- p - lr_t m / (sqrt(v) + eps)
             lr_t = alpha sqrt(1 - b2^t) / (1 - b1^t)
             (m, v가 0에서 시작해 처음 몇 걸음 작게 나오는 치우침을 lr_t가 바로잡는다.
             걸음 수 t는 Adam이 센다)

셋을 기준 패키지 dezero_kr.optimizers의 같은 이름과 같은 모델, 같은 데이터(46단계의 sin 곡선)로 20번
갱신해 매개변수가 같은지 본다(나눗셈과 제곱근의 순서에 따라 float32의 끝자리는 다를 수 있다).

과적합을 줄이는 또 하나의 방법은 가중치 감쇠다: 손실에 rate/2 * sum(p^2)를 더해 큰 가중치를 벌한다.
그 항의 기울기는 rate p이므로 손실을 바꾸는 대신 갱신 전에 기울기에 더하면 된다. 46단계의
optimizer.add_hook에 다는 훅 WeightDecay(rate)를 이 단계에서 만든다(훅은 매개변수 목록을 받는 함수).

    WeightDecay(rate)      g <- g + rate p    (손실에 rate/2 * sum(p^2)를 더한 것과 같은 한 걸음)

에폭: DEZERO_KR_FAST=1(테스트)이면 10에폭(약 1초), 그냥 실행하면 40에폭(약 2초) (Digits).

출력에서 볼 것
* 직접 만든 dropout == 기준 패키지의 F.dropout (같은 시드에서 출력과 기울기, 테스트 모드에서는 그대로)
* 직접 만든 AdaGrad, RMSprop, Adam이 dezero_kr와 같은 매개변수를 만든다. 같은 sin 곡선에서
  MomentumSGD(46단계)와 손실이 줄어드는 모습 비교.
* WeightDecay를 단 한 걸음이 손실에 벌점 항을 더한 한 걸음과 같다(utils.array_allclose로 비교).
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
import mydezero.models
from dezero_kr import optimizers as reference_optimizers
from mydezero import DataLoader, Model, Variable, optimizers
from mydezero.datasets import Digits
from mydezero.functions import dropout
from mydezero.utils import array_allclose

from _common import FAST, ljust


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


def sin_data():
    """46단계와 같은 sin 곡선 데이터 (x, y)."""
    np.random.seed(0)
    x = np.random.rand(100, 1)
    return x, np.sin(2 * np.pi * x) + np.random.rand(100, 1)


def train(optimizer, x, y, iters, package=mydezero, hook=None, penalty=0.0):
    """같은 초깃값의 MLP((10, 1))을 optimizer로 iters번 갱신한다. (매 반복의 손실, 모델).
    hook(model): 달 훅을 만든다. 손실 = MSE + penalty / 2 * sum(p^2)."""
    np.random.seed(1)
    model = package.models.MLP((10, 1))
    optimizer.setup(model)
    if hook is not None:
        optimizer.add_hook(hook(model))
    losses = []
    for i in range(iters):
        loss = package.functions.mean_squared_error(model(x), y)
        losses.append(float(loss.data))
        for p in model.params():
            loss = loss + penalty / 2 * package.functions.sum(p ** 2)
        model.cleargrads()
        loss.backward()
        optimizer.update()
    return losses, model


OPTIMIZERS = [(optimizers.AdaGrad, {'lr': 0.2}), (optimizers.RMSprop, {'lr': 0.01}),
              (optimizers.Adam, {'alpha': 0.05})]


def check_optimizers(x, y):
    """직접 만든 AdaGrad, RMSprop, Adam과 dezero_kr의 것으로 20번 갱신한 매개변수가 같다.
    그다음 MomentumSGD와 손실 곡선을 비교한다."""
    for cls, kwargs in OPTIMIZERS:
        _, a = train(cls(**kwargs), x, y, 20)
        _, b = train(getattr(reference_optimizers, cls.__name__)(**kwargs), x, y, 20,
                     package=dezero_kr)
        for p, q in zip(a.params(), b.params()):
            np.testing.assert_allclose(p.data, q.data, rtol=1e-5, atol=1e-6)
    print('AdaGrad, RMSprop, Adam 확인: 20번 갱신한 매개변수가 dezero_kr.optimizers와 같다')
    steps = [0, 50, 100, 150, 199]
    print('\n' + ljust('sin 곡선 / 반복', 20) + ''.join(f'{s:>9d}' for s in steps))
    for cls, kwargs in [(optimizers.MomentumSGD, {'lr': 0.2})] + OPTIMIZERS:
        losses, _ = train(cls(**kwargs), x, y, 200)
        label = f'{cls.__name__}({", ".join(f"{k}={v}" for k, v in kwargs.items())})'
        print(f'{label:<20}' + ''.join(f'{losses[s]:9.6f}' for s in steps))


def check_weight_decay(x, y):
    """WeightDecay 훅의 한 걸음 == 손실에 벌점 항을 더한 한 걸음."""
    rate = 0.1
    _, hooked = train(optimizers.SGD(lr=0.2), x, y, 1,
                      hook=lambda model: optimizers.WeightDecay(rate))
    _, penalized = train(optimizers.SGD(lr=0.2), x, y, 1, penalty=rate)
    assert all(array_allclose(p.data, q.data)
               for p, q in zip(hooked.params(), penalized.params()))
    print(f'\nWeightDecay({rate}) 확인 (optimizer.add_hook):\n  한 걸음 == 손실에 '
          f'{rate}/2 * sum(p^2)를 더한 한 걸음\n  (utils.array_allclose로 비교)\n')


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
    x, y = sin_data()
    check_optimizers(x, y)
    check_weight_decay(x, y)
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
