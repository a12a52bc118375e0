"""53단계: 모델 저장과 읽기 -- save_weights / load_weights (+ 옵티마이저 상태)

학습한 매개변수를 파일로 남겨 두면 다음에 다시 학습하지 않고 쓸 수 있다. 매개변수는 NumPy 배열이므로
np.savez 형식(.npz: 이름 붙은 배열 여러 개를 담은 zip)에 "경로 이름 -> 배열"로 저장한다.

    # 키: 'l0/W', 'l0/b', 'l1/W', 'l1/b' (Layer._flatten_params가 만드는 경로)
    model.save_weights('my_mlp.npz')
    model.load_weights('my_mlp.npz')    # 같은 구조의 모델에 다시 채운다

save_weights, load_weights를 이 단계에서 mydezero/layers.py의 Layer에 직접 만든다. pickle을 쓰지
않는다(allow_pickle=False): 남이 준 파일을 열어도 코드가 실행되지 않는다. 저장은 임시 파일에 다 쓴 뒤
이름을 바꾸므로, 도중에 멈춰도 이전 파일이 깨지지 않는다. 키나 모양이 맞지 않으면 아무것도 바꾸지
않고 어느 키가 틀렸는지 알려 준다. mydezero로 저장한 파일을 기준 패키지 dezero_kr의 모델이 그대로 읽고,
그 반대도 되는지 확인한다.

학습을 중단했다 이어 가려면 매개변수만으로는 모자라다. 모멘텀의 속도 v(옵티마이저의 상태), 로더가
다음 에폭에 쓸 순서, 그 뒤의 에폭을 섞을 난수의 상태도 필요하다. 이 단계의 save_state/load_state가
이것들을 함께 저장한다
(옵티마이저의 상태는 id(param)이 열쇠라 파일에는 매개변수의 경로로 바꿔 쓴다). 다 읽으면 멈추지 않고
학습한 것과 똑같이 이어진다.

파일: 현재 폴더에 my_mlp.npz, my_optimizer.npz (그리고 비교용 step53_mine.npz, step53_package.npz)를
쓴다. 에폭: DEZERO_KR_FAST=1(테스트)이면 2+2에폭, 그냥 실행하면 5+5에폭 (Digits).

출력에서 볼 것
* mydezero의 save_weights/load_weights와 dezero_kr의 것이 서로의 파일을 읽는다.
* 저장된 파일 안의 키와 모양
* 새로 만든 모델에 읽어 들이면 예측이 원래 모델과 똑같다.
* 이어서 학습한 손실 == 쉬지 않고 학습한 손실
* 구조가 다른 모델(MLP((50, 10)))에 읽으려 하면 나는 오류
"""
import os
import textwrap

import numpy as np

import dezero_kr.functions as RF  # 기준 패키지
import dezero_kr.models
import mydezero.functions as F
from mydezero import DataLoader, optimizers
from mydezero.datasets import Digits
from mydezero.models import MLP

from _common import FAST


def check_against_package(model, x):
    """mydezero로 쓴 파일을 dezero_kr의 모델이 읽고, dezero_kr가 쓴 파일을 mydezero가 읽는다."""
    model.save_weights('step53_mine.npz')
    reference = dezero_kr.models.MLP((100, 10), activation=RF.relu)
    reference(x[:1])  # 첫 forward로 W를 만든다
    reference.load_weights('step53_mine.npz')
    reference.save_weights('step53_package.npz')
    other = MLP((100, 10), activation=F.relu)
    other(x[:1])
    other.load_weights('step53_package.npz')
    for (key, p), (_, q), (_, r) in zip(model.named_params(), reference.named_params(),
                                        other.named_params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)
        np.testing.assert_array_equal(p.data, r.data, err_msg=key)
    print('save_weights, load_weights 확인: 패키지와 서로의 파일을 읽는다')


def save_state(model, optimizer, loader, path):
    """MomentumSGD의 속도 v(키: 매개변수 경로), 로더가 다음 에폭에 쓸 순서, NumPy 난수 상태를
    .npz 하나에 쓴다."""
    arrays = {key: optimizer.vs[id(param)] for key, param in model.named_params()}
    arrays['loader/index'] = loader.index
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    arrays.update({'random/keys': keys, 'random/numbers': np.array([pos, has_gauss]),
                   'random/cached': np.array(cached)})
    tmp = path + '.tmp'
    with open(tmp, 'wb') as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)  # 다 쓴 뒤에 이름을 바꾼다


def load_state(model, optimizer, loader, path):
    """save_state의 파일을 읽어 옵티마이저의 속도, 로더의 순서, 난수 상태를 되돌린다."""
    with np.load(path, allow_pickle=False) as npz:
        for key, param in model.named_params():
            optimizer.vs[id(param)] = npz[key].copy()
        loader.index, loader.iteration = npz['loader/index'], 0
        pos, has_gauss = npz['random/numbers']
        np.random.set_state(('MT19937', npz['random/keys'], int(pos), int(has_gauss),
                             float(npz['random/cached'])))


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
    """같은 시드의 (모델, 옵티마이저, 로더). 로더는 NumPy 전역 난수로 섞는다."""
    np.random.seed(seed)
    model = MLP((100, 10), activation=F.relu)
    optimizer = optimizers.MomentumSGD(lr=0.1).setup(model)
    loader = DataLoader(Digits(train=True), batch_size=100)
    return model, optimizer, loader


if __name__ == '__main__':
    epochs = 2 if FAST else 5
    model, optimizer, loader = new_run()
    first = train(model, optimizer, loader, epochs)
    print('처음', epochs, '에폭의 손실:', first)
    model.save_weights('my_mlp.npz')
    save_state(model, optimizer, loader, 'my_optimizer.npz')  # 여기서 멈췄다고 하자

    x_test, t_test = Digits(train=False)[:]
    check_against_package(model, x_test)
    with np.load('my_mlp.npz') as f:
        print('my_mlp.npz 안:')
        print(' ', {key: f[key].shape for key in f.files})

    # 새 모델에 읽어 들이기: 구조(층의 크기)는 같아야 하고 값은 파일에서 온다
    restored = MLP((100, 10), activation=F.relu)
    restored(x_test[:1])  # 첫 forward로 W를 만든다 (그 값은 곧 파일의 값으로 바뀐다)
    restored.load_weights('my_mlp.npz')
    same = np.array_equal(restored(x_test).data, model(x_test).data)
    print('읽어 들인 모델의 예측이 같은가:', same,
          f'| 테스트 정확도 {float(F.accuracy(restored(x_test), t_test).data):.4f}')

    # 이어서 학습: 멈추지 않은 학습과 비교한다. 위의 확인 코드도 난수를 썼으므로(새 모델의 W)
    # 쉬지 않은 쪽도 멈춘 시점의 난수 상태에서 이어 간다
    load_state(model, optimizer, loader, 'my_optimizer.npz')
    straight = train(model, optimizer, loader, epochs)
    resumed_model, resumed_optimizer, resumed_loader = new_run()
    resumed_model(x_test[:1])
    resumed_model.load_weights('my_mlp.npz')
    load_state(resumed_model, resumed_optimizer, resumed_loader, 'my_optimizer.npz')
    resumed = train(resumed_model, resumed_optimizer, resumed_loader, epochs)
    print('쉬지 않고 학습한 뒤', epochs, '에폭:', straight)
    print('저장 -> 읽고 이어서   :', resumed, '| 같은가', straight == resumed)

    try:
        other = MLP((50, 10))
        other(x_test[:1])  # 첫 forward로 W를 만든다
        other.load_weights('my_mlp.npz')
    except ValueError as e:
        print('\n구조가 다른 모델에 읽기 -> ValueError:')
        print(textwrap.fill(str(e), 78, initial_indent='  ', subsequent_indent='  '))
