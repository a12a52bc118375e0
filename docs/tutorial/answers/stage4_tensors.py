"""제4고지 37~41단계(텐서를 다루는 함수) 연습 문제의 정답. stage4.md에 접혀서 보인다.

문제마다 스텁(``python steps/check.py stage4_tensors.N --stub``)이 요구하는 이름을
정의한다. 확인 코드는 steps/exercises/stage4_tensors.py 한 곳에 있고, 학습자의 답과
이 파일이 같은 확인을 지난다. 부품(Mean, Transpose)은 직접 만든 패키지
mydezero(steps/mydezero/)로 쓴다.
"""
import numpy as np

import mydezero.functions as F
from mydezero import Function


# --- 문제 1 -------------------------------------------------------------------
class Mean(Function):
    """y = x.mean(axis, keepdims=True).

    dy/dx_i = 1/n (n = 평균 낸 원소 수)이므로 backward는 gy / n을 x의 모양으로
    복사한다. keepdims=True라서 gy는 이미 x와 같은 차원 수를 가지므로 그대로
    broadcast_to 하면 된다.
    """

    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        self.x_shape = x.shape
        return x.mean(axis=self.axis, keepdims=True)

    def backward(self, gy):
        n = np.prod(self.x_shape) // np.prod(gy.shape)
        return F.broadcast_to(gy / n, self.x_shape)


# --- 문제 2 -------------------------------------------------------------------
# dL/dy가 모두 1이므로 dL/dW = x^T 1: 각 열이 x의 열 합 (9, 12), dL/db = 1을
# 배치 축으로 더한 값 = N = 3, dL/dx = 1 W^T: 각 행이 W의 행 합 (0, 3).
W_grad = [[9.0, 9.0, 9.0], [12.0, 12.0, 12.0]]
b_grad = [3.0, 3.0, 3.0]
x_grad = [[0.0, 3.0]] * 3

# --- 문제 3 -------------------------------------------------------------------
# (5, 2, 3) -> (2, 1): 앞쪽에 남는 0번 축과, shape에서 길이 1인 (원래의) 2번 축.
# 즉 x.sum(axis=(0, 2))를 (2, 1)로 세운 것.
summed_axes = (0, 2)
result = [[195.0], [240.0]]


# --- 문제 4 -------------------------------------------------------------------
class Transpose(Function):
    """y = x.transpose(axes). backward는 역순열 np.argsort(axes)로 되돌린다.

    같은 axes로 되돌리면 모양부터 틀린다: (2, 3, 4)를 (2, 0, 1)로 바꾸면 (4, 2,
    3)이고, 그것을 다시 (2, 0, 1)로 바꾸면 (2, 3, 4)가 아니라 (3, 4, 2)가
    된다."""

    def __init__(self, axes):
        self.axes = axes

    def forward(self, x):
        return x.transpose(self.axes)

    def backward(self, gy):
        return Transpose(tuple(np.argsort(self.axes)))(gy)
