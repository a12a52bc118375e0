"""57단계: conv2d 함수와 Conv2d 층

56단계에서 본 im2col + 행렬 곱을 미분 가능한 함수로 묶은 것이 F.conv2d이다. 입력은 NCHW
(배치, 채널, 높이, 너비) 4차원 배열이다.

    y = F.conv2d(x, W, b, stride=1, pad=0)   x (N, C, H, W), W (OC, C, KH, KW), b (OC,)
                                             -> (N, OC, OH, OW)
    L.Conv2d(out_channels, kernel_size, stride, pad)   W를 가진 층 (입력 채널 수는 첫 입력에서
                                                       정해진다)

이 단계에서 56단계에 만든 mydezero/functions_conv.py에 Function을 직접 더한다(창은 56단계의
im2col_array로 펼치고, col2im_array로 되돌린다). L.Conv2d, L.Deconv2d는 mydezero/layers.py에 더한다.

* Conv2d: 순전파는 im2col로 펼친 (N, C, KH, KW, OH, OW)와 W (OC, C, KH, KW)를 (C, KH, KW)에 대해
  곱해 더한다(np.tensordot) + b.  역전파: dL/dx = deconv2d(gy, W) (전치 합성곱 = col2im 쪽),
  dL/dW = Conv2DGradW(gy, x) (gy와 펼친 x의 곱을 (N, OH, OW)에 대해 더한다),
  dL/db = gy의 (N, OH, OW) 합
* Deconv2d(전치 합성곱): conv2d의 x에 대한 역전파와 같은 계산이다. W (C, OC, KH, KW)로 작은 입력을
  크게 펼친다(출력 크기는 55단계의 get_deconv_outsize). 그 역전파는 다시 conv2d다. conv2d와 서로
  전치이므로 <conv2d(x, W), g> == <x, deconv2d(g, W)>. L.Deconv2d는 W의 모양만 다른 층이다.
역전파도 Function(Deconv2d, Conv2DGradW ...)이라 2차 미분도 된다. 기준 패키지의 F.conv2d와 값과
기울기를 맞춰 보고 float64 중앙 차분으로도 확인한다.

56단계에 만든 F.im2col(x, kernel_size)도 함수로 쓴다: 펼친 행렬 (N*OH*OW, C*KH*KW)을 돌려주고
역전파는 col2im이다. F.conv2d_simple은 im2col + linear로 합성곱을 조립한 교육용 버전으로 결과가
같다(역전파는 조립한 함수들이 한다). 최대 풀링(F.pooling)은 58단계에서 VGG16과 함께 만든다.

출력에서 볼 것
* 직접 만든 conv2d == 기준 패키지의 F.conv2d (값과 기울기), 수치 미분과 일치
* im2col 결과의 모양: (1, 3, 7, 7)을 5x5로 펼치면 (9, 75), 배치 10이면 (90, 75)
* conv2d의 출력 모양과 역전파된 x.grad, W.grad의 모양, conv2d == conv2d_simple, 수치 미분과 일치
* deconv2d: (1, 2, 4, 4)를 스트라이드 2, 패딩 1로 펼치면 (1, 3, 7, 7), conv2d와 서로 전치,
  F.deconv2d와 같은 값, L.Deconv2d의 W 모양
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
import mydezero
import mydezero.functions as F
import mydezero.layers as L
from mydezero import Variable

from _common import gradient_check


def _value_and_grads(f, arrays, package):
    """f(*arrays)의 값과, sum(y^2)를 역전파한 각 입력의 기울기 (package: mydezero 또는 dezero_kr)."""
    vs = [package.Variable(a) for a in arrays]
    y = f(*vs)
    package.functions.sum(y * y).backward()
    return [y.data] + [v.grad.data for v in vs]


def check_against_package():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 7, 7))
    W = rng.standard_normal((4, 3, 3, 3))
    b = rng.standard_normal(4)
    for stride, pad in ((1, 0), (1, 1), (2, 1)):
        mine = _value_and_grads(lambda *v: F.conv2d(*v, stride, pad), (x, W, b),
                                mydezero)
        ref = _value_and_grads(lambda *v: RF.conv2d(*v, stride=stride, pad=pad),
                               (x, W, b), dezero_kr)
        for a, r in zip(mine, ref):
            np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)
    assert gradient_check(lambda v: F.conv2d(v, W, b, 2, 1), x)
    assert gradient_check(lambda v: F.conv2d(x, v, b, 2, 1), W)
    assert gradient_check(lambda v: F.conv2d(x, W, v, 2, 1), b)
    print('Conv2d 확인: 설정 세 가지에서 F.conv2d와 값과 기울기가 같고 수치 미분과 일치')


def show_deconv(rng):
    """deconv2d의 모양, conv2d와의 전치 관계, 기준 패키지와의 비교,
    L.Deconv2d."""
    x = rng.standard_normal((1, 2, 4, 4))
    W = rng.standard_normal((2, 3, 3, 3))  # (C, OC, KH, KW): 입력 채널이 먼저
    y = F.deconv2d(x, W, stride=2, pad=1)
    ref = RF.deconv2d(x, W, stride=2, pad=1)
    np.testing.assert_allclose(y.data, ref.data, rtol=1e-12)
    g = rng.standard_normal(y.shape)
    lhs = float(np.sum(F.conv2d(g, W, stride=2, pad=1).data * x))
    rhs = float(np.sum(y.data * g))
    print(f'\ndeconv2d: x {x.shape}, W {W.shape}, 스트라이드 2, 패딩 1'
          f' -> y {y.shape}')
    print('  <conv2d(g, W), x> == <g, deconv2d(x, W)> (서로 전치):',
          bool(np.isclose(lhs, rhs, rtol=1e-12)))
    print('  gradient_check(deconv2d, x 쪽):',
          gradient_check(lambda v: F.deconv2d(v, W, stride=2, pad=1), x))
    np.random.seed(0)
    layer = L.Deconv2d(3, kernel_size=3, stride=2, pad=1)
    out = layer(x.astype(np.float32))
    print(f'L.Deconv2d(3, 3, stride=2, pad=1): 첫 입력 뒤 W {layer.W.shape}, '
          f'출력 {out.shape}')


if __name__ == '__main__':
    check_against_package()
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal((1, 3, 7, 7))
    x2 = rng.standard_normal((10, 3, 7, 7))
    print('im2col (1, 3, 7, 7), 커널 5x5 ->', F.im2col(x1, kernel_size=5).shape)
    print('im2col (10, 3, 7, 7), 커널 5x5 ->', F.im2col(x2, kernel_size=5).shape)

    N, C, H, W = 1, 5, 15, 15
    OC, K = 8, 3
    x = Variable(rng.standard_normal((N, C, H, W)))
    Wt = Variable(rng.standard_normal((OC, C, K, K)))
    b = Variable(rng.standard_normal(OC))
    y = F.conv2d(x, Wt, b, stride=1, pad=1)
    y.backward()
    print(f'\nconv2d: x {x.shape}, W {Wt.shape}, 패딩 1 -> y {y.shape}'
          f'\n  x.grad {x.grad.shape}, W.grad {Wt.grad.shape}, b.grad {b.grad.shape}')
    y_simple = F.conv2d_simple(x.data, Wt.data, b.data, stride=1, pad=1)
    print('conv2d == conv2d_simple (im2col + linear):',
          np.allclose(y.data, y_simple.data))
    small = rng.standard_normal((2, 2, 5, 5))
    W_small = rng.standard_normal((3, 2, 3, 3))
    print('gradient_check(conv2d, x 쪽, 스트라이드 2):',
          gradient_check(lambda v: F.conv2d(v, W_small, stride=2, pad=1), small))
    print('gradient_check(conv2d, W 쪽):',
          gradient_check(lambda w: F.conv2d(small, w, pad=1), W_small))

    np.random.seed(0)
    conv = L.Conv2d(4, kernel_size=3, pad=1)
    out = conv(x.data.astype(np.float32))
    print(f'L.Conv2d(4, 3, pad=1): 첫 입력 뒤 W {conv.W.shape} {conv.W.dtype}, '
          f'출력 {out.shape}')

    show_deconv(rng)
