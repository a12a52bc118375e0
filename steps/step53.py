"""53단계: 모델 저장과 읽기 -- save_weights / load_weights (+ 옵티마이저 상태)

학습한 매개변수를 파일로 남겨 두면 다음에 다시 학습하지 않고 쓸 수 있다. 매개변수는 NumPy 배열이므로
np.savez 형식(.npz: 이름 붙은 배열 여러 개를 담은 zip)에 "경로 이름 -> 배열"로 저장한다.

    # 키: 'l0/W', 'l0/b', 'l1/W', 'l1/b' (named_params의 경로)
    model.save_weights('my_mlp.npz')
    model.load_weights('my_mlp.npz')    # 같은 구조의 모델에 다시 채운다

dezero_kr는 pickle을 쓰지 않는다(allow_pickle=False): 남이 준 파일을 열어도 코드가 실행되지 않는다.
저장은 임시 파일에 다 쓴 뒤 이름을 바꾸므로, 도중에 멈춰도 이전 파일이 깨지지 않는다. 키나 모양이
맞지 않으면 아무것도 바꾸지 않고 어느 키가 틀렸는지 알려 준다.

save_weights, load_weights를 이 단계에서 직접 만든다(모델을 인수로 받는 함수로). 직접 만든 것으로
저장한 파일을 패키지의 model.load_weights가 그대로 읽고, 그 반대도 되는지 확인한다.

학습을 중단했다 이어 가려면 모멘텀/Adam의 상태(v, m ...)도 필요하다: optimizer.save(...) /
optimizer.load(...)가 그것을 저장한다. 둘 다 읽으면 멈추지 않고 학습한 것과 똑같이 이어진다.

파일: 현재 폴더에 my_mlp.npz, my_optimizer.npz (그리고 비교용 step53_mine.npz, step53_package.npz)를 쓴다.
에폭: DEZERO_KR_FAST=1(테스트)이면 2+2에폭, 그냥 실행하면 5+5에폭 (Digits).

출력에서 볼 것
* 직접 만든 save_weights/load_weights와 패키지의 것이 서로의 파일을 읽는다.
* 저장된 파일 안의 키와 모양
* 새로 만든 모델에 읽어 들이면 예측이 원래 모델과 똑같다.
* 이어서 학습한 손실 == 쉬지 않고 학습한 손실
* 구조가 다른 모델(MLP((50, 10)))에 읽으려 하면 나는 오류
"""
import os
import textwrap

import numpy as np

import dezero_kr.functions as F
from dezero_kr import DataLoader, optimizers
from dezero_kr.datasets import Digits
from dezero_kr.models import MLP

from _common import FAST


def save_weights(model, path):
    """model의 매개변수를 '경로 -> 배열'로 .npz 파일 하나에 쓴다."""
    arrays = {key: param.data for key, param in model.named_params()}
    tmp = path + '.tmp.npz'
    np.savez(tmp, **arrays)
    # 다 쓴 뒤에 이름을 바꾼다: 도중에 멈춰도 이전 파일은 그대로
    os.replace(tmp, path)


def load_weights(model, path):
    """save_weights의 파일을 읽어 채운다.
    키나 모양이 하나라도 다르면 아무것도 바꾸지 않는다."""
    params = dict(model.named_params())
    # pickle을 풀지 않는다: 파일을 읽다가 코드가 실행될 일이 없다
    with np.load(path, allow_pickle=False) as npz:
        if sorted(npz.files) != sorted(params):
            raise ValueError(f'load_weights: 키가 다릅니다: '
                             f'파일 {sorted(npz.files)}, '
                             f'모델 {sorted(params)}')
        arrays = {key: npz[key] for key in npz.files}
    for key, param in params.items():  # 먼저 모두 확인하고
        if arrays[key].shape != param.data.shape:
            raise ValueError(f'load_weights: {key!r}의 모양이 '
                             f'파일에서 {arrays[key].shape}, '
                             f'모델에서 {param.data.shape}입니다')
    for key, param in params.items():  # 그다음에 바꾼다
        param.data = arrays[key].astype(param.data.dtype)


def check_against_package(model, x):
    """직접 만든 함수로 쓴 파일을 패키지가 읽고, 패키지가 쓴 파일을 직접 만든 함수가 읽는다."""
    save_weights(model, 'step53_mine.npz')
    model.save_weights('step53_package.npz')
    for path, load in (('step53_mine.npz', 'package'), ('step53_package.npz', 'mine')):
        other = MLP((100, 10), activation=F.relu)
        other(x[:1])  # 첫 forward로 W를 만든다
        if load == 'package':
            other.load_weights(path)
        else:
            load_weights(other, path)
        for (key, p), (_, q) in zip(model.named_params(), other.named_params()):
            np.testing.assert_array_equal(p.data, q.data, err_msg=key)
    print('save_weights, load_weights 확인: 패키지와 서로의 파일을 읽는다')


def train(model, optimizer, loader, epochs):
    losses = []
    for _ in range(epochs):
        sum_loss = 0.0
        for x, t in loader:
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(t)
        losses.append(round(sum_loss / len(loader.dataset), 6))
    return losses


def new_run(seed=0):
    """같은 시드의 (모델, 옵티마이저, 로더).
    로더는 자기 난수열(seed)을 가져 섞는 순서가 재현된다."""
    np.random.seed(seed)
    model = MLP((100, 10), activation=F.relu)
    optimizer = optimizers.MomentumSGD(lr=0.1).setup(model)
    loader = DataLoader(Digits(train=True), batch_size=100, seed=seed)
    return model, optimizer, loader


if __name__ == '__main__':
    epochs = 2 if FAST else 5

    model, optimizer, loader = new_run()
    first = train(model, optimizer, loader, epochs)
    print('처음', epochs, '에폭의 손실:', first)
    x_test, t_test = Digits(train=False)[:]
    check_against_package(model, x_test)
    save_weights(model, 'my_mlp.npz')
    optimizer.save('my_optimizer.npz')
    with np.load('my_mlp.npz') as f:
        print('my_mlp.npz 안:')
        print(' ', {key: f[key].shape for key in f.files})

    # 새 모델에 읽어 들이기: 구조(층의 크기)는 같아야 하고 값은 파일에서 온다
    restored = MLP((100, 10), activation=F.relu)
    restored(x_test[:1])  # 첫 forward로 W를 만든다 (그 값은 곧 파일의 값으로 바뀐다)
    load_weights(restored, 'my_mlp.npz')
    same = np.array_equal(restored(x_test).data, model(x_test).data)
    print('읽어 들인 모델의 예측이 같은가:', same,
          f'| 테스트 정확도 {float(F.accuracy(restored(x_test), t_test).data):.4f}')

    # 이어서 학습: 멈추지 않은 학습과 비교한다
    straight = train(model, optimizer, loader, epochs)
    resumed_model, resumed_optimizer, resumed_loader = new_run()
    for _ in range(epochs):  # 섞는 순서도 이어져야 한다: 저장한 시점까지 배치를 꺼내기만 하고 버린다
        for _ in resumed_loader:
            pass
    resumed_model(x_test[:1])
    load_weights(resumed_model, 'my_mlp.npz')
    resumed_optimizer.load('my_optimizer.npz')
    resumed = train(resumed_model, resumed_optimizer, resumed_loader, epochs)
    print('쉬지 않고 학습한 뒤', epochs, '에폭:', straight)
    print('저장 -> 읽고 이어서   :', resumed, '| 같은가', straight == resumed)

    try:
        other = MLP((50, 10))
        other(x_test[:1])  # 첫 forward로 W를 만든다
        load_weights(other, 'my_mlp.npz')
    except ValueError as e:
        print('\n구조가 다른 모델에 읽기 -> ValueError:')
        print(textwrap.fill(str(e), 78, initial_indent='  ', subsequent_indent='  '))
