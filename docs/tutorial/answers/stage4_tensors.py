"""제4고지 37~41단계(텐서를 다루는 함수) 연습 문제의 정답.

각 함수는 인수 없이 불리고, 문제가 요구한 것을 스스로 assert로 확인한다
(tests/test_exercises.py가 모두 실행한다).
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Function, Variable
from dezero_kr.utils import gradient_check


class Mean(Function):
    """y = x.mean(axis, keepdims=True).

    dy/dx_i = 1/n (n = 평균 낸 원소 수)이므로 backward는 gy / n을
    x의 모양으로 복사한다.
    """

    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        self.x_shape = x.shape
        return x.mean(axis=self.axis, keepdims=True)

    def backward(self, gy):
        n = np.prod(self.x_shape) // np.prod(gy.shape)
        return F.broadcast_to(gy / n, self.x_shape)


def exercise_1():
    """Mean(axis)(keepdims=True)을 gradient_check와 F.sum / n으로 확인한다."""
    x = np.arange(24.0).reshape(2, 3, 4) / 5
    for axis in (0, 2, (0, 2)):
        assert gradient_check(lambda v: Mean(axis)(v) ** 2, x)
        mine = Mean(axis)(Variable(x))
        n = x.size // mine.size
        total = F.sum(Variable(x), axis, keepdims=True)
        np.testing.assert_allclose(mine.data, total.data / n, rtol=1e-15)


def exercise_2():
    """선형 변환 y = x @ W + b, 손실 L = sum(y)의 기울기를 먼저 손으로 예측한다.

    dL/dy는 모두 1이므로 dL/dW = x^T @ 1 (모양 (2, 3), 각 열 = x의 열 합
    (9, 12)),
    dL/db = 1을 배치 축으로 더한 값 = N, dL/dx = 1 @ W^T (각 행 = W의 행 합).
    x = [[1, 2], [3, 4], [5, 6]] (N=3, D=2), W = [[1, 0, -1], [2, 1, 0]] (H=3),
    b = 0.
    """
    x = Variable(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    W = Variable(np.array([[1.0, 0.0, -1.0], [2.0, 1.0, 0.0]]))
    b = Variable(np.zeros(3))
    L = F.sum(F.matmul(x, W) + b)
    L.backward()
    np.testing.assert_array_equal(W.grad.data, [[9.0, 9.0, 9.0],
                                                [12.0, 12.0, 12.0]])
    np.testing.assert_array_equal(b.grad.data, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(x.grad.data, [[0.0, 3.0]] * 3)


def exercise_3():
    """sum_to(x, shape)가 더하는 축을 예측한다.

    (5, 2, 3) -> (2, 1)이면 앞쪽의 0번 축과, shape에서 길이 1인 (원래의)
    2번 축이다. 즉 x.sum(axis=(0, 2))를 (2, 1)로 세운 것.
    """
    x = np.arange(30.0).reshape(5, 2, 3)
    y = F.sum_to(Variable(x), (2, 1))
    np.testing.assert_array_equal(y.data, x.sum(axis=(0, 2)).reshape(2, 1))
    np.testing.assert_array_equal(y.data, [[195.0], [240.0]])


class Transpose(Function):
    """y = x.transpose(axes).  backward는 역순열 np.argsort(axes)로 되돌린다."""

    def __init__(self, axes):
        self.axes = axes

    def forward(self, x):
        return x.transpose(self.axes)

    def backward(self, gy):
        return Transpose(tuple(np.argsort(self.axes)))(gy)


def exercise_4():
    """축 순서 (2, 0, 1)의 Transpose를 역순열로 역전파한다.

    출력 쪽 기울기에 서로 다른 값을 넣어 각 값이 원래 자리로 돌아가는지
    확인한다. 같은 axes로 되돌리면 모양부터 틀린다((3, 4, 2)가 된다).
    """
    x = Variable(np.arange(24.0).reshape(2, 3, 4))
    y = Transpose((2, 0, 1))(x)
    assert y.shape == (4, 2, 3)
    labels = np.arange(24.0).reshape(4, 2, 3)
    y.grad = Variable(labels)
    y.backward()
    np.testing.assert_array_equal(x.grad.data, labels.transpose(1, 2, 0))
    wrong = labels.transpose(2, 0, 1)  # 같은 axes로 되돌리면
    assert wrong.shape == (3, 4, 2)    # x의 모양 (2, 3, 4)가 아니다
    x0 = np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4)
    assert gradient_check(lambda v: Transpose((2, 0, 1))(v) ** 2, x0)
