"""49단계: 데이터를 담는 클래스 -- Dataset과 전처리(transform)

48단계에서는 x, t 배열을 직접 들고 다녔다. 데이터가 커지면(이미지 수만 장) 모두 메모리에 올릴 수
없고, 샘플마다 전처리도 필요하다. 그래서 데이터셋을 "인덱스를 주면 샘플 하나를 주는 객체"로
통일한다.

    dataset[i]   -> (x, t)  i번째 입력과 정답 (transform, target_transform을 거친 값)
    len(dataset) -> 샘플 개수

Dataset을 이 단계에서 mydezero/datasets.py에 직접 만든다: __init__은 전처리 함수를 받아 두고 prepare()를 부른다.
하위 클래스는 prepare()에서 self.data, self.label을 채우기만 하면 새 데이터셋이 된다(Spiral,
Squares). 데이터를 파일에 두고 __getitem__에서 그때그때 읽으면 메모리에 다 올리지 않아도 된다
(NpyFolder). 직접 만든 Spiral이 기준 패키지의 dezero_kr.datasets.Spiral과 모든 샘플이 같은지 확인하고
학습에 쓴다. 배치는 책처럼 [dataset[i] for i in 인덱스들]로 모은다(dataset[인덱스 배열]도 같은 배치를
바로 돌려준다: data[인덱스 배열]이 NumPy의 배열 인덱싱이므로). 전처리 함수 모음 mydezero/transforms.py
(Compose, Normalize, Flatten, AsType ...)도 이 단계에서 생긴다.

에폭: DEZERO_KR_FAST=1(테스트)이면 60에폭, 그냥 실행하면 300에폭(약 1초).

출력에서 볼 것
* 직접 만든 Spiral == dezero_kr.datasets.Spiral (300개 샘플 모두, transform 포함)
* Spiral 데이터셋의 길이, 샘플 하나, 전처리(transform)를 준 경우의 같은 샘플
* transforms의 Compose로 이은 전처리: Normalize + AsType, 그림 한 장을 펴서 0~1로
  (Flatten, ToFloat, Normalize)
* 한 샘플씩 모은 배치와 dataset[인덱스]로 꺼낸 배치가 같다.
* 직접 만든 데이터셋 두 개(계산으로 만든 것, 파일에서 하나씩 읽는 것)
* Dataset으로 48단계의 학습을 다시 하고 정확도를 잰다.
"""
import math
import os

import numpy as np

import dezero_kr.datasets  # 기준 패키지
import mydezero.functions as F
from mydezero import optimizers, transforms
from mydezero.datasets import Dataset, Spiral
from mydezero.models import MLP

from _common import FAST


def check_against_package():
    """직접 만든 Spiral과 dezero_kr.datasets.Spiral: 길이와 모든 샘플이 같다 (transform 포함)."""
    double = lambda x: x * 2  # noqa: E731
    for kwargs in ({}, {'transform': double}):
        mine = Spiral(train=False, **kwargs)
        package = dezero_kr.datasets.Spiral(train=False, **kwargs)
        assert len(mine) == len(package) == 300
        for i in range(len(mine)):
            (x, t), (x_pkg, t_pkg) = mine[i], package[i]
            np.testing.assert_array_equal(x, x_pkg)
            assert t == t_pkg
    print('Dataset 확인: 직접 만든 Spiral == dezero_kr.datasets.Spiral'
          '\n  (300개 샘플 모두, transform 포함)')


class Squares(Dataset):
    """x = 0, 1, ..., 9, 정답 t = x^2.
    prepare()에서 data와 label을 채우기만 하면 된다."""

    def prepare(self):
        self.data = np.arange(10, dtype=np.float32).reshape(10, 1)
        self.label = self.data[:, 0] ** 2


class NpyFolder(Dataset):
    """폴더의 0.npy, 1.npy, ...를 요청이 올 때마다 하나씩 읽는다.
    (전부를 메모리에 두지 않는다)"""

    def __init__(self, folder, size):
        self.folder, self.size = folder, size
        super().__init__()

    def __getitem__(self, index):
        x = np.load(os.path.join(self.folder, f'{index}.npy'))
        return x, int(x.sum())  # 정답은 예시로 원소의 합

    def __len__(self):
        return self.size


if __name__ == '__main__':
    check_against_package()
    train_set = Spiral(train=True)
    x, t = train_set[0]
    print(f'len(Spiral) = {len(train_set)} | '
          f'train_set[0]: x = {x} ({x.dtype}), t = {int(t)}')
    doubled = Spiral(train=True, transform=lambda x: x * 2)
    print('transform=x*2 일 때 [0]: x =', doubled[0][0])
    # 전처리 모음 transforms: 작은 변환을 Compose로 잇는다
    halved = Spiral(train=True, transform=transforms.Compose(
        [transforms.Normalize(mean=0.0, std=2.0), transforms.AsType(np.float64)]))
    x = halved[0][0]
    print('transform=Compose([Normalize(0, 2), AsType(float64)]) 일 때')
    print(f'  [0]: x = {x} ({x.dtype})')
    image = np.arange(0, 256, 16, dtype=np.uint8).reshape(1, 4, 4)  # 8비트 흑백 그림
    # DeZero의 MNIST가 기본으로 쓰는 전처리
    to_vector = transforms.Compose([transforms.Flatten(), transforms.ToFloat(),
                                    transforms.Normalize(0.0, 255.0)])
    v = to_vector(image)
    print(f'Compose([Flatten(), ToFloat(), Normalize(0, 255)]):\n  그림 {image.shape} '
          f'{image.dtype} -> {v.shape} {v.dtype}, 값 {v.min():.4f} ~ {v.max():.4f}')

    batch_index = [0, 5, 7]
    batch = [train_set[i] for i in batch_index]
    batch_x = np.array([example[0] for example in batch])
    batch_t = np.array([example[1] for example in batch])
    xs, ts = dezero_kr.datasets.Spiral(train=True)[np.array(batch_index)]
    print('한 샘플씩 모은 배치', batch_x.shape, batch_t.tolist(),
          '| dataset[인덱스] 배치', xs.shape, ts.tolist())
    print('  같은가', np.array_equal(batch_x, xs) and np.array_equal(batch_t, ts))

    squares = Squares()
    x, t = squares[3]
    print(f'\nSquares: len = {len(squares)} | [3]: x = {x}, t = {float(t)}')
    os.makedirs('npy_folder', exist_ok=True)
    for i in range(3):
        np.save(os.path.join('npy_folder', f'{i}.npy'), np.full(4, i))
    files = NpyFolder('npy_folder', 3)
    x, t = files[2]
    print(f'NpyFolder: len = {len(files)} | [2]: x = {x}, t = {t}')

    max_epoch = 60 if FAST else 300
    batch_size = 30
    np.random.seed(0)
    model = MLP((10, 3))
    optimizer = optimizers.SGD(lr=1.0).setup(model)
    data_size = len(train_set)
    max_iter = math.ceil(data_size / batch_size)
    print()
    for epoch in range(max_epoch):
        index = np.random.permutation(data_size)
        sum_loss = 0.0
        for i in range(max_iter):
            batch = [train_set[j] for j in index[i * batch_size:(i + 1) * batch_size]]
            batch_x = np.array([example[0] for example in batch])
            batch_t = np.array([example[1] for example in batch])
            loss = F.softmax_cross_entropy(model(batch_x), batch_t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(batch_t)
        if (epoch + 1) % (max_epoch // 5) == 0:
            print(f'epoch {epoch + 1:3d}: 평균 손실 {sum_loss / data_size:.6f}')
    xs, ts = train_set[:]
    accuracy = (model(xs).data.argmax(axis=1) == ts).mean()  # F.accuracy는 50단계에서
    print(f'훈련 데이터 정확도: {float(accuracy):.4f}')
