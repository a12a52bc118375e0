"""60단계: LSTM과 시계열용 데이터 로더

59단계의 RNN은 한 번에 값 하나씩(배치 1) 학습했다. 느리고, 기울기가 긴 시간을 거슬러 가며 폭주하거나
사라지기 쉽다. 두 가지를 바꾼다.

1. SeqDataLoader: 시계열을 batch_size개의 "흐름"으로 나눠 동시에 읽는다. 30개의 흐름이면 흐름 k는
   데이터의 k * (999 // 30) 번째 값에서 시작해 한 칸씩 나아간다. 한 배치 = 각 흐름의 현재 값 30개
   (x (30, 1)). 흐름 안의 순서가 유지되므로 은닉 상태를 배치 사이에 이어 갈 수 있다. 섞지 않는다.
2. L.LSTM: 은닉 상태 h 말고 "기억 셀" c를 따로 두고, 게이트(0~1 사이 값)로 얼마나 잊고(f),
   얼마나 새로 넣고(i), 얼마나 내보낼지(o) 정한다.

       f, i, o = sigmoid(...),  u = tanh(...)
       c_t = f * c_{t-1} + i * u        덧셈 경로라 기울기가 시간을 거슬러 잘 전해진다
       h_t = o * tanh(c_t)

학습 루프는 59단계와 같다(30단계마다 backward, unchain_backward, update). 예측은 배치 1로
reset_state() 뒤에 한 값씩 넣는다. 원소 하나는 .item()으로 꺼낸다(NumPy 2에서 float()은 (1, 1)
배열을 받지 않는다: DeZero의 60단계가 학습 끝에 멈추는 이유).

그림: matplotlib이 있으면 현재 폴더에 lstm_sin.png(cos 곡선과 예측)를 저장한다.

에폭: DEZERO_KR_FAST=1(테스트)이면 10에폭, 그냥 실행하면 책과 같은 100에폭(약 6초).

출력에서 볼 것
* SeqDataLoader의 첫 두 배치: 흐름마다 시작 위치가 33씩 떨어져 있고, 다음 배치는 한 칸 뒤
* 에폭마다의 평균 손실과, cos 곡선의 다음 값 예측 오차 (59단계의 RNN과 비교)
"""
import numpy as np

import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import SeqDataLoader, optimizers
from dezero_kr.datasets import SinCurve

from _common import FAST, save_lines
from step59 import SimpleRNN, predict_curve


class BetterRNN(SimpleRNN):
    """59단계의 모델에서 순환 계층만 LSTM으로 바꾼다 (forward, reset_state는 그대로)."""
    recurrent_layer = L.LSTM


if __name__ == '__main__':
    max_epoch = 10 if FAST else 100
    batch_size = 30
    hidden_size = 100
    bptt_length = 30

    train_set = SinCurve(train=True)
    loader = SeqDataLoader(train_set, batch_size=batch_size)
    jump = len(train_set) // batch_size
    x0, _ = next(loader)
    x1, _ = next(loader)
    loader.reset()
    print(f'SeqDataLoader: 배치 {x0.shape}, 에폭당 {loader.max_iter}번, 흐름 간격 {jump}')
    print('  첫 배치의 흐름 0, 1, 2 =', np.round(x0[:3, 0], 6), '= 데이터',
          np.round(train_set.data[[0, jump, 2 * jump], 0], 6))
    print('  둘째 배치의 흐름 0, 1, 2 =', np.round(x1[:3, 0], 6), '= 데이터',
          np.round(train_set.data[[1, jump + 1, 2 * jump + 1], 0], 6))

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
    save_lines(xs, {'y = cos(x)': ys, 'predict': preds}, 'lstm_sin.png')
