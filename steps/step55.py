"""55단계: CNN의 구조 (1) -- 합성곱 출력 크기 계산

합성곱(convolution)은 작은 필터(커널)를 입력 이미지 위에서 미끄러뜨리며 겹치는 부분의 원소 곱의
합을 구한다. 출력의 크기는 세 가지로 정해진다.

* 커널 크기 K: 필터의 높이/너비
* 패딩 P: 입력 둘레에 0을 몇 줄 덧대는가 (가장자리도 커널 중심이 지나가게, 출력 크기 유지)
* 스트라이드 S: 필터를 한 번에 몇 칸씩 옮기는가

    출력 크기 OH = (H + 2P - K) // S + 1        (너비도 같은 식)

패딩까지 포함한 길이 H + 2P 안에 커널의 시작 위치가 0, S, 2S, ... 로 놓일 수 있고, 마지막 시작
위치는 H + 2P - K 이하여야 한다. 그 개수가 위 식이다(// 는 나머지를 버리는 나눗셈: 끝에 남은
칸이 커널보다 짧으면 쓰지 않는다). 이 단계에서 mydezero/utils.py에 더하는 get_conv_outsize(H, K, S, P)가
이 식이다(기준 패키지 dezero_kr.utils에도 같은 이름이 있다).

CNN은 합성곱층 뒤에 풀링층을 둔다(58단계의 VGG16도 블록마다 2x2 최대 풀링). 최대 풀링은 창마다
최댓값 하나만 남긴다. 그 재료 F.max(x, axis, keepdims)와 F.min을 이 단계에서 mydezero/functions.py에
직접 만든다(Function Max, Min. 역전파 모양은 mydezero/utils.py의 max_backward_shape). 순전파는 NumPy의
x.max, 역전파는 gy를 줄어든 축만 1인 모양으로 reshape해 x의 모양으로 broadcast_to한 뒤 최댓값이던
자리에만 남긴다(같은 값이 여럿이면 모두). 겹치지 않는 2x2 창(스트라이드 2)은 im2col(56단계) 없이
reshape로도 나눌 수 있다: (H, W) -> (H/2, 2, W/2, 2)로 바꾸고 축 (1, 3)의 F.max를 구하면 최대 풀링이고,
출력 크기는 커널 2, 스트라이드 2, 패딩 0의 get_conv_outsize와 같다. 기준 패키지의 F.pooling과 값,
기울기를 맞춰 본다.

출력에서 볼 것
* 여러 (H, K, S, P)에서 공식 값과, 커널 시작 위치를 하나씩 세어 본 값이 같다.
* 자주 쓰는 설정: K=3, P=1, S=1이면 크기가 그대로, S=2이면 절반(올림)이 된다.
* 4x4 이미지의 2x2 최대 풀링(reshape + F.max) == dezero_kr의 F.pooling, 기울기는 최댓값 자리에만 1
* F.min(x, axis=1, keepdims=True): 행마다 최솟값, 모양 (4, 1), 기울기는 최솟값 자리에만
"""
import numpy as np

import dezero_kr  # 기준 패키지
import dezero_kr.functions as RF
import mydezero.functions as F
from mydezero import Variable
from mydezero.utils import get_conv_outsize


def count_positions(H, K, S, P):
    """커널을 0, S, 2S, ... 위치에 놓아 보며
    패딩 포함 길이 H + 2P 안에 다 들어가는 횟수를 센다."""
    positions = []
    start = 0
    while start + K <= H + 2 * P:
        positions.append(start)
        start += S
    return len(positions), positions


def max_pool_2x2(x):
    """겹치지 않는 2x2 창의 최대 풀링:
    (H, W)를 (H/2, 2, W/2, 2)로 나눠 축 (1, 3)의 최댓값."""
    H, W = x.shape
    windows = F.reshape(x, (H // 2, 2, W // 2, 2))
    return F.max(windows, axis=(1, 3))


def show_max_and_min():
    img = Variable(np.array([[1.0, 2.0, 5.0, 0.0],
                             [3.0, 4.0, 1.0, 2.0],
                             [0.0, 1.0, 7.0, 8.0],
                             [2.0, 6.0, 9.0, 3.0]]))
    y = max_pool_2x2(img)
    F.sum(y).backward()
    # 기준 패키지의 pooling은 (N, C, H, W)를 받는다
    ref_in = dezero_kr.Variable(img.data[np.newaxis, np.newaxis])
    ref = RF.pooling(ref_in, kernel_size=2, stride=2)
    RF.sum(ref).backward()
    np.testing.assert_array_equal(y.data, ref.data[0, 0])
    np.testing.assert_array_equal(img.grad.data, ref_in.grad.data[0, 0])
    print('\n4x4 이미지:\n', img.data, sep='')
    print(f'2x2 최대 풀링 (reshape + F.max): y = {y.data.tolist()}'
          f'\n  출력 크기 get_conv_outsize(4, 2, 2, 0) = {get_conv_outsize(4, 2, 2, 0)}')
    print('  x.grad (최댓값 자리에만 1):\n', img.grad.data, sep='')
    print('  dezero_kr의 F.pooling(x, 2, 2)와 값, 기울기가 같다')
    img.cleargrad()
    m = F.min(img, axis=1, keepdims=True)
    F.sum(m).backward()
    print(f'F.min(x, axis=1, keepdims=True) = {m.data.ravel().tolist()}, 모양 {m.shape}')
    print('  x.grad (행마다 최솟값 자리에만 1):\n', img.grad.data, sep='')


if __name__ == '__main__':
    print(f'{"H":>4}{"K":>4}{"S":>4}{"P":>4}   공식 (H+2P-K)//S+1   직접 센 값   커널 시작 위치')
    for H, K, S, P in [(4, 3, 1, 1), (4, 3, 1, 0), (7, 3, 2, 0), (7, 3, 2, 1),
                       (8, 2, 2, 0),
                       (28, 5, 1, 0), (224, 3, 1, 1), (224, 7, 2, 3), (5, 3, 3, 0)]:
        n, positions = count_positions(H, K, S, P)
        if len(positions) <= 6:
            shown = positions
        else:
            shown = positions[:3] + ['...'] + positions[-2:]
        shown = ', '.join(map(str, shown))
        outsize = get_conv_outsize(H, K, S, P)
        print(f'{H:4d}{K:4d}{S:4d}{P:4d}   {outsize:18d}   {n:10d}   [{shown}]')

    print('\nK=3, P=1 일 때 입력 크기별 출력 크기 (S=1 / S=2):')
    for H in (5, 6, 7, 8, 32, 224):
        same, half = get_conv_outsize(H, 3, 1, 1), get_conv_outsize(H, 3, 2, 1)
        print(f'  H = {H:3d}:  S=1 -> {same:3d},  S=2 -> {half:3d}')
    show_max_and_min()
