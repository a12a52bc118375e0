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

출력에서 볼 것
* 여러 (H, K, S, P)에서 공식 값과, 커널 시작 위치를 하나씩 세어 본 값이 같다.
* 자주 쓰는 설정: K=3, P=1, S=1이면 크기가 그대로, S=2이면 절반(올림)이 된다.
"""
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
