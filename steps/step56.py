"""56단계: CNN의 구조 (2) -- im2col: 합성곱을 행렬 곱 하나로

합성곱을 그대로 구현하면 (배치, 출력 채널, 출력 행, 출력 열, 입력 채널, 커널 행, 커널 열)의 일곱 겹
반복문이 된다. 파이썬 반복문은 느리므로, 커널이 놓이는 각 위치의 "창(window)"을 펼쳐 행렬의 한
행으로 늘어놓는다(im2col: image to column). 그러면 합성곱 전체가 행렬 곱 한 번이 된다.

    x (N, C, H, W) --im2col--> col (N*OH*OW, C*KH*KW)     한 행 = 창 하나를 펼친 것
    W (OC, C, KH, KW) --reshape--> (OC, C*KH*KW)
    y = col @ W^T  -> (N*OH*OW, OC) -> (N, OC, OH, OW)로 모양 정리

im2col과 col2im을 이 단계에서 직접 만든다. 커널 칸 (i, j)마다 한 번씩, 모든 출력 위치가 그 칸에서
보는 픽셀을 슬라이스 하나로 꺼낸다: img[:, :, i : i + S*OH : S, j : j + S*OW : S]. 반복은 K x K번뿐이고
나머지는 NumPy가 한다. col2im은 같은 슬라이스에 "더한다"(+=). 둘을 dezero_kr.functions_conv의
im2col_array, col2im_array와 비교하고, col2im이 im2col의 전치(adjoint)인지
<im2col(x), c> == <x, col2im(c)> 로 확인한다. (여기의 두 함수는 정사각형 커널만 받는다.)

패키지에는 같은 생각을 일반화해 mydezero/functions_conv.py(이 단계의 새 파일)에 직접 만든다:
직사각형 커널과 (SH, SW) 스트라이드, 모양 (N, C, KH, KW, OH, OW)을 그대로 돌려주는 to_matrix=False를
받는 im2col_array, col2im_array와, 미분할 수 있는 Function판 im2col, col2im(서로가 서로의
역전파: F.im2col로도 쓴다). 57단계의 conv2d와 pooling이 이것으로 창을 펼친다. 스크립트는 위의
다섯 가지 설정에서 패키지의 im2col_array, col2im_array도 같은 값을 내는지 함께 본다.

대가는 메모리다: 창이 겹치면 같은 픽셀이 col에 여러 번 복사된다(K x K 커널, 스트라이드 1이면
약 K^2배). im2col의 역전파는 col2im으로, 펼친 창들을 원래 자리에 "더해" 되돌린다. 여러 창에
들어간 픽셀은 그 기울기가 모두 더해진다.

im2col은 풀링에도 쓴다. 풀링은 창마다 하나의 값으로 줄인다(학습할 매개변수가 없다). 평균 풀링
average_pooling(x, kernel_size, stride, pad)도 이 단계에서 mydezero/functions_conv.py에 직접 만든다
(Function AveragePooling): 순전파는 im2col_array로 펼친 (N, C, KH, KW, OH, OW)의 (KH, KW) 평균,
역전파는 gy / (KH * KW)를 창의 모든 칸에 broadcast_to로 나눠 놓고 col2im으로 되돌린다(겹친 픽셀에는
쌓인다).
F.average_pooling으로도 쓴다. 창의 최댓값을 남기는 최대 풀링은 58단계(VGG16)에서 만든다.

그림: matplotlib이 있으면 현재 폴더에 step56_im2col.png(4x4 이미지의 3x3 창 하나와 col의 그 행)를 저장한다.

출력에서 볼 것
* 직접 만든 im2col, col2im == 패키지 (여러 채널, 패딩, 스트라이드), col2im이 im2col의 전치
* 0~15가 적힌 4x4 이미지를 3x3 커널로 펼친 col (4행 9열): 각 행이 한 창
* im2col + 행렬 곱의 결과와 반복문으로 직접 계산한 합성곱이 같다 (여러 채널, 패딩, 스트라이드 포함).
* col2im(1로 채운 col): 각 픽셀이 몇 개의 창에 들어갔는지 (가운데 픽셀일수록 많다)
* 실제 크기의 층에서 col이 입력보다 몇 배 큰지
* 평균 풀링 == dezero_kr의 F.average_pooling (값과 기울기), 4x4 이미지의 2x2 평균 풀링과 기울기
"""
import numpy as np

import dezero_kr  # 기준 패키지
from dezero_kr.functions import average_pooling
from dezero_kr.functions_conv import col2im_array, im2col_array
import mydezero.functions_conv as FC
from mydezero import Variable
from mydezero.utils import get_conv_outsize

from _common import save_figure


def im2col(x, kernel_size, stride=1, pad=0):
    """x (N, C, H, W) -> col (N*OH*OW, C*K*K).
    행 = 창 하나 (n, oh, ow 순), 열 = (c, kh, kw) 순."""
    N, C, H, W = x.shape
    K, S = kernel_size, stride
    OH = get_conv_outsize(H, K, S, pad)
    OW = get_conv_outsize(W, K, S, pad)
    img = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    col = np.empty((N, C, K, K, OH, OW), dtype=x.dtype)
    for i in range(K):
        for j in range(K):
            # 커널의 (i, j) 칸이 출력 (oh, ow)에서 보는 픽셀:
            # img[:, :, i + S*oh, j + S*ow]
            col[:, :, i, j] = img[:, :, i:i + S * OH:S, j:j + S * OW:S]
    col = col.transpose(0, 4, 5, 1, 2, 3)  # (N, OH, OW, C, K, K)
    return col.reshape(N * OH * OW, C * K * K)


def col2im(col, x_shape, kernel_size, stride=1, pad=0):
    """im2col의 역전파: 각 창의 값을 원래 자리에 더한다.
    겹친 픽셀에는 여러 창의 값이 쌓인다."""
    N, C, H, W = x_shape
    K, S = kernel_size, stride
    OH = get_conv_outsize(H, K, S, pad)
    OW = get_conv_outsize(W, K, S, pad)
    col = col.reshape(N, OH, OW, C, K, K).transpose(0, 3, 4, 5, 1, 2)
    img = np.zeros((N, C, H + 2 * pad, W + 2 * pad), dtype=col.dtype)
    for i in range(K):
        for j in range(K):
            img[:, :, i:i + S * OH:S, j:j + S * OW:S] += col[:, :, i, j]
    return img[:, :, pad:H + pad, pad:W + pad]  # 덧댄 0의 자리는 버린다


def check_against_package():
    """im2col, col2im == im2col_array, col2im_array (기준 패키지와 mydezero);
    <im2col(x), c> == <x, col2im(c)>."""
    rng = np.random.default_rng(1)
    for (N, C, H, K, S, P) in [(1, 1, 4, 3, 1, 0), (2, 3, 7, 3, 1, 1),
                               (2, 3, 7, 3, 2, 1),
                               (1, 2, 6, 2, 2, 0), (2, 2, 8, 5, 3, 2)]:
        x = rng.standard_normal((N, C, H, H))
        col = im2col(x, K, S, P)
        np.testing.assert_array_equal(col, im2col_array(x, K, S, P))
        c = rng.standard_normal(col.shape)
        back = col2im(c, x.shape, K, S, P)
        np.testing.assert_allclose(back, col2im_array(c, x.shape, K, S, P),
                                   rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(np.sum(col * c), np.sum(x * back), rtol=1e-12)
        # 패키지에 직접 만든 일반판도 같은 값
        np.testing.assert_array_equal(FC.im2col_array(x, K, S, P), col)
        np.testing.assert_allclose(FC.col2im_array(c, x.shape, K, S, P), back,
                                   rtol=1e-14, atol=1e-14)
    print('im2col, col2im 확인: 패키지와 같고 (채널, 패딩, 스트라이드 다섯 가지),'
          '\n  <im2col(x), c> == <x, col2im(c)>')


def draw_im2col(axes):
    """왼쪽: 0~15가 적힌 4x4 이미지와 창 하나(빨강). 오른쪽: col(4x9)에서 그 창이 펼쳐진 행."""
    image, matrix = axes
    x = np.arange(16).reshape(4, 4)
    col = im2col(x.reshape(1, 1, 4, 4).astype(float), 3)
    row = 1  # 두 번째 창: 왼쪽 위 모서리가 (0, 1)
    for ax, values, title in ((image, x, 'image 4x4'), (matrix, col, 'col (4 x 9)')):
        ax.imshow(np.zeros_like(values), cmap='Greys', vmin=0, vmax=1)
        for (r, c), v in np.ndenumerate(values):
            ax.text(c, r, f'{int(v)}', ha='center', va='center', fontsize=9)
        ax.set_xticks(np.arange(values.shape[1] + 1) - 0.5, minor=True)
        ax.set_yticks(np.arange(values.shape[0] + 1) - 0.5, minor=True)
        ax.grid(which='minor', color='gray')
        ax.tick_params(which='both', length=0, labelbottom=False, labelleft=False)
        ax.set_title(title)
    image.add_patch(_box(xy=(0.5, -0.5), width=3, height=3))
    matrix.add_patch(_box(xy=(-0.5, row - 0.5), width=9, height=1))
    matrix.set_ylabel('one row = one 3x3 window')


def _box(**kwargs):
    from matplotlib.patches import Rectangle  # matplotlib이 있을 때만 (그림을 그릴 때) 부른다
    return Rectangle(fill=False, edgecolor='red', linewidth=2.5, **kwargs)


def conv_by_loops(x, W, stride, pad):
    """정의 그대로의 합성곱 (느리지만 틀릴 곳이 없다)."""
    N, C, H, Wd = x.shape
    OC, _, KH, KW = W.shape
    OH = get_conv_outsize(H, KH, stride, pad)
    OW = get_conv_outsize(Wd, KW, stride, pad)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((N, OC, OH, OW))
    for n in range(N):
        for oc in range(OC):
            for i in range(OH):
                for j in range(OW):
                    top, left = i * stride, j * stride
                    window = xp[n, :, top:top + KH, left:left + KW]
                    y[n, oc, i, j] = np.sum(window * W[oc])
    return y


def conv_by_im2col(x, W, stride, pad):
    N, C, H, Wd = x.shape
    OC, _, KH, KW = W.shape
    OH = get_conv_outsize(H, KH, stride, pad)
    OW = get_conv_outsize(Wd, KW, stride, pad)
    col = im2col(x, KH, stride, pad)                # (N*OH*OW, C*KH*KW)
    # (N*OH*OW, OC): 행렬 곱 한 번
    y = col @ W.reshape(OC, -1).T
    return y.reshape(N, OH, OW, OC).transpose(0, 3, 1, 2)


def check_average_pooling():
    """FC.average_pooling == dezero_kr의 average_pooling (값과 sum(y^2)의 기울기)."""
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 7))
    for K, S, P in ((2, 2, 0), (3, 2, 1), (3, 1, 0)):
        grads = []
        for V, pool in ((Variable, FC.average_pooling),
                        (dezero_kr.Variable, average_pooling)):
            v = V(x)
            y = pool(v, K, S, P)
            (y * y).sum().backward()
            grads.append((y.data, v.grad.data))
        (y1, g1), (y2, g2) = grads
        np.testing.assert_allclose(y1, y2, rtol=1e-12)
        np.testing.assert_allclose(g1, g2, rtol=1e-12)
    print('\naverage_pooling 확인: 설정 세 가지에서 dezero_kr와 값과 기울기가 같다')


def show_average_pooling():
    img = Variable(np.array([[[[1.0, 2.0, 5.0, 0.0],
                                [3.0, 4.0, 1.0, 2.0],
                                [0.0, 1.0, 7.0, 8.0],
                                [2.0, 6.0, 9.0, 3.0]]]]))
    y = FC.average_pooling(img, kernel_size=2, stride=2)
    y.backward()
    print('4x4 이미지의 2x2 평균 풀링: y =', y.data[0, 0].tolist())
    print('  x.grad (창 전체에 1 / 4):\n', img.grad.data[0, 0], sep='')


if __name__ == '__main__':
    check_against_package()
    x = np.arange(16, dtype=float).reshape(1, 1, 4, 4)
    print('입력 이미지 (4x4):')
    print(x[0, 0])
    col = im2col(x, kernel_size=3, stride=1, pad=0)
    print(f'\nim2col(커널 3x3, 스트라이드 1, 패딩 0) -> col {col.shape}: 행 하나가 3x3 창 하나')
    print(col)

    rng = np.random.default_rng(0)
    print('\n반복문 합성곱과 im2col 합성곱 비교:')
    for (N, C, H, OC, K, S, P) in [(1, 1, 4, 1, 3, 1, 0), (2, 3, 7, 4, 3, 1, 1),
                                   (2, 3, 7, 4, 3, 2, 1),
                                   (1, 2, 6, 2, 2, 2, 0)]:
        x = rng.standard_normal((N, C, H, H))
        W = rng.standard_normal((OC, C, K, K))
        y1, y2 = conv_by_loops(x, W, S, P), conv_by_im2col(x, W, S, P)
        print(f'  x {x.shape}, W {W.shape}, S={S}, P={P} -> y {y2.shape}: '
              f'같은가 {np.allclose(y1, y2)}')

    # im2col의 역전파 col2im: 각 창의 기울기를 원래 자리에 더한다. 1을 넣으면 "겹친 횟수"가 나온다
    ones = np.ones((4, 9))
    print('\ncol2im(1로 채운 col): 각 픽셀이 들어간 창의 개수')
    print(col2im(ones, (1, 1, 4, 4), kernel_size=3, stride=1, pad=0)[0, 0])

    N, C, H, K = 32, 64, 56, 3
    OH = get_conv_outsize(H, K, 1, 1)
    n_in, n_col = N * C * H * H, N * OH * OH * C * K * K
    print(f'\n배치 {N}, 채널 {C}, {H}x{H}, 커널 {K}x{K}, 패딩 1: 입력 {n_in:,}개 원소'
          f'\n  -> col {n_col:,}개 ({n_col / n_in:.0f}배, '
          f'float32로 {n_col * 4 / 2**20:.0f} MiB)')
    check_average_pooling()
    show_average_pooling()
    save_figure(draw_im2col, 'step56_im2col.png', ncols=2)
