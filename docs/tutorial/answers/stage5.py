"""Answers to the stage 5 exercises (steps 52-60), shown hidden on docs/tutorial/stage5.md.

Each ``exercise_N()`` takes no argument and asserts its own result; tests/test_exercises.py
runs them all.
"""
import numpy as np

import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import Variable
from dezero_kr.utils import get_conv_outsize


def exercise_1():
    """OH = (H + 2P - K) // S + 1:
    (28 - 5) // 1 + 1 = 24,  (32 + 2 - 3) // 2 + 1 = 16,
    (224 + 6 - 7) // 2 + 1 = 112,  (7 - 3) // 3 + 1 = 2 (2 columns unused).
    """
    cases = {(28, 5, 1, 0): 24, (32, 3, 2, 1): 16,
             (224, 7, 2, 3): 112, (7, 3, 3, 0): 2}
    for (H, K, S, P), expected in cases.items():
        assert (H + 2 * P - K) // S + 1 == expected
        assert get_conv_outsize(H, K, S, P) == expected
        if H <= 32:  # 작은 입력은 실제 합성곱의 출력 모양으로도 확인한다
            x, W = np.zeros((1, 1, H, H)), np.zeros((1, 1, K, K))
            y = F.conv2d(x, W, stride=S, pad=P)
            assert y.shape == (1, 1, expected, expected)


def exercise_2():
    """im2col of (2, 3, 5, 5), 3x3, stride 1, pad 1: OH = OW = 5,
    so (2*5*5, 3*3*3) = (50, 27).
    Conv2d(16, 3) on 3 channels: W (16, 3, 3, 3) = 432 numbers + b (16,) = 448.
    """
    col = F.im2col(np.zeros((2, 3, 5, 5)), kernel_size=3, stride=1, pad=1)
    assert col.shape == (2 * 5 * 5, 3 * 3 * 3) == (50, 27)
    np.random.seed(0)
    conv = L.Conv2d(16, kernel_size=3)
    # 입력 채널 3을 보고 W를 만든다
    conv(np.zeros((1, 3, 8, 8), dtype=np.float32))
    assert conv.W.shape == (16, 3, 3, 3)
    assert sum(p.data.size for p in conv.params()) == 16 * 3 * 3 * 3 + 16 == 448


def exercise_3():
    """Each window's gradient goes to its maximum only.

    4 at (1, 1) gets 1, 5 at (0, 2) gets 2, 6 at (3, 1) gets 3,
    9 at (3, 2) gets 4; every other pixel gets 0.
    """
    x = Variable(np.array([[[[1.0, 2.0, 5.0, 0.0],
                             [3.0, 4.0, 1.0, 2.0],
                             [0.0, 1.0, 7.0, 8.0],
                             [2.0, 6.0, 9.0, 3.0]]]]))
    y = F.pooling(x, kernel_size=2, stride=2)
    np.testing.assert_array_equal(y.data[0, 0], [[4.0, 5.0], [6.0, 9.0]])
    y.grad = Variable(np.array([[[[1.0, 2.0], [3.0, 4.0]]]]))
    y.backward()
    np.testing.assert_array_equal(x.grad.data[0, 0], [[0, 0, 2, 0],
                                                      [0, 1, 0, 0],
                                                      [0, 0, 0, 0],
                                                      [0, 3, 4, 0]])


def exercise_4():
    """dc_t/dc_{t-1} = f, so ten steps back: f^10 = 0.9^10 = 0.3486784401
    (a product of f's only: no W_h and no tanh' on this path).
    """
    f = 0.9
    c0 = Variable(np.array(1.0))
    c = c0
    for t in range(10):
        c = f * c + 0.1 * t  # i * u 는 c_0에 기대지 않는 상수
    c.backward()
    np.testing.assert_allclose(float(c0.grad.data), 0.9 ** 10, rtol=1e-14)
    assert round(float(c0.grad.data), 10) == 0.3486784401
