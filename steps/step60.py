"""60단계: LSTM과 시계열용 데이터 로더

59단계의 RNN은 한 번에 값 하나씩(배치 1) 학습했다. 느리고, 기울기가 긴 시간을 거슬러 가며 폭주하거나
사라지기 쉽다. 두 가지를 바꾼다.

1. SeqDataLoader: 시계열을 batch_size개의 "흐름"으로 나눠 동시에 읽는다. 30개의 흐름이면 흐름 k는
   데이터의 k * (999 // 30) 번째 값에서 시작해 한 칸씩 나아간다. 한 배치 = 각 흐름의 현재 값 30개
   (x (30, 1)). 흐름 안의 순서가 유지되므로 은닉 상태를 배치 사이에 이어 갈 수 있다. 섞지 않는다.
2. LSTM: 은닉 상태 h 말고 "기억 셀" c를 따로 두고, 게이트(0~1 사이 값)로 얼마나 잊고(f),
   얼마나 새로 넣고(i), 얼마나 내보낼지(o) 정한다. 이 단계에서 mydezero/layers.py에 직접 만든다
   (SeqDataLoader는 mydezero/dataloaders.py에).

       f, i, o = sigmoid(x W_x* + h_{t-1} W_h* + b_*)
       u = tanh(x W_xu + h_{t-1} W_hu + b_u)
       c_t = f * c_{t-1} + i * u
       h_t = o * tanh(c_t)

   게이트는 x와 h_{t-1}로만 정해지므로 dc_t/dc_{t-1} = f_t (원소별)이다. c를 따라 시간을 거슬러 가는
   기울기는 t마다 f_t를 곱할 뿐, RNN처럼 W_h와 tanh'를 곱하지 않는다. f_t가 1에 가까우면 기울기가
   거의 줄지 않고 전해진다. 스크립트는 이것을 역전파로 확인한다.
   직접 만든 LSTM을 같은 시드의 기준 패키지 dezero_kr.layers.LSTM과 세 시점 동안 비교하고 학습에
   쓴다. SeqDataLoader도 dezero_kr의 것과 같은 배치를 내는지 확인한다.

학습 루프는 59단계와 같다(30단계마다 backward, unchain_backward, update). 예측은 배치 1로
reset_state() 뒤에 한 값씩 넣는다. 원소 하나는 .item()으로 꺼낸다(NumPy 2에서 float()은 (1, 1)
배열을 받지 않는다: DeZero의 60단계가 학습 끝에 멈추는 이유).

그림: matplotlib이 있으면 현재 폴더에 step60_lstm_sin.png(cos 곡선과 예측)를 저장한다.

에폭: DEZERO_KR_FAST=1(테스트)이면 10에폭, 그냥 실행하면 책과 같은 100에폭(약 6초).

출력에서 볼 것
* 직접 만든 LSTM == 기준 패키지의 L.LSTM (세 시점의 h와 기울기), 역전파로 구한 dc_t/dc_{t-1}이 f_t와 같다
* SeqDataLoader의 첫 두 배치: 흐름마다 시작 위치가 33씩 떨어져 있고, 다음 배치는 한 칸 뒤
* 에폭마다의 평균 손실과, cos 곡선의 다음 값 예측 오차 (59단계의 RNN과 비교)
"""
import numpy as np

import dezero_kr  # 기준 패키지
import dezero_kr.layers
import mydezero
import mydezero.functions as F
import mydezero.layers as L
from mydezero import Model, SeqDataLoader, Variable, optimizers
from mydezero.datasets import SinCurve

from _common import FAST, save_lines


def compare_recurrent(name, steps=3):
    """같은 시드로 만든 mydezero.layers.<name>과 dezero_kr.layers.<name>에 같은 입력열을 넣어
    상태와 기울기를 비교한다. 매개변수의 경로들을 돌려준다 (59단계와 같다)."""
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
    """xs를 한 값씩 넣은 예측들 (그래프 없이, 59단계와 같다)."""
    model.reset_state()
    preds = []
    with mydezero.no_grad():
        for x in xs:
            y = model(np.array(x).reshape(1, 1))
            preds.append(y.data.item())  # (1, 1) 배열의 원소 하나. float(y.data)는 NumPy 2에서 오류
    return np.array(preds)


def check_cell_path():
    """역전파로 구한 dc_t/dc_{t-1}이 f_t와 같다.
    (c_{t-1}을 잎 변수로 두고 sum(c_t)를 역전파한다)"""
    np.random.seed(0)
    lstm = L.LSTM(4)
    x = np.random.default_rng(1).standard_normal((2, 3))
    lstm(x)                               # 첫 시점: h, c가 생긴다
    lstm.h = Variable(lstm.h.data)        # 이전 시점과의 연결을 끊고
    c_prev = lstm.c = Variable(lstm.c.data)  # c_{t-1}을 잎 변수로
    # 망각 게이트: x와 이전 h로만 정해진다
    f = F.sigmoid(lstm.x2f(x) + lstm.h2f(lstm.h))
    lstm(x)
    F.sum(lstm.c).backward()
    np.testing.assert_allclose(c_prev.grad.data, f.data, rtol=1e-6)
    return f.data


def check_loader(train_set, batch_size):
    """SeqDataLoader가 기준 패키지의 것과 한 에폭 동안 같은 배치를 낸다."""
    mine = list(SeqDataLoader(train_set, batch_size=batch_size))
    ref = list(dezero_kr.SeqDataLoader(train_set, batch_size=batch_size))
    assert len(mine) == len(ref)
    for (x, t), (x_ref, t_ref) in zip(mine, ref):
        np.testing.assert_array_equal(x, x_ref)
        np.testing.assert_array_equal(t, t_ref)


class BetterRNN(Model):
    """59단계의 SimpleRNN에서 순환 층만 LSTM으로 바꾼다."""

    def __init__(self, hidden_size, out_size):
        super().__init__()
        self.rnn = L.LSTM(hidden_size)
        self.fc = L.Linear(out_size)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        h = self.rnn(x)
        return self.fc(h)


if __name__ == '__main__':
    paths = compare_recurrent('LSTM')
    print(f'LSTM 확인: L.LSTM과 세 시점의 h, 기울기가 같다 (매개변수 {len(paths)}개)')
    f = check_cell_path()
    print('역전파로 구한 dc_t/dc_{t-1} == f_t, 첫 행:', np.round(f[0], 4))
    max_epoch = 10 if FAST else 100
    batch_size = 30
    hidden_size = 100
    bptt_length = 30

    train_set = SinCurve(train=True)
    check_loader(train_set, batch_size)
    loader = SeqDataLoader(train_set, batch_size=batch_size)
    jump = len(train_set) // batch_size
    x0, _ = next(loader)
    x1, _ = next(loader)
    loader.reset()
    print(f'SeqDataLoader: 배치 {x0.shape}, 에폭당 {loader.max_iter}번, 흐름 간격 {jump}')
    print('  첫 배치의 흐름 0, 1, 2 =', np.round(x0[:3, 0], 6),
          '\n    = 데이터', np.round(train_set.data[[0, jump, 2 * jump], 0], 6))
    print('  둘째 배치의 흐름 0, 1, 2 =', np.round(x1[:3, 0], 6),
          '\n    = 데이터', np.round(train_set.data[[1, jump + 1, 2 * jump + 1], 0], 6))

    np.random.seed(0)
    model = BetterRNN(hidden_size, 1)
    optimizer = optimizers.Adam().setup(model)
    for epoch in range(max_epoch):
        model.reset_state()
        loss, count, sum_loss = 0, 0, 0.0
        for x, t in loader:
            y = model(x)
            loss += F.mean_squared_error(y, t)
            count += 1
            if count % bptt_length == 0 or count == loader.max_iter:
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()
                optimizer.update()
                sum_loss += loss.data.item()
                loss = 0
        if (epoch + 1) % (max_epoch // 5) == 0:
            print(f'epoch {epoch + 1:3d}: 평균 손실 {sum_loss / count:.6f}')

    xs = np.linspace(0, 4 * np.pi, 1000)
    ys = np.cos(xs)
    preds = predict_curve(model, ys)
    print(f'\ncos 곡선에서 다음 값 예측의 평균 제곱 오차: {np.mean((preds[:-1] - ys[1:]) ** 2):.6f}')
    save_lines(xs, {'y = cos(x)': ys, 'predict': preds}, 'step60_lstm_sin.png')
