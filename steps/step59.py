"""59단계: RNN으로 시계열 다루기 -- 사인파의 다음 값 예측

순환 신경망(RNN)은 은닉 상태 h를 가지고 있다가, 입력이 들어올 때마다 h를 갱신한다.

    h_t = tanh(x_t W_x + h_{t-1} W_h + b)        (RNN: x2h, h2h 두 Linear)
    y_t = h_t W_y + b_y                          (L.Linear: 출력 하나)

RNN 층을 이 단계에서 mydezero/layers.py에 직접 만든다: Linear 두 개(x2h는 편향 있음, h2h는 편향
없음)와 상태 h 하나. 첫 입력에서는 h가 없으므로 x2h만 쓴다. 모델 SimpleRNN(RNN 하나 + 출력 Linear)은
mydezero/models.py에 둔다. 같은 시드로 만든 기준 패키지 dezero_kr.layers.RNN과 세 시점 동안 h와 모든
매개변수의 기울기가 같은지 확인하고 학습에 쓴다.

데이터는 잡음 섞인 사인파(mydezero.datasets.SinCurve, 잡음은 시드 0에서): 입력 x_t, 정답 x_{t+1}. 999개 값을 차례로
넣으며 매 단계의 제곱 오차를 더한다. 시계열 전체를 한 그래프로 역전파하면 그래프가 끝없이 길어지므로
30단계마다 끊는다(Truncated BPTT).

    loss.backward()            # 최근 30단계 분량만 역전파
    loss.unchain_backward()    # loss에서 거슬러 올라가며 creator 연결을 끊는다: h는 값은 남고
                               # 그래프는 잘린다 (다음 역전파가 이전 구간으로 넘어가지 않는다)

unchain_backward도 이 단계에서 mydezero/core.py의 Variable에 더한다.

예측할 때는 no_grad() 안에서 한 값씩 넣는다. 시작할 때와 예측하기 전에 reset_state()로 h를 비운다.
NumPy 2에서는 float()에 (1, 1) 배열을 넣으면 오류다: 원소 하나는 .item()으로 꺼낸다 (DeZero의
59/60단계가 학습 끝에 멈추는 이유).

에폭: DEZERO_KR_FAST=1(테스트)이면 3에폭, 그냥 실행하면 책과 같은 100에폭(2코어 컴퓨터에서 약 30초).

그림: matplotlib이 있으면 현재 폴더에 step59_rnn_sin.png(cos 곡선과 모델의 예측)를 저장한다.

출력에서 볼 것
* 직접 만든 RNN == 기준 패키지의 L.RNN (세 시점의 h와 기울기)
* 에폭마다의 평균 손실: 처음 몇 에폭 안에 크게 줄고, 그 뒤로는 작은 값에서 오르내린다 (잡음 때문에 0이
  되지는 않는다)
* 학습한 적 없는 cos 곡선을 한 값씩 넣었을 때 다음 값 예측의 평균 제곱 오차와 몇 점의 예측값
"""
import numpy as np

import dezero_kr  # 기준 패키지
import dezero_kr.layers
import mydezero
import mydezero.functions as F
import mydezero.layers
from mydezero import optimizers
from mydezero.datasets import SinCurve
from mydezero.models import SimpleRNN

from _common import FAST, save_lines


def compare_recurrent(name, steps=3):
    """같은 시드로 만든 mydezero.layers.<name>과 dezero_kr.layers.<name>에 같은 입력열을 넣어
    상태와 기울기를 비교한다. 매개변수의 경로들을 돌려준다."""
    xs = np.random.default_rng(0).standard_normal((steps, 2, 3))
    results = []
    for package in (mydezero, dezero_kr):
        np.random.seed(0)
        layer = getattr(package.layers, name)(4)
        hs = [layer(x) for x in xs]
        loss = sum(package.functions.sum(h * h) for h in hs)
        loss.backward()
        named = list(layer.named_params())
        results.append(([path for path, _ in named], [h.data for h in hs],
                         [p.grad.data for _, p in named]))
    (paths, hs, grads), (paths_pkg, hs_pkg, grads_pkg) = results
    assert paths == paths_pkg, (paths, paths_pkg)
    for a, b in zip(hs + grads, hs_pkg + grads_pkg):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    return paths


def predict_curve(model, xs):
    """xs를 한 값씩 넣은 예측들 (그래프 없이)."""
    model.reset_state()
    preds = []
    with mydezero.no_grad():
        for x in xs:
            y = model(np.array(x).reshape(1, 1))
            preds.append(y.data.item())  # (1, 1) 배열의 원소 하나. float(y.data)는 NumPy 2에서 오류
    return np.array(preds)


if __name__ == '__main__':
    paths = compare_recurrent('RNN')
    print(f'RNN 확인: L.RNN과 세 시점의 h, 기울기가 같다 ({", ".join(paths)})')
    max_epoch = 3 if FAST else 100
    hidden_size = 100
    bptt_length = 30

    train_set = SinCurve(train=True)
    seqlen = len(train_set)
    np.random.seed(0)
    model = SimpleRNN(hidden_size, 1)
    optimizer = optimizers.Adam().setup(model)

    for epoch in range(max_epoch):
        model.reset_state()
        loss, count, sum_loss = 0, 0, 0.0
        for x, t in train_set:
            x, t = x.reshape(1, 1), t.reshape(1, 1)
            y = model(x)
            loss += F.mean_squared_error(y, t)
            count += 1
            if count % bptt_length == 0 or count == seqlen:
                model.cleargrads()
                loss.backward()
                # 이 구간의 그래프를 끊는다 (h의 값은 다음 구간으로 이어진다)
                loss.unchain_backward()
                optimizer.update()
                sum_loss += loss.data.item()
                loss = 0
        print(f'epoch {epoch + 1:3d}: 평균 손실 {sum_loss / count:.6f}')

    xs = np.linspace(0, 4 * np.pi, 1000)
    ys = np.cos(xs)
    preds = predict_curve(model, ys)
    mse = np.mean((preds[:-1] - ys[1:]) ** 2)
    print(f'\ncos 곡선에서 다음 값 예측의 평균 제곱 오차: {mse:.6f}')
    for i in (0, 250, 500, 750, 998):
        print(f'  x = {xs[i]:6.3f}: 입력 cos = {ys[i]:7.4f}, '
              f'예측 {preds[i]:7.4f}, 다음 값 {ys[i + 1]:7.4f}')
    save_lines(xs, {'y = cos(x)': ys, 'predict': preds}, 'step59_rnn_sin.png')
