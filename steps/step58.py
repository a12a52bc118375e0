"""58단계: 대표적인 CNN -- VGG16

VGG16(2014)은 3x3 합성곱만 쌓은 단순한 구조로 유명하다: 합성곱 13개를 5개 블록으로 나누고, 블록
끝마다 2x2 최대 풀링으로 크기를 절반으로 줄이며 채널은 64 -> 128 -> 256 -> 512 -> 512로 늘린다.
그 뒤 완전연결층 3개(4096, 4096, 1000)가 1,000개 클래스(ImageNet)의 점수를 낸다. 활성화는 ReLU,
완전연결층 사이에는 드롭아웃.

    from dezero_kr.models import VGG16
    model = VGG16()                    # 무작위 초깃값 (내려받을 것 없음)
    model = VGG16(pretrained=True)     # ImageNet으로 학습된 가중치 (약 528 MB, 처음 한 번 내려받는다)

학습된 가중치: VGG16(pretrained=True)는 DeZero가 공개한 vgg16.npz를 캐시 폴더
(dezero_kr.download.cache_dir(), 기본 ~/.dezero_kr)로 내려받아 읽는다. 인터넷이 없는 곳에서는
다른 컴퓨터에서 받은 vgg16.npz를 그 폴더에 두면 된다(오류 메시지가 주소와 위치를 알려 준다).
입력은 VGG16.preprocess(PIL 이미지)로 224x224, BGR 순서, 채널 평균을 뺀 (3, 224, 224) 배열로 만든다.
이 단계는 가중치 없이 구조만 살핀다.

입력 크기: DEZERO_KR_FAST=1(테스트)이면 32x32 이미지 하나로 forward (1초 안쪽). 그냥 실행하면 학습된
가중치와 같은 224x224로 forward하고 매개변수 개수가 1억 3,835만 7,544개가 된다(약 10초, 메모리 약 1 GB).
fc6의 입력 크기는 첫 입력에서 정해진다: 32x32면 512 x 1 x 1, 224x224면 512 x 7 x 7 = 25,088.

출력에서 볼 것
* 블록마다 합성곱/풀링 뒤 출력 모양이 절반씩 줄어드는 모습
* 층별 매개변수 개수와 합계: 대부분이 fc6에 몰려 있다(224x224일 때 약 74%).
* 층을 하나씩 부른 결과와 model(x)가 같다 (test_mode: 드롭아웃을 끈다).
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as F
from dezero_kr.models import VGG16

from _common import FAST

BLOCKS = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))  # (채널, 합성곱 개수)


def forward_verbose(model, x):
    """VGG16.forward를 풀어 쓴 것: 층마다 출력 모양을 찍는다."""
    for b, (_, n) in enumerate(BLOCKS, start=1):
        for i in range(1, n + 1):
            x = F.relu(getattr(model, f'conv{b}_{i}')(x))
        x = F.pooling(x, kernel_size=2, stride=2)
        print(f'  블록 {b}: 합성곱 {n}개 + 풀링 -> {x.shape}')
    x = F.reshape(x, (x.shape[0], -1))
    print(f'  펼치기 -> {x.shape}')
    x = F.dropout(F.relu(model.fc6(x)))
    x = F.dropout(F.relu(model.fc7(x)))
    x = model.fc8(x)
    print(f'  fc6, fc7, fc8 -> {x.shape}')
    return x


if __name__ == '__main__':
    size = 32 if FAST else 224
    np.random.seed(0)
    model = VGG16()
    x = np.random.rand(1, 3, size, size).astype(np.float32)

    print(f'입력 {x.shape}')
    with dezero_kr.test_mode(), dezero_kr.no_grad():
        y_verbose = forward_verbose(model, x)
        y = model(x)
    print('층을 하나씩 부른 결과 == model(x):', np.allclose(y.data, y_verbose.data))

    print('\n층별 매개변수 (W와 b):')
    total = sum(p.size for p in model.params())
    for name, layer in vars(model).items():
        if hasattr(layer, 'W'):
            count = layer.W.size + layer.b.size
            print(f'  {name:<8} W {str(layer.W.shape):<20} {count:>12,d}  ({count / total:6.2%})')
    print(f'  합계 {total:,d}')
    print(f'\n점수 {y.shape} {y.dtype}, 모두 유한한 값: {bool(np.isfinite(y.data).all())}'
          '\n(무작위 가중치라 어느 클래스가 큰지는 의미가 없다)')
