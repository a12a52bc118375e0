"""제5고지(52~60단계) 연습 문제의 확인: docs/tutorial/stage5.md의 "연습 문제".

부품을 만드는 문제(평균 풀링, GRU 셀)의 답은 학습자가 만드는 패키지 ``mydezero``
(steps/mydezero/)로 쓴다. 그래서 답에 넘기는 Variable도 mydezero의 것이다. 기대값은
기준 패키지 ``dezero_kr``(F.conv2d, F.pooling, F.average_pooling, ...), NumPy로 쓴 식과
중앙 차분으로 계산한다.
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as KF
import dezero_kr.layers as KL
from dezero_kr.utils import get_conv_outsize
from mydezero import Variable

from . import central_diff, exercise

STUB_OUTSIZE = '''
"""제5고지 문제 1: 합성곱 출력 크기."""


def conv_outsize(H, K, S, P):
    """입력 크기 H, 커널 K, 스트라이드 S, 패딩 P일 때 출력 크기 (정수)."""
    raise NotImplementedError


# 손으로 구한 출력 크기: (H, K, S, P) -> OH
by_hand = {(28, 5, 1, 0): ..., (32, 3, 2, 1): ...,
           (224, 7, 2, 3): ..., (7, 3, 3, 0): ...}
'''


@exercise(1, '합성곱 출력 크기', STUB_OUTSIZE)
def check_outsize(t):
    conv_outsize, by_hand = t.get('conv_outsize'), t.get('by_hand')
    cases = [(28, 5, 1, 0), (32, 3, 2, 1), (224, 7, 2, 3), (7, 3, 3, 0)]
    for H, K, S, P in cases:
        expected = get_conv_outsize(H, K, S, P)
        t.equal(f'by_hand[{(H, K, S, P)}] (손으로 구한 값)', by_hand.get((H, K, S, P)),
                expected)
        with t.part(f'conv_outsize{(H, K, S, P)}'):
            got = conv_outsize(H, K, S, P)
        t.equal(f'conv_outsize{(H, K, S, P)}', got, expected)
        if H <= 32:  # 작은 입력은 실제 합성곱의 출력 모양으로도
            y = KF.conv2d(np.zeros((1, 1, H, H)), np.zeros((1, 1, K, K)),
                         stride=S, pad=P)
            t.equal(f'F.conv2d의 출력 높이 {(H, K, S, P)}', y.shape[2], got)
    for H, K, S, P in [(5, 5, 1, 0), (9, 2, 4, 1), (100, 11, 4, 2)]:
        with t.part(f'conv_outsize{(H, K, S, P)}'):
            got = conv_outsize(H, K, S, P)
        t.equal(f'conv_outsize{(H, K, S, P)}', got, get_conv_outsize(H, K, S, P))


STUB_SHAPES = '''
"""제5고지 문제 2: im2col의 모양과 합성곱 층의 매개변수 수."""

col_shape = ...   # x (2, 3, 5, 5), 3x3 커널, 스트라이드 1, 패딩 1일 때 im2col(x)의 모양 (튜플)
n_params = ...    # 입력 채널 3에 L.Conv2d(16, kernel_size=3)의 매개변수 원소 수
'''


@exercise(2, 'im2col의 모양과 Conv2d의 매개변수 수', STUB_SHAPES)
def check_shapes(t):
    col = KF.im2col(np.zeros((2, 3, 5, 5)), kernel_size=3, stride=1, pad=1)
    t.equal('col_shape (im2col이 낸 모양)', t.get('col_shape'), col.shape)
    np.random.seed(0)
    conv = KL.Conv2d(16, kernel_size=3)
    conv(np.zeros((1, 3, 8, 8), dtype=np.float32))  # 입력 채널 3을 보고 W를 만든다
    t.equal('n_params (Conv2d의 매개변수 원소 수)', t.get('n_params'),
            sum(p.data.size for p in conv.params()))


STUB_MAXPOOL = '''
"""제5고지 문제 3: 최대 풀링의 역전파. 2x2 창, 스트라이드 2.

x = [[1, 2, 5, 0],
     [3, 4, 1, 2],
     [0, 1, 7, 8],
     [2, 6, 9, 3]],  출력 쪽 기울기 [[1, 2], [3, 4]]
"""

x_grad = ...   # 4x4 목록: 역전파한 x.grad를 손으로
'''

POOL_X = np.array([[1.0, 2.0, 5.0, 0.0], [3.0, 4.0, 1.0, 2.0],
                   [0.0, 1.0, 7.0, 8.0], [2.0, 6.0, 9.0, 3.0]])


@exercise(3, '최대 풀링의 역전파', STUB_MAXPOOL)
def check_maxpool(t):
    x = dezero_kr.Variable(POOL_X[None, None].copy())
    y = KF.pooling(x, kernel_size=2, stride=2)
    y.grad = dezero_kr.Variable(np.array([[[[1.0, 2.0], [3.0, 4.0]]]]))
    y.backward()
    t.close('x_grad (F.pooling의 역전파와 비교)', t.get('x_grad'),
            x.grad.data[0, 0], rtol=0.0)


STUB_CELL = '''
"""제5고지 문제 4: 기억 셀 경로의 기울기. f = 0.9, c_t = f c_(t-1) + (상수)."""

grad_c0 = ...   # dc_10 / dc_0
'''


@exercise(4, '기억 셀 경로의 기울기', STUB_CELL)
def check_cell(t):
    c0 = dezero_kr.Variable(np.array(1.0))
    c = c0
    for step in range(10):
        c = 0.9 * c + 0.1 * step  # i * u는 c_0에 기대지 않는 상수
    c.backward()
    t.close('grad_c0 (역전파한 dc_10/dc_0과 비교)', t.get('grad_c0'), c0.grad.data,
            rtol=1e-9)


STUB_AVGPOOL = '''
"""제5고지 문제 5: 평균 풀링(AveragePooling)을 순전파와 역전파까지 만든다.

x (N, C, H, W) -> y (N, C, OH, OW). 0으로 패딩한 x의 KxK 창마다 평균 (패딩도 평균에
센다). OH = (H + 2P - K) // S + 1. 역전파: 창마다 gy / (K*K)를 그 창의 모든 칸에
**더한다** (창이 겹치면 한 칸이 여러 창에서 받는다). 56단계의 im2col / col2im을 써도
되고(mydezero.functions_conv.im2col_array, col2im_array) 반복문으로 써도 된다.
"""
import numpy as np

from mydezero import Function


class AveragePooling(Function):
    def __init__(self, kernel_size, stride=1, pad=0):
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad

    def forward(self, x):
        raise NotImplementedError

    def backward(self, gy):
        raise NotImplementedError


def average_pooling(x, kernel_size, stride=1, pad=0):
    return AveragePooling(kernel_size, stride, pad)(x)
'''


def _avg_pool_loops(x, K, S, P):
    """반복문으로 쓴 평균 풀링 (확인의 기준)."""
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (P, P), (P, P)))
    OH, OW = (H + 2 * P - K) // S + 1, (W + 2 * P - K) // S + 1
    y = np.zeros((N, C, OH, OW))
    for i in range(OH):
        for j in range(OW):
            y[:, :, i, j] = xp[:, :, i * S:i * S + K, j * S:j * S + K].mean(axis=(2, 3))
    return y


@exercise(5, '평균 풀링 만들기', STUB_AVGPOOL)
def check_avgpool(t):
    average_pooling = t.get('average_pooling')
    rng = np.random.default_rng(3)
    for shape, K, S, P in (((2, 3, 6, 6), 2, 2, 0), ((1, 2, 5, 5), 3, 1, 1),
                           ((1, 1, 7, 6), 3, 2, 0)):
        name = f'x{shape}, K={K}, S={S}, P={P}'
        x0 = rng.standard_normal(shape)
        x = Variable(x0.copy())
        with t.part(f'{name}의 순전파'):
            y = average_pooling(x, K, S, P)
        t.close(f'{name}: y (반복문으로 쓴 평균과 비교)', y, _avg_pool_loops(x0, K, S, P),
                rtol=1e-12, atol=1e-14)
        w = rng.standard_normal(np.shape(y.data))
        with t.part(f'{name}: sum(y * w)의 역전파'):
            (y * w).sum().backward()
        num = central_diff(lambda a: (_avg_pool_loops(a, K, S, P) * w).sum(), x0)
        t.close(f'{name}: x.grad (중앙 차분과 비교)', x.grad, num, rtol=1e-6, atol=1e-8)
        ref = dezero_kr.Variable(x0.copy())
        (KF.average_pooling(ref, K, S, P) * w).sum().backward()
        t.close(f'{name}: x.grad (F.average_pooling과 비교)', x.grad, ref.grad.data,
                rtol=1e-12, atol=1e-14)


STUB_GRU = '''
"""제5고지 문제 6: GRU 셀 하나 (Cho et al. 2014).

x (N, D), h (N, H), p는 매개변수 사전: Wz, Wr, Wh (D, H), Uz, Ur, Uh (H, H),
bz, br, bh (H,). mydezero.functions(F.sigmoid, F.tanh, F.matmul, ...)만으로 쓰면
역전파는 저절로 된다.

    z = sigmoid(x Wz + h Uz + bz)          # 갱신 게이트
    r = sigmoid(x Wr + h Ur + br)          # 재설정 게이트
    g = tanh(x Wh + (r * h) Uh + bh)       # 새 후보
    h_new = z * h + (1 - z) * g
"""
import mydezero.functions as F


def gru_cell(x, h, p):
    """다음 은닉 상태 h_new (N, H)를 Variable로 돌려준다."""
    raise NotImplementedError
'''

GRU_NAMES = ('Wz', 'Wr', 'Wh', 'Uz', 'Ur', 'Uh', 'bz', 'br', 'bh')


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def gru_numpy(x, h, p):
    """GRU 셀의 식을 NumPy로 (확인의 기준)."""
    z = _sigmoid(x @ p['Wz'] + h @ p['Uz'] + p['bz'])
    r = _sigmoid(x @ p['Wr'] + h @ p['Ur'] + p['br'])
    g = np.tanh(x @ p['Wh'] + (r * h) @ p['Uh'] + p['bh'])
    return z * h + (1 - z) * g


@exercise(6, 'GRU 셀 만들기', STUB_GRU)
def check_gru(t):
    gru_cell = t.get('gru_cell')
    rng = np.random.default_rng(4)
    N, D, H = 3, 4, 5
    x0, h0 = rng.standard_normal((N, D)), rng.standard_normal((N, H))
    p0 = {name: rng.standard_normal((H,) if name[0] == 'b' else
                                    ((D if name[0] == 'W' else H), H)) * 0.7
          for name in GRU_NAMES}
    x, h = Variable(x0.copy()), Variable(h0.copy())
    p = {name: Variable(a.copy()) for name, a in p0.items()}
    with t.part('gru_cell(x, h, p)의 순전파'):
        h_new = gru_cell(x, h, p)
    t.close('h_new (NumPy로 쓴 GRU 식과 비교)', h_new, gru_numpy(x0, h0, p0),
            rtol=1e-12, atol=1e-14)
    w = rng.standard_normal((N, H))
    with t.part('sum(h_new * w)의 역전파'):
        (h_new * w).sum().backward()
    inputs = dict(x=(x, x0), h=(h, h0), **{n: (p[n], p0[n]) for n in GRU_NAMES})
    for name, (var, value) in inputs.items():
        def loss(a, name=name):
            args = {'x': x0, 'h': h0, **p0, name: a}
            return (gru_numpy(args['x'], args['h'], args) * w).sum()
        num = central_diff(loss, value)
        t.close(f'{name}.grad (float64 중앙 차분과 비교)', var.grad, num, rtol=1e-6, atol=1e-8)
