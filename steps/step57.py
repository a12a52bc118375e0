"""57단계: conv2d 함수와 풀링 함수

56단계에서 본 im2col + 행렬 곱을 미분 가능한 함수로 묶은 것이 F.conv2d이다. 입력은 NCHW
(배치, 채널, 높이, 너비) 4차원 배열이다.

    y = F.conv2d(x, W, b, stride=1, pad=0)   x (N, C, H, W), W (OC, C, KH, KW), b (OC,) -> (N, OC, OH, OW)
    L.Conv2d(out_channels, kernel_size, stride, pad)   W를 가진 계층 (입력 채널 수는 첫 입력에서 정해진다)

풀링은 창마다 하나의 값으로 줄인다(학습할 매개변수가 없다).

    F.pooling(x, kernel_size, stride)          최대 풀링: 창의 최댓값.  역전파: 최댓값 자리에만 기울기
    F.average_pooling(x, kernel_size, stride)  평균 풀링: 창의 평균.  역전파: 창 전체에 gy / 창 크기

F.im2col(x, kernel_size)도 함수로 쓸 수 있다: 펼친 행렬 (N*OH*OW, C*KH*KW)을 돌려주고 역전파는
col2im이다. F.conv2d_simple은 im2col + linear로 합성곱을 조립한 교육용 버전으로 결과가 같다.

출력에서 볼 것
* im2col 결과의 모양: (1, 3, 7, 7)을 5x5로 펼치면 (9, 75), 배치 10이면 (90, 75)
* conv2d의 출력 모양과 역전파된 x.grad, W.grad의 모양, conv2d == conv2d_simple, 수치 미분과 일치
* 4x4 이미지의 2x2 최대/평균 풀링 값과 역전파된 기울기 (최대 풀링은 최댓값 자리에만 1)
"""
import numpy as np

import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import Variable
from dezero_kr.utils import gradient_check


if __name__ == '__main__':
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
    print(f'\nconv2d: x {x.shape}, W {Wt.shape}, 패딩 1 -> y {y.shape};'
          f' x.grad {x.grad.shape}, W.grad {Wt.grad.shape}, b.grad {b.grad.shape}')
    y_simple = F.conv2d_simple(x.data, Wt.data, b.data, stride=1, pad=1)
    print('conv2d == conv2d_simple (im2col + linear):', np.allclose(y.data, y_simple.data))
    small = rng.standard_normal((2, 2, 5, 5))
    W_small = rng.standard_normal((3, 2, 3, 3))
    print('gradient_check(conv2d, x 쪽, 스트라이드 2):',
          gradient_check(lambda v: F.conv2d(v, W_small, stride=2, pad=1), small))
    print('gradient_check(conv2d, W 쪽):', gradient_check(lambda w: F.conv2d(small, w, pad=1), W_small))

    np.random.seed(0)
    conv = L.Conv2d(4, kernel_size=3, pad=1)
    out = conv(x.data.astype(np.float32))
    print(f'L.Conv2d(4, 3, pad=1): 첫 입력 뒤 W {conv.W.shape} {conv.W.dtype}, 출력 {out.shape}')

    img = Variable(np.array([[[[1.0, 2.0, 5.0, 0.0],
                                [3.0, 4.0, 1.0, 2.0],
                                [0.0, 1.0, 7.0, 8.0],
                                [2.0, 6.0, 9.0, 3.0]]]]))
    print('\n4x4 이미지:\n', img.data[0, 0], sep='')
    for name, pool in (('최대 풀링', F.pooling), ('평균 풀링', F.average_pooling)):
        img.cleargrad()
        y = pool(img, kernel_size=2, stride=2)
        y.backward()
        print(f'{name} 2x2: y = {y.data[0, 0].tolist()}')
        print('  x.grad =', img.grad.data[0, 0].tolist())
