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

Optimizer와 두 가지 규칙은 이 단계에서 새 파일 mydezero/optimizers.py에 직접 만든다. Optimizer는
"기울기가 있는 매개변수를 모아 훅을 부르고, 하나씩 update_one"하는 틀만 가지고, 규칙은 하위 클래스의
update_one이 정한다. MomentumSGD는 매개변수마다 속도 v를 하나씩 기억한다(처음에는 0: zeros_like,
id(param)이 열쇠). 둘을 기준 패키지 dezero_kr.optimizers의 같은 이름과 같은 모델, 같은 데이터로 20번
갱신해 매개변수가 비트까지 같은지 본다.

같은 틀에 update_one만 다른 규칙(AdaGrad, RMSprop, Adam)은 그것을 처음 쓰는 54단계에서 더한다.
optimizer.add_hook(훅)으로 갱신 전에 기울기를 손보는 자리도 이 단계의 update에 있다(훅은 매개변수 목록을
받는 함수): 가중치 감쇠 WeightDecay는 54단계, 층을 고정하는 FreezeParam은 58단계에서 만든다.

그림: matplotlib이 있으면 현재 폴더에 step46_optimizers.png(옵티마이저별 손실 곡선)를 저장한다.

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 1,000회(약 1초), 그냥 실행하면 10,000회(옵티마이저 2개에 약 4초).

출력에서 볼 것
* 직접 만든 SGD, MomentumSGD가 dezero_kr와 같은 매개변수를 만든다(비트까지).
* 같은 모델, 같은 초깃값, 같은 데이터(43단계의 sin 곡선)에서 옵티마이저만 바꿨을 때 손실의 변화.
  이 문제에서 SGD는 평평한 구간에서 오래 머물고, 모멘텀은 훨씬 빨리 빠져나온다.
  (어느 옵티마이저가 늘 낫다는 뜻은 아니다: 학습률 같은 설정과 문제에 따라 달라진다.)
"""
import numpy as np

import dezero_kr.models
from dezero_kr import optimizers as reference_optimizers  # 기준 패키지
import mydezero
import mydezero.models
from mydezero import optimizers

from _common import FAST, ljust, save_figure


def train(optimizer, x, y, iters, package=mydezero):
    """같은 초깃값의 MLP((10, 1))을 optimizer로 iters번 갱신한다.
    (매 반복의 손실, 모델)을 돌려준다.
    package: mydezero 또는 기준 패키지 dezero_kr."""
    np.random.seed(1)  # 모든 옵티마이저가 같은 초깃값에서 출발하도록
    model = package.models.MLP((10, 1))
    optimizer.setup(model)
    losses = []
    for i in range(iters):
        loss = package.functions.mean_squared_error(model(x), y)
        losses.append(float(loss.data))
        model.cleargrads()
        loss.backward()
        optimizer.update()
    return losses, model


def check_against_package(x, y):
    """직접 만든 SGD, MomentumSGD와 dezero_kr의 것으로 20번 갱신한 매개변수가 비트까지 같다."""
    for name in ('SGD', 'MomentumSGD'):
        _, a = train(getattr(optimizers, name)(lr=0.2), x, y, 20)
        _, b = train(getattr(reference_optimizers, name)(lr=0.2), x, y, 20,
                     package=dezero_kr)
        for p, q in zip(a.params(), b.params()):
            np.testing.assert_array_equal(p.data, q.data)
    print('SGD, MomentumSGD 확인:'
          '\n  20번 갱신한 매개변수가 dezero_kr.optimizers와 (비트까지) 같다\n')


if __name__ == '__main__':
    np.random.seed(0)
    x = np.random.rand(100, 1)
    y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
    check_against_package(x, y)

    iters = 1000 if FAST else 10000
    report = 5
    steps = [i * (iters // report) for i in range(report)] + [iters - 1]
    print(ljust('옵티마이저 / 반복', 20) + ''.join(f'{s:>9d}' for s in steps))
    curves = {}
    for label, optimizer in [('SGD(lr=0.2)', optimizers.SGD(lr=0.2)),
                             ('MomentumSGD(lr=0.2)',
                              optimizers.MomentumSGD(lr=0.2, momentum=0.9))]:
        losses, _ = train(optimizer, x, y, iters)
        curves[label] = losses
        print(f'{label:<20}' + ''.join(f'{losses[s]:9.6f}' for s in steps))

    def draw(ax):
        for label, losses in curves.items():
            ax.plot(losses, label=label)
        ax.set_xlabel('iteration')
        ax.set_ylabel('loss')
        ax.set_ylim(0, 0.6)  # 첫 몇 번의 큰 손실은 잘라 낸다
        ax.legend(loc='upper right', fontsize='small')
    save_figure(draw, 'step46_optimizers.png')
