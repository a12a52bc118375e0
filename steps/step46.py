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

optimizer.add_hook(훅)으로 갱신 전에 기울기를 손보는 일도 끼울 수 있다. 훅은 매개변수 목록을 받는 함수다.

    WeightDecay(rate)      g <- g + rate p    (가중치 감쇠: 손실에 rate/2 * sum(p^2)를 더한 것과
                                              같은 한 걸음)
    FreezeParam(층, ...)   그 층의 기울기를 지워 갱신하지 않는다 (매개변수 고정)
    (전역 노름 기울기 클리핑은 61단계에서 기준 패키지의 ClipGradNorm으로 다룬다)

Optimizer와 다섯 가지 규칙은 이 단계에서 새 파일 mydezero/optimizers.py에 직접 만든다. Optimizer는
"기울기가 있는 매개변수를 모아 훅을 부르고, 하나씩 update_one"하는 틀만 가지고, 규칙은 하위 클래스의
update_one이 정한다. MomentumSGD는 매개변수마다 속도 v를 하나씩 기억한다(처음에는 0, id(param)이
열쇠). AdaGrad, RMSprop, Adam도 같은 틀에 update_one만 다르다. 다섯을 기준 패키지 dezero_kr.optimizers의
같은 이름과 같은 모델, 같은 데이터로 20번 갱신해 매개변수가 같은지 본다(SGD, MomentumSGD는 비트까지).

그림: matplotlib이 있으면 현재 폴더에 step46_optimizers.png(옵티마이저별 손실 곡선)를 저장한다.

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 1,000회(약 1초), 그냥 실행하면 10,000회(옵티마이저 5개에 약 10초).

출력에서 볼 것
* 직접 만든 SGD, MomentumSGD, AdaGrad, RMSprop, Adam이 dezero_kr와 같은 매개변수를 만든다.
* 훅: WeightDecay를 단 한 걸음이 손실에 벌점 항을 더한 한 걸음과 같다(utils.array_allclose로 비교).
  FreezeParam으로 고정한 층은 그대로다.
* 같은 모델, 같은 초깃값, 같은 데이터(43단계의 sin 곡선)에서 옵티마이저만 바꿨을 때 손실의 변화.
  이 문제에서 SGD는 평평한 구간에서 오래 머물고, 모멘텀과 Adam은 훨씬 빨리 빠져나온다.
  (어느 옵티마이저가 늘 낫다는 뜻은 아니다: 학습률 같은 설정과 문제에 따라 달라진다.)
"""
import numpy as np

import dezero_kr.models
from dezero_kr import optimizers as reference_optimizers  # 기준 패키지
import mydezero
import mydezero.models
from mydezero import optimizers
from mydezero.utils import array_allclose

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
    """직접 만든 옵티마이저 다섯과 dezero_kr의 것으로 20번 갱신한 매개변수가 같다."""
    for name, kwargs in [('SGD', {'lr': 0.2}), ('MomentumSGD', {'lr': 0.2}),
                         ('AdaGrad', {'lr': 0.2}), ('RMSprop', {'lr': 0.01}),
                         ('Adam', {'alpha': 0.05})]:
        _, a = train(getattr(optimizers, name)(**kwargs), x, y, 20)
        _, b = train(getattr(reference_optimizers, name)(**kwargs), x, y, 20,
                     package=dezero_kr)
        for p, q in zip(a.params(), b.params()):
            if name in ('SGD', 'MomentumSGD'):
                np.testing.assert_array_equal(p.data, q.data)
            else:  # 나눗셈과 제곱근의 순서에 따라 float32의 끝자리가 다를 수 있다
                np.testing.assert_allclose(p.data, q.data, rtol=1e-5, atol=1e-6)
    print('SGD, MomentumSGD, AdaGrad, RMSprop, Adam 확인:'
          '\n  20번 갱신한 매개변수가 dezero_kr.optimizers와 같다\n')


def one_step(x, y, hook=None, penalty=0.0):
    """MLP((10, 1))을 SGD(lr=0.2)로 한 걸음. 손실 = MSE + penalty / 2 * sum(p^2). 모델을 돌려준다."""
    np.random.seed(1)
    model = mydezero.models.MLP((10, 1))
    optimizer = optimizers.SGD(lr=0.2).setup(model)
    if hook is not None:
        optimizer.add_hook(hook(model))
    loss = mydezero.functions.mean_squared_error(model(x), y)
    for p in model.params():
        loss = loss + penalty / 2 * mydezero.functions.sum(p ** 2)
    model.cleargrads()
    loss.backward()
    optimizer.update()
    return model


def check_hooks(x, y):
    """WeightDecay 훅 == 손실의 벌점 항, FreezeParam으로 고정한 층은 그대로."""
    rate = 0.1
    hooked = one_step(x, y, hook=lambda model: optimizers.WeightDecay(rate))
    penalized = one_step(x, y, penalty=rate)
    assert all(array_allclose(p.data, q.data)
               for p, q in zip(hooked.params(), penalized.params()))
    print(f'훅 확인 (optimizer.add_hook):\n  WeightDecay({rate})의 한 걸음 == 손실에 '
          f'{rate}/2 * sum(p^2)를 더한 한 걸음\n  (utils.array_allclose로 비교)')
    np.random.seed(1)  # one_step과 같은 초깃값 (매개변수는 첫 입력에서 만들어진다)
    model = mydezero.models.MLP((10, 1))
    model(x)
    start = {name: [p.data.copy() for p in getattr(model, name).params()]
             for name in ('l0', 'l1')}
    frozen = one_step(x, y, hook=lambda model: optimizers.FreezeParam(model.l0))
    for name, before in start.items():
        after = getattr(frozen, name).params()
        same = all(np.array_equal(a, p.data) for a, p in zip(before, after))
        assert same == (name == 'l0'), name  # l0만 그대로, l1은 갱신된다
    print('  FreezeParam(model.l0): 한 걸음 뒤 l0의 W, b는 그대로, l1만 바뀐다\n')


if __name__ == '__main__':
    np.random.seed(0)
    x = np.random.rand(100, 1)
    y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
    check_against_package(x, y)
    check_hooks(x, y)

    iters = 1000 if FAST else 10000
    report = 5
    steps = [i * (iters // report) for i in range(report)] + [iters - 1]
    print(ljust('옵티마이저 / 반복', 20) + ''.join(f'{s:>9d}' for s in steps))
    curves = {}
    for label, optimizer in [('SGD(lr=0.2)', optimizers.SGD(lr=0.2)),
                             ('MomentumSGD(lr=0.2)',
                              optimizers.MomentumSGD(lr=0.2, momentum=0.9)),
                             ('AdaGrad(lr=0.2)', optimizers.AdaGrad(lr=0.2)),
                             ('RMSprop(lr=0.01)', optimizers.RMSprop(lr=0.01)),
                             ('Adam(alpha=0.05)', optimizers.Adam(alpha=0.05))]:
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
