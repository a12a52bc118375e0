"""51단계: 손글씨 숫자 분류 -- 인터넷 없이 되는 8x8 Digits, 파일이 있으면 MNIST

책은 MNIST(28x28 손글씨 숫자 7만 장)를 내려받아 학습한다. 이 단계는 기본으로 저장소에 들어 있는
8x8 손글씨 숫자 1,797장(훈련 1,500장, 테스트 297장)을 mydezero.datasets.Digits로 읽는다(파일은
dezero_kr/data/digits.csv.gz: 패키지를 import하지 않고 파일만 읽는다). 내려받을 것이 없어 어디서나 바로
돌아가고 몇 초면 끝난다. 코드는 MNIST와 똑같다: 데이터셋 클래스만 바뀐다. 활성화 함수 ReLU도 이
단계에서 mydezero/functions.py에 더한다.

    python steps/step51.py            Digits (기본)
    python steps/step51.py --mnist    MNIST. 파일 네 개가 이미 캐시 폴더
                                      (dezero_kr.download.cache_dir(),
                                      기본 ~/.dezero_kr)에 있을 때만 쓴다. 없으면 받는 방법을 알려 주고
                                      Digits로 진행한다. (받기: python -c "import dezero_kr;
                                      dezero_kr.datasets.MNIST()" 가 인터넷이 될 때 한 번 내려받는다.
                                      MNIST 데이터만 기준 패키지에서 빌리고, 모델과 학습은 mydezero다.)

모델은 MLP((100, 10), activation=F.relu): 64 -> 100 -> 10. 활성화 함수 ReLU(max(0, x))는 양수
구간의 기울기가 1이라 층이 깊어도 기울기가 덜 줄어든다. 최적화는 MomentumSGD(lr=0.1): 작은
데이터에서도 몇 에폭 만에 수렴한다.

에폭: DEZERO_KR_FAST=1(테스트)이면 5에폭, 그냥 실행하면 20에폭(Digits 약 1초, MNIST 약 1분).

출력에서 볼 것
* 숫자 이미지 하나를 글자로 그린 것과 데이터의 모양
* 에폭마다의 훈련 손실/정확도와 테스트 정확도: Digits에서 테스트 정확도 약 0.9 이상
"""
import os
import sys

import numpy as np

import dezero_kr.datasets  # 기준 패키지: Digits 비교와, 파일이 있을 때의 MNIST
from dezero_kr.datasets import MNIST
from dezero_kr.download import cache_dir
import mydezero
import mydezero.functions as F
from mydezero import DataLoader, optimizers
from mydezero.datasets import Digits
from mydezero.models import MLP

from _common import FAST


def mnist_files_present():
    names = [name for pair in MNIST.files.values() for name in pair]
    return all(os.path.exists(os.path.join(cache_dir(), name)) for name in names)


def load_datasets(want_mnist):
    if want_mnist:
        if mnist_files_present():
            return MNIST(train=True), MNIST(train=False), 'MNIST'
        print(f'[MNIST 없음] {cache_dir()} 에 MNIST 파일이 없어 Digits를 씁니다.', file=sys.stderr)
    train_set, test_set = Digits(train=True), Digits(train=False)
    for mine, ref in ((train_set, dezero_kr.datasets.Digits(train=True)),
                      (test_set, dezero_kr.datasets.Digits(train=False))):
        assert np.array_equal(mine.data, ref.data)
        assert np.array_equal(mine.label, ref.label)
    return train_set, test_set, 'Digits'


def ascii_image(x, side):
    """밝기를 ' .:-=+*#%@' 열 단계 글자로 (0~1 값)."""
    shades = ' .:-=+*#%@'
    rows = x.reshape(side, side)
    return '\n'.join(''.join(shades[min(int(v * 10), 9)] * 2 for v in row)
                     for row in rows)


if __name__ == '__main__':
    train_set, test_set, name = load_datasets('--mnist' in sys.argv[1:])
    x, t = train_set[0]
    side = int(np.sqrt(x.size))
    print(f'{name}: 훈련 {len(train_set)}장, 테스트 {len(test_set)}장, '
          f'입력 {x.shape} {x.dtype}, 첫 정답 {int(t)}')
    print(ascii_image(x, side))

    max_epoch = 5 if FAST else 20
    batch_size = 100
    np.random.seed(0)
    train_loader = DataLoader(train_set, batch_size)
    test_loader = DataLoader(test_set, batch_size, shuffle=False)
    model = MLP((100, 10), activation=F.relu)
    optimizer = optimizers.MomentumSGD(lr=0.1).setup(model)

    for epoch in range(max_epoch):
        sum_loss = sum_acc = 0.0
        for x, t in train_loader:
            y = model(x)
            loss = F.softmax_cross_entropy(y, t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(t)
            sum_acc += float(F.accuracy(y, t).data) * len(t)

        test_acc = 0.0
        with mydezero.no_grad():
            for x, t in test_loader:
                test_acc += float(F.accuracy(model(x), t).data) * len(t)
        print(f'epoch {epoch + 1:2d}: 훈련 손실 {sum_loss / len(train_set):.4f}, '
              f'훈련 정확도 {sum_acc / len(train_set):.4f}, '
              f'테스트 정확도 {test_acc / len(test_set):.4f}')
