"""56단계: CNN의 구조 (2) -- im2col: 합성곱을 행렬 곱 하나로

합성곱을 그대로 구현하면 (배치, 출력 채널, 출력 행, 출력 열, 입력 채널, 커널 행, 커널 열)의 일곱 겹
반복문이 된다. 파이썬 반복문은 느리므로, 커널이 놓이는 각 위치의 "창(window)"을 펼쳐 행렬의 한
행으로 늘어놓는다(im2col: image to column). 그러면 합성곱 전체가 행렬 곱 한 번이 된다.

    x (N, C, H, W) --im2col--> col (N*OH*OW, C*KH*KW)     한 행 = 창 하나를 펼친 것
    W (OC, C, KH, KW) --reshape--> (OC, C*KH*KW)
    y = col @ W^T  -> (N*OH*OW, OC) -> (N, OC, OH, OW)로 모양 정리

대가는 메모리다: 창이 겹치면 같은 픽셀이 col에 여러 번 복사된다(K x K 커널, 스트라이드 1이면
약 K^2배). im2col의 역전파는 col2im으로, 펼친 창들을 원래 자리에 "더해" 되돌린다. 여러 창에
들어간 픽셀은 그 기울기가 모두 더해진다.

출력에서 볼 것
* 0~15가 적힌 4x4 이미지를 3x3 커널로 펼친 col (4행 9열): 각 행이 한 창
* im2col + 행렬 곱의 결과와 반복문으로 직접 계산한 합성곱이 같다 (여러 채널, 패딩, 스트라이드 포함).
* col2im(1로 채운 col): 각 픽셀이 몇 개의 창에 들어갔는지 (가운데 픽셀일수록 많다)
* 실제 크기의 층에서 col이 입력보다 몇 배 큰지
"""
import numpy as np

from dezero_kr.functions_conv import col2im_array, im2col_array
from dezero_kr.utils import get_conv_outsize


def conv_by_loops(x, W, stride, pad):
    """정의 그대로의 합성곱 (느리지만 틀릴 곳이 없다)."""
    N, C, H, Wd = x.shape
    OC, _, KH, KW = W.shape
    OH, OW = get_conv_outsize(H, KH, stride, pad), get_conv_outsize(Wd, KW, stride, pad)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((N, OC, OH, OW))
    for n in range(N):
        for oc in range(OC):
            for i in range(OH):
                for j in range(OW):
                    window = xp[n, :, i * stride:i * stride + KH, j * stride:j * stride + KW]
                    y[n, oc, i, j] = np.sum(window * W[oc])
    return y


def conv_by_im2col(x, W, stride, pad):
    N, C, H, Wd = x.shape
    OC, _, KH, KW = W.shape
    OH, OW = get_conv_outsize(H, KH, stride, pad), get_conv_outsize(Wd, KW, stride, pad)
    col = im2col_array(x, (KH, KW), stride, pad)   # (N*OH*OW, C*KH*KW)
    y = col @ W.reshape(OC, -1).T                   # (N*OH*OW, OC): 행렬 곱 한 번
    return y.reshape(N, OH, OW, OC).transpose(0, 3, 1, 2)


if __name__ == '__main__':
    x = np.arange(16, dtype=float).reshape(1, 1, 4, 4)
    print('입력 이미지 (4x4):')
    print(x[0, 0])
    col = im2col_array(x, kernel_size=3, stride=1, pad=0)
    print(f'\nim2col(커널 3x3, 스트라이드 1, 패딩 0) -> col {col.shape}: 행 하나가 3x3 창 하나')
    print(col)

    rng = np.random.default_rng(0)
    print('\n반복문 합성곱과 im2col 합성곱 비교:')
    for (N, C, H, OC, K, S, P) in [(1, 1, 4, 1, 3, 1, 0), (2, 3, 7, 4, 3, 1, 1), (2, 3, 7, 4, 3, 2, 1),
                                   (1, 2, 6, 2, 2, 2, 0)]:
        x = rng.standard_normal((N, C, H, H))
        W = rng.standard_normal((OC, C, K, K))
        y1, y2 = conv_by_loops(x, W, S, P), conv_by_im2col(x, W, S, P)
        print(f'  x {x.shape}, W {W.shape}, 스트라이드 {S}, 패딩 {P} -> y {y2.shape}: '
              f'같은가 {np.allclose(y1, y2)}')

    # im2col의 역전파 col2im: 각 창의 기울기를 원래 자리에 더한다. 1을 넣으면 "겹친 횟수"가 나온다
    ones = np.ones((4, 9))
    print('\ncol2im(1로 채운 col): 각 픽셀이 들어간 창의 개수')
    print(col2im_array(ones, (1, 1, 4, 4), kernel_size=3, stride=1, pad=0)[0, 0])

    N, C, H, K = 32, 64, 56, 3
    OH = get_conv_outsize(H, K, 1, 1)
    n_in, n_col = N * C * H * H, N * OH * OH * C * K * K
    print(f'\n배치 {N}, 채널 {C}, {H}x{H}, 커널 {K}x{K}, 패딩 1: 입력 {n_in:,}개 원소 -> col {n_col:,}개 '
          f'({n_col / n_in:.0f}배, float32로 {n_col * 4 / 2**20:.0f} MiB)')
