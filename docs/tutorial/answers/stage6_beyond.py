"""60단계 너머(61~64단계) 연습 문제의 정답. docs/tutorial/beyond.md에 접혀서 보인다.

문제마다 스텁(``python steps/check.py stage6_beyond.N --stub``)이 요구하는 이름을
정의한다. 확인 코드는 steps/exercises/stage6_beyond.py 한 곳에 있고, 학습자의 답과
이 파일이 같은 확인을 지난다(tests/test_exercises.py).
"""
import numpy as np


# --- 문제 1 -------------------------------------------------------------------
def clip_by_global_norm(grads, max_norm):
    """모든 기울기를 한 벡터로 보고 노름을 잰다. 방향은 그대로 두고 길이만
    줄이므로, 여러 매개변수의 기울기 사이의 비율이 유지된다."""
    norm = float(np.sqrt(sum(np.sum(g ** 2) for g in grads)))
    scale = min(1.0, max_norm / norm) if norm > 0 else 1.0
    return [g * scale for g in grads], norm


# 손으로: ||g|| = sqrt(3^2 + 4^2 + 12^2) = 13, 모두 1/13배: (3/13, 4/13), (0,
# 12/13).
norm_before = 13.0
clipped = [[3 / 13, 4 / 13], [[0.0, 12 / 13]]]


# --- 문제 2 -------------------------------------------------------------------
def jacobian(x):
    """f = (x0 x1, sin x0 + x2, x1^2 x2)를 성분마다 편미분한다: J = [[x1, x0,
    0], [cos x0, 0, 1], [0, 2 x1 x2, x1^2]]. 순방향 모드(JVP)는 J t를, 역방향
    모드(VJP)는 u^T J를 한 번에 하나씩 계산한다: 단위 벡터를 넣으면 열과 행이
    나온다."""
    x0, x1, x2 = x
    return np.array([[x1, x0, 0.0],
                     [np.cos(x0), 0.0, 1.0],
                     [0.0, 2 * x1 * x2, x1 ** 2]])


# --- 문제 3 -------------------------------------------------------------------
# 대각 행렬이라 첫 좌표는 첫 좌표끼리만 곱해진다. a만 10개: 1.5^10 = 57.665...;
# a, b를 번갈아: (1.5 * 0.5)^5 = 0.75^5 = 0.2373.... 층마다 최대 특이값의
# 곱(상한)은 둘 다 1.5^10이지만, 실제 기울기는 방향에 따라 다르다.
grad_a_only = 1.5 ** 10
grad_alternating = 0.75 ** 5
