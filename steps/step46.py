"""46단계: 매개변수 갱신을 맡는 객체 -- Optimizer

"기울기를 보고 매개변수를 어떻게 바꿀까"는 여러 방법이 있다. 그 방법을 Optimizer 객체로 떼어
두면 학습 루프는 그대로 두고 한 줄만 바꿔 방법을 갈아 끼울 수 있다.

    optimizer = optimizers.SGD(lr=0.2).setup(model)   # 어떤 모델의 매개변수를 갱신할지
    ...
    model.cleargrads()
    loss.backward()
    optimizer.update()                                # model.params() 전부를 한 번 갱신

    SGD          p <- p - lr g
    MomentumSGD  v <- momentum v - lr g;  p <- p + v            (속도를 쌓아 골짜기를 빨리 지나간다)
    AdaGrad      h <- h + g^2;  p <- p - lr g / sqrt(h)          (많이 움직인 매개변수는 천천히)
    RMSprop      h <- a h + (1 - a) g^2;  p <- p - lr g / sqrt(h) (AdaGrad의 h를 지수 평균으로)
    Adam         m, v = g, g^2의 지수 평균;  p <- p - lr m / sqrt(v)   (모멘텀 + RMSprop, 편향 보정)

optimizer.add_hook(훅)으로 갱신 전에 기울기를 손보는 일(가중치 감쇠, 기울기 클리핑 61단계)도 끼울 수 있다.

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 1,000회(약 1초), 그냥 실행하면 10,000회(옵티마이저 5개에 약 10초).

출력에서 볼 것
* 같은 모델, 같은 초깃값, 같은 데이터(43단계의 sin 곡선)에서 옵티마이저만 바꿨을 때 손실의 변화.
  이 문제에서 SGD는 평평한 구간에서 오래 머물고, 모멘텀과 Adam은 훨씬 빨리 빠져나온다.
  (어느 옵티마이저가 늘 낫다는 뜻은 아니다: 학습률 같은 설정과 문제에 따라 달라진다.)
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import optimizers
from dezero_kr.models import MLP

from _common import FAST, ljust


def train(optimizer, x, y, iters, report):
    np.random.seed(1)  # 모든 옵티마이저가 같은 초깃값에서 출발하도록
    model = MLP((10, 1))
    optimizer.setup(model)
    losses = []
    for i in range(iters):
        loss = F.mean_squared_error(model(x), y)
        if i % (iters // report) == 0 or i == iters - 1:
            losses.append(float(loss.data))
        model.cleargrads()
        loss.backward()
        optimizer.update()
    return losses


if __name__ == '__main__':
    np.random.seed(0)
    x = np.random.rand(100, 1)
    y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)

    iters = 1000 if FAST else 10000
    report = 5
    steps = [i * (iters // report) for i in range(report)] + [iters - 1]
    print(ljust('옵티마이저', 28) + ''.join(f'{s:>10d}' for s in steps) + '  (반복)')
    for label, optimizer in [('SGD(lr=0.2)', optimizers.SGD(lr=0.2)),
                             ('MomentumSGD(lr=0.2)', optimizers.MomentumSGD(lr=0.2, momentum=0.9)),
                             ('AdaGrad(lr=0.2)', optimizers.AdaGrad(lr=0.2)),
                             ('RMSprop(lr=0.01)', optimizers.RMSprop(lr=0.01)),
                             ('Adam(alpha=0.05)', optimizers.Adam(alpha=0.05))]:
        losses = train(optimizer, x, y, iters, report)
        print(f'{label:<28}' + ''.join(f'{v:10.6f}' for v in losses))
