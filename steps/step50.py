"""50단계: 미니배치를 꺼내 주는 DataLoader와 정확도

49단계의 "섞고, 잘라서, 모으는" 코드는 어느 학습에서나 같다. DataLoader가 그 일을 맡는다.

    # 에폭마다 새로 섞는다
    train_loader = DataLoader(train_set, batch_size=30)
    # 평가는 순서대로
    test_loader = DataLoader(test_set, batch_size=30, shuffle=False)
    # 한 번 돌면 한 에폭. 끝나면 스스로 처음으로 돌아간다
    for x, t in train_loader:
        ...

DataLoader를 이 단계에서 새 파일 mydezero/dataloaders.py에 직접 만든다. 에폭이 시작될 때(reset)
인덱스를 섞어 두고, next를 부를 때마다 batch_size개씩 잘라 샘플을 모은다. 데이터 수가 batch_size로
나누어떨어지지 않으면 마지막 배치는 남은 만큼만 담는다(배치 수 = ceil(데이터 수 / batch_size)). 다
내주면 StopIteration을 내고 스스로 reset한다: 그래서 for 문을 다시 돌리면 다음 에폭이 된다. 같은
시드에서 기준 패키지의 dezero_kr.DataLoader와 같은 배치를 내는지 두 에폭 동안 확인하고 학습에 쓴다.

F.accuracy(y, t)는 점수 y에서 가장 큰 클래스가 정답 t와 같은 비율이다(미분하지 않는 지표, 이
단계에서 mydezero/functions.py에 더한다). 평가할 때는 mydezero.no_grad() 안에서 forward만 한다:
역전파할 일이 없으니 그래프를 기록하지 않아 빠르고 메모리를 덜 쓴다.

그림: matplotlib이 있으면 현재 폴더에 step50_spiral_curves.png(에폭별 손실/정확도, 훈련/테스트)를 저장한다.

에폭: DEZERO_KR_FAST=1(테스트)이면 60에폭, 그냥 실행하면 책과 같은 300에폭(약 3초).

출력에서 볼 것
* 직접 만든 DataLoader == dezero_kr.DataLoader (섞을 때와 안 섞을 때, 마지막의 짧은 배치 포함)
* DataLoader가 내주는 배치의 모양과 에폭당 배치 수
* 에폭마다의 훈련/테스트 손실과 정확도: 테스트 데이터(학습에 쓰지 않은 나선)에서도 정확도가 오른다.
"""
import math

import numpy as np

import dezero_kr  # 기준 패키지
from dezero_kr.plot import plot_curves
import mydezero
import mydezero.functions as F
from mydezero import DataLoader, optimizers
from mydezero.datasets import Spiral
from mydezero.models import MLP

from _common import FAST, save_plot


def check_against_package():
    """같은 시드에서 두 에폭 동안 dezero_kr.DataLoader와 같은 배치 (300개를 32개씩: 10번째는 12개)."""
    dataset = Spiral(train=False)
    for shuffle in (True, False):
        np.random.seed(3)
        mine = DataLoader(dataset, 32, shuffle=shuffle)
        batches = [batch for _ in range(2) for batch in mine]
        np.random.seed(3)
        package = dezero_kr.DataLoader(dataset, 32, shuffle=shuffle)
        batches_pkg = [batch for _ in range(2) for batch in package]
        assert len(batches) == len(batches_pkg) == 2 * 10
        for (x, t), (x_pkg, t_pkg) in zip(batches, batches_pkg):
            np.testing.assert_array_equal(x, x_pkg)
            np.testing.assert_array_equal(t, t_pkg)
    sizes = [len(t) for _, t in batches[:10]]
    print(f'DataLoader 확인: 300개를 32개씩 -> 배치 {len(mine)}개, 마지막 배치 {sizes[-1]}개'
          '\n  섞을 때와 안 섞을 때 모두 두 에폭 동안 dezero_kr.DataLoader와 같은 배치')


def evaluate(model, loader):
    """loader 전체의 평균 손실과 정확도 (그래프를 만들지 않는다)."""
    sum_loss = sum_acc = 0.0
    with mydezero.no_grad():
        for x, t in loader:
            y = model(x)
            sum_loss += float(F.softmax_cross_entropy(y, t).data) * len(t)
            sum_acc += float(F.accuracy(y, t).data) * len(t)
    n = len(loader.dataset)
    return sum_loss / n, sum_acc / n


if __name__ == '__main__':
    check_against_package()
    max_epoch = 60 if FAST else 300
    batch_size = 30

    np.random.seed(0)  # 모델 초깃값과 DataLoader가 섞는 순서(기본은 NumPy 전역 난수)
    train_set, test_set = Spiral(train=True), Spiral(train=False)
    train_loader = DataLoader(train_set, batch_size)
    test_loader = DataLoader(test_set, batch_size, shuffle=False)
    x, t = next(iter(test_loader))
    test_loader.reset()
    print(f'배치 하나: x {x.shape} {x.dtype}, t {t.shape}; 에폭당 배치 {len(train_loader)}개')

    model = MLP((10, 3))
    optimizer = optimizers.SGD(lr=1.0).setup(model)
    history = {'train_loss': [], 'test_loss': [], 'train_acc': [], 'test_acc': []}
    print(f'{"epoch":>5}  {"train loss":>10}  {"train acc":>9}  '
          f'{"test loss":>9}  {"test acc":>8}')
    for epoch in range(max_epoch):
        sum_loss = sum_acc = 0.0
        for x, t in train_loader:
            y = model(x)
            loss = F.softmax_cross_entropy(y, t)
            acc = F.accuracy(y, t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(t)
            sum_acc += float(acc.data) * len(t)
        train_loss, train_acc = sum_loss / len(train_set), sum_acc / len(train_set)
        test_loss, test_acc = evaluate(model, test_loader)
        for key, value in zip(history, (train_loss, test_loss, train_acc, test_acc)):
            history[key].append(value)
        if (epoch + 1) % (max_epoch // 6) == 0:
            print(f'{epoch + 1:5d}  {train_loss:10.6f}  {train_acc:9.4f}  '
                  f'{test_loss:9.6f}  {test_acc:8.4f}')
    save_plot(plot_curves, history, to_file='step50_spiral_curves.png',
              figsize=(8, 3.5), dpi=90)
