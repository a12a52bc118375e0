"""58단계: 대표적인 CNN -- VGG16

VGG16(2014)은 3x3 합성곱만 쌓은 단순한 구조로 유명하다: 합성곱 13개를 5개 블록으로 나누고, 블록
끝마다 2x2 최대 풀링으로 크기를 절반으로 줄이며 채널은 64 -> 128 -> 256 -> 512 -> 512로 늘린다.
그 뒤 완전연결층 3개(4096, 4096, 1000)가 1,000개 클래스(ImageNet)의 점수를 낸다. 활성화는 ReLU,
완전연결층 사이에는 드롭아웃.

    import mydezero.models
    model = VGG16()                    # 무작위 초깃값 (내려받을 것 없음)
    # 기준 패키지에는 ImageNet으로 학습된 가중치도 있다 (약 528 MB, 처음 한 번 내려받는다)
    model = dezero_kr.models.VGG16(pretrained=True)

학습된 가중치: dezero_kr.models.VGG16(pretrained=True)는 DeZero가 공개한 vgg16.npz를 캐시 폴더
(dezero_kr.download.cache_dir(), 기본 ~/.dezero_kr)로 내려받아 읽는다. 인터넷이 없는 곳에서는
다른 컴퓨터에서 받은 vgg16.npz를 그 폴더에 두면 된다(오류 메시지가 주소와 위치를 알려 준다).
입력은 VGG16.preprocess(PIL 이미지)로 224x224, BGR 순서, 채널 평균을 뺀 (3, 224, 224) 배열로 만든다.
이 단계는 가중치 없이 구조만 살핀다. 구조는 mydezero/models.py에 직접 만든다: 57단계에서 만든
L.Conv2d 13개와 L.Linear 3개를 속성으로 가진 Model이고(층 이름은 학습된 가중치 파일의 키와 같은
conv1_1 ... fc8), forward는 위 설명을 그대로 옮긴 것이다(합성곱은 57단계의 F.conv2d, 풀링은 아래의
F.pooling). 같은 시드로 만든 dezero_kr.models.VGG16과 출력, 매개변수가 같은지 확인한다.

블록 끝의 최대 풀링 F.pooling(x, kernel_size, stride, pad)도 이 단계에서 mydezero/functions_conv.py에
직접 만든다(창은 56단계의 im2col로 펼치고, 창의 최댓값은 55단계의 F.max).
* pooling_simple: im2col로 펼친 (N*OH*OW*C, KH*KW)의 행마다 col.max(axis=1). 이를 위해 Variable에
  max, min 메서드를 mydezero/core.py에 더한다(F.max, F.min을 부른다). 역전파는 조립한 함수들이 한다.
* Pooling: 순전파에서 창마다 최댓값의 자리(argmax)를 기억해 두고, 역전파(Pooling2DGrad)는 gy를 그
  자리에만 놓은 col을 col2im으로 되돌린다. 그 역전파(Pooling2DWithIndexes)는 기억한 자리의 값을
  꺼낸다(그래서 2차 미분도 된다). 기준 패키지의 F.pooling과 값, 기울기를 맞춰 본다.

학습된 가중치는 다른 문제에도 쓴다(전이 학습): 합성곱 블록은 이미 배운 특징 추출기로 그대로 두고,
새 클래스 수에 맞춘 마지막 층만 학습한다. 그때 쓰는 것이 46단계의 optimizer.add_hook에 다는 훅
FreezeParam(층 또는 매개변수, ...)이다. 이 단계에서 mydezero/optimizers.py에 직접 만든다: 고정할 층의
매개변수를 기억해 두었다가, 갱신 직전에 그 기울기를 지운다(p.grad = None). Optimizer.update는 기울기가
지워진 매개변수를 건너뛴다. 여기서는 VGG16 대신 같은 모양의 작은 CNN(합성곱 하나 + 완전연결층
하나)으로 한 걸음 갱신해 본다: 고정한 합성곱은 그대로, 완전연결층만 바뀌고, 바뀐 값이 같은 시드의
dezero_kr.optimizers.FreezeParam과 같다.

입력 크기: DEZERO_KR_FAST=1(테스트)이면 32x32 이미지 하나로 forward (1초 안쪽). 그냥 실행하면 학습된
가중치와 같은 224x224로 forward하고 매개변수 개수가 1억 3,835만 7,544개가 된다(약 20초, 비교할 모델까지
메모리 약 2 GB).
fc6의 입력 크기는 첫 입력에서 정해진다: 32x32면 512 x 1 x 1, 224x224면 512 x 7 x 7 = 25,088.

출력에서 볼 것
* 직접 만든 pooling == 기준 패키지의 F.pooling (값과 기울기), 수치 미분과 일치
* 4x4 이미지의 2x2 최대 풀링 값과 기울기(최댓값 자리에만 1), pooling == pooling_simple
* 블록마다 합성곱/풀링 뒤 출력 모양이 절반씩 줄어드는 모습
* 층별 매개변수 개수와 합계: 대부분이 fc6에 몰려 있다(224x224일 때 약 74%).
* 직접 만든 VGG16과 dezero_kr.models.VGG16의 출력, 매개변수가 같다 (test_mode: 드롭아웃을 끈다).
  (합성곱을 계산하는 순서가 달라 float32의 끝자리는 다를 수 있다: 출력은 상대 오차 1e-5 안에서 비교)
* FreezeParam: 한 걸음 뒤 고정한 합성곱의 W, b는 그대로, 완전연결층만 바뀐다(dezero_kr와 같게).
"""
import numpy as np

import dezero_kr  # 기준 패키지
import dezero_kr.layers
import dezero_kr.models
import dezero_kr.optimizers
import mydezero
import mydezero.functions as F
import mydezero.layers
import mydezero.models
import mydezero.optimizers

from _common import FAST, gradient_check


def _value_and_grads(f, x, package):
    """f(x)의 값과, sum(y^2)를 역전파한 x의 기울기 (package: mydezero 또는 dezero_kr)."""
    v = package.Variable(x)
    y = f(v)
    package.functions.sum(y * y).backward()
    return y.data, v.grad.data


def check_pooling():
    x = np.random.default_rng(2).standard_normal((2, 3, 7, 7))
    for K, S in ((2, 2), (3, 2), (3, 1)):
        mine = _value_and_grads(lambda v: F.pooling(v, K, S), x, mydezero)
        ref = _value_and_grads(lambda v: dezero_kr.functions.pooling(v, K, S), x,
                               dezero_kr)
        for a, r in zip(mine, ref):
            np.testing.assert_array_equal(a, r)
    assert gradient_check(lambda v: F.pooling(v, 3, 2), x)
    print('pooling 확인: 설정 세 가지에서 F.pooling과 값과 기울기가 같고 수치 미분과 일치')


def show_pooling():
    img = mydezero.Variable(np.array([[[[1.0, 2.0, 5.0, 0.0],
                                         [3.0, 4.0, 1.0, 2.0],
                                         [0.0, 1.0, 7.0, 8.0],
                                         [2.0, 6.0, 9.0, 3.0]]]]))
    y = F.pooling(img, kernel_size=2, stride=2)
    y.backward()
    grad = img.grad.data
    print('4x4 이미지의 2x2 최대 풀링: y =', y.data[0, 0].tolist())
    print('  x.grad (최댓값 자리에만 1):\n', grad[0, 0], sep='')
    img.cleargrad()
    y_simple = F.pooling_simple(img, kernel_size=2, stride=2)
    y_simple.backward()
    print('pooling == pooling_simple (im2col + x.max):',
          np.array_equal(y_simple.data, y.data),
          '| 기울기도 같은가:', np.array_equal(img.grad.data, grad))
    # 행 하나 = 창 하나
    col = F.im2col(img, kernel_size=2, stride=2).reshape(-1, 4)
    print('창마다 x.max(axis=1):', col.max(axis=1).data.tolist(),
          '| x.min(axis=1):', col.min(axis=1).data.tolist())


def show_shapes(model, x):
    """model.forward와 같은 계산을 블록마다 출력 모양을 찍으며 한다 (드롭아웃은 test_mode에서 끈다)."""
    for b, (_, n) in enumerate(model.BLOCKS, start=1):
        for i in range(1, n + 1):
            x = F.relu(getattr(model, f'conv{b}_{i}')(x))
        x = F.pooling(x, kernel_size=2, stride=2)  # 크기를 절반으로
        print(f'  블록 {b}: 합성곱 {n}개 + 풀링 -> {x.shape}')
    x = F.reshape(x, (x.shape[0], -1))
    print(f'  펼치기 -> {x.shape}')
    x = model.fc8(F.relu(model.fc7(F.relu(model.fc6(x)))))
    print(f'  fc6, fc7, fc8 -> {x.shape}')
    return x


def build_and_run(package, size):
    """시드 0으로 모델과 입력을 만들고 (드롭아웃 없이, 그래프 없이) forward한다."""
    np.random.seed(0)
    model = package.models.VGG16()
    x = np.random.rand(1, 3, size, size).astype(np.float32)
    with package.test_mode(), package.no_grad():
        y = show_shapes(model, x) if package is mydezero else model(x)
        if package is mydezero:
            np.testing.assert_array_equal(model(x).data, y.data)  # forward와 같은 계산
    return model, x, y


def freeze_step(package):
    """작은 CNN을 합성곱을 고정한 채 SGD로 한 걸음. (갱신 전, 갱신 뒤의 {층: [W, b]})."""
    L = package.layers
    np.random.seed(0)
    model = package.Model()
    model.conv = L.Conv2d(4, kernel_size=3, pad=1)  # 학습된 특징 추출기라고 친다
    model.fc = L.Linear(3)                          # 새 문제의 클래스 3개
    x = np.random.rand(2, 1, 6, 6).astype(np.float32)
    t = np.array([0, 2])

    def forward(x):
        h = package.functions.relu(model.conv(x))
        return model.fc(package.functions.reshape(h, (len(x), -1)))

    loss = package.functions.softmax_cross_entropy(forward(x), t)  # 매개변수가 생긴다
    before = {name: [p.data.copy() for p in getattr(model, name).params()]
              for name in ('conv', 'fc')}
    optimizer = package.optimizers.SGD(lr=0.5).setup(model)
    optimizer.add_hook(package.optimizers.FreezeParam(model.conv))
    model.cleargrads()
    loss.backward()
    optimizer.update()
    after = {name: [p.data for p in getattr(model, name).params()]
             for name in ('conv', 'fc')}
    return before, after


def check_freeze():
    before, after = freeze_step(mydezero)
    _, reference = freeze_step(dezero_kr)
    for name in ('conv', 'fc'):
        same = all(np.array_equal(a, b) for a, b in zip(before[name], after[name]))
        assert same == (name == 'conv'), name  # conv만 그대로, fc는 갱신된다
        for a, b in zip(after[name], reference[name]):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    change = max(float(np.abs(a - b).max()) for a, b in zip(before['fc'], after['fc']))
    print('\nFreezeParam(model.conv) 확인: SGD 한 걸음 뒤 conv의 W, b는 그대로,'
          f'\n  fc만 바뀐다(가장 크게 바뀐 원소 {change:.4f}), dezero_kr의 FreezeParam과 같다')


if __name__ == '__main__':
    check_pooling()
    show_pooling()
    size = 32 if FAST else 224
    print(f'\n입력 (1, 3, {size}, {size})')
    model, x, y = build_and_run(mydezero, size)
    package, x_pkg, y_pkg = build_and_run(dezero_kr, size)
    np.testing.assert_array_equal(x, x_pkg)
    np.testing.assert_allclose(y.data, y_pkg.data, rtol=1e-5, atol=1e-6)
    named, named_pkg = list(model.named_params()), list(package.named_params())
    assert [k for k, _ in named] == [k for k, _ in named_pkg]
    for (key, p), (_, q) in zip(named, named_pkg):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)
    del package  # 메모리를 돌려준다 (224x224면 매개변수만 약 0.5 GB)
    print(f'VGG16 확인: dezero_kr.models.VGG16과 출력, 매개변수 {len(named)}개'
          '(경로와 값)가 같다')

    print('\n층별 매개변수 (W와 b):')
    total = sum(p.size for p in model.params())
    for name, layer in vars(model).items():
        if hasattr(layer, 'W'):
            count = layer.W.size + layer.b.size
            print(f'  {name:<8} W {str(layer.W.shape):<20} {count:>12,d}'
                  f'  ({count / total:6.2%})')
    print(f'  합계 {total:,d}')
    print(f'\n점수 {y.shape} {y.dtype}, 모두 유한한 값: {bool(np.isfinite(y.data).all())}'
          '\n(무작위 가중치라 어느 클래스가 큰지는 의미가 없다)')
    check_freeze()
