"""제5고지(52~60단계) 연습 문제의 정답. docs/tutorial/stage5.md에 접혀서 보인다.

문제마다 스텁(``python steps/check.py stage5.N --stub``)이 요구하는 이름을 정의한다.
확인 코드는 steps/exercises/stage5.py 한 곳에 있고, 학습자의 답과 이 파일이 같은
확인을 지난다. 23단계부터처럼 직접 만든 패키지 mydezero(steps/mydezero/)를 쓴다.
"""
import numpy as np

import mydezero.functions as F
from mydezero import Function
from mydezero.functions_conv import col2im_array, im2col_array


# --- 문제 1 -------------------------------------------------------------------
def conv_outsize(H, K, S, P):
    """OH = (H + 2P - K) // S + 1: 패딩한 길이 H + 2P에서 창이 K칸을 차지하고,
    남은 H + 2P - K칸을 S칸씩 건너뛰며 몇 번 더 놓을 수 있는지 센다(처음 자리 +
    1)."""
    return (H + 2 * P - K) // S + 1


# (28 - 5) // 1 + 1 = 24,  (32 + 2 - 3) // 2 + 1 = 16,
# (224 + 6 - 7) // 2 + 1 = 112,  (7 - 3) // 3 + 1 = 2 (오른쪽 두 열은 안 쓰인다)
by_hand = {(28, 5, 1, 0): 24, (32, 3, 2, 1): 16,
           (224, 7, 2, 3): 112, (7, 3, 3, 0): 2}

# --- 문제 2 -------------------------------------------------------------------
# OH = OW = (5 + 2 - 3) // 1 + 1 = 5: 행은 창의 수 2*5*5 = 50, 열은 창 하나의
# 원소 3*3*3 = 27. Conv2d(16, 3): W (16, 3, 3, 3) = 432개 + b (16,) = 448개.
col_shape = (2 * 5 * 5, 3 * 3 * 3)
n_params = 16 * 3 * 3 * 3 + 16

# --- 문제 3 -------------------------------------------------------------------
# 창마다 기울기는 최댓값 자리로만 간다: (1, 1)의 4가 1, (0, 2)의 5가 2, (3, 1)의
# 6이 3, (3, 2)의 9가 4를 받고, 나머지는 0이다.
x_grad = [[0, 0, 2, 0],
          [0, 1, 0, 0],
          [0, 0, 0, 0],
          [0, 3, 4, 0]]

# --- 문제 4 -------------------------------------------------------------------
# dc_t/dc_(t-1) = f이므로 10단계 거슬러 가면 f^10 = 0.9^10 = 0.3486784401. 이
# 경로에는 f만 곱해진다(W_h도 tanh'도 없다): LSTM이 기울기를 오래 나르는 까닭.
grad_c0 = 0.9 ** 10


# --- 문제 5 -------------------------------------------------------------------
class AveragePooling(Function):
    """창마다 평균: im2col로 창을 펼쳐 (N, C, K, K, OH, OW)에서 K, K 축의 평균.

    y의 한 칸은 창의 K*K칸 각각에 1/(K*K)의 기울기를 준다. 그래서 역전파는 gy /
    (K*K)를 창 모양으로 펼친 뒤 col2im으로 모은다. col2im은 겹치는 창의 몫을
    **더한다**."""

    def __init__(self, kernel_size, stride=1, pad=0):
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad

    def forward(self, x):
        self.input_shape = x.shape
        K, S, P = self.kernel_size, self.stride, self.pad
        col = im2col_array(x, K, S, P, to_matrix=False)  # (N, C, K, K, OH, OW)
        return col.mean(axis=(2, 3))

    def backward(self, gy):
        K = self.kernel_size
        N, C, OH, OW = gy.shape
        g = (gy.data / (K * K))[:, :, None, None]  # 창의 모든 칸에 같은 몫
        gcol = np.broadcast_to(g, (N, C, K, K, OH, OW)).copy()
        return col2im_array(gcol, self.input_shape, K, self.stride, self.pad,
                            to_matrix=False)


def average_pooling(x, kernel_size, stride=1, pad=0):
    return AveragePooling(kernel_size, stride, pad)(x)


# --- 문제 6 -------------------------------------------------------------------
def gru_cell(x, h, p):
    """GRU 셀: LSTM의 기억 셀과 망각/입력 게이트를 갱신 게이트 z 하나로 합쳤다.

    h_new = z * h + (1 - z) * g는 이전 상태와 새 후보의 가중 평균이다. z = 1이면
    h가 그대로 지나가고(dh_new/dh = 1, LSTM의 f = 1과 같은 길), z = 0이면 새
    후보로 바뀐다. 재설정 게이트 r은 후보를 만들 때 이전 상태를 얼마나 볼지
    정한다."""
    z = F.sigmoid(F.matmul(x, p['Wz']) + F.matmul(h, p['Uz']) + p['bz'])
    r = F.sigmoid(F.matmul(x, p['Wr']) + F.matmul(h, p['Ur']) + p['br'])
    g = F.tanh(F.matmul(x, p['Wh']) + F.matmul(r * h, p['Uh']) + p['bh'])
    return z * h + (1 - z) * g
