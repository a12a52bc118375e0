"""제2고지(11~24단계) 연습 문제의 정답. docs/tutorial/stage2.md에 접혀서 보인다.

문제마다 스텁(``python steps/check.py stage2.N --stub``)이 요구하는 이름을 정의한다.
확인 코드는 steps/exercises/stage2.py 한 곳에 있고, 학습자의 답과 이 파일이 같은
확인을 지난다(tests/test_exercises.py). 학습자가 만든 steps/의 코드를 그대로 쓴다.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / 'steps'))

from step22 import exp  # noqa: E402  (위의 경로가 있어야 가져올 수 있다)

# --- 문제 1 -------------------------------------------------------------------
# 14단계: y.backward()는 add를 처리해 b.grad = 1, a.grad = 1을 만들고, 목록 끝의
# a=x^2를 먼저 꺼낸다: x.grad = 2x * 1 = 2. 그다음 b=a^2가 a.grad에 2a * 1 = 2를
# 더해 3이 되고, a=x^2를 다시 처리해 x.grad에 2x * 3 = 6을 더한다. 합계 8
# (a=x^2가 두 번, 처음에는 반만 모인 채로). 16단계는 세대순이라 a=x^2를 한 번,
# 다 모인 뒤에 처리한다: 4x^3 + 2x = 6.
grad_step14 = 8.0
grad_step16 = 6.0

# --- 문제 2 -------------------------------------------------------------------
# 변수의 세대 = 만든 함수의 세대 + 1, 함수의 세대 = 입력 세대의 최댓값. x 0, a
# 1, b 2, y 3 (y = b + a는 더 큰 b를 따른다). 함수: a=x^2 0, b=a^2 1, add 2.
variable_generations = [0, 1, 2, 3]
function_generations = [0, 1, 2]


# --- 문제 3 -------------------------------------------------------------------
def sigmoid(x):
    """-x, 1 + ..., 1 / ...는 22단계의 연산자 오버로드(neg, radd, rdiv)다.
    미분은 s(1 - s)이고 x = 0에서 최대 0.25 (더 깊이: 기울기 소실)."""
    return 1 / (1 + exp(-x))


grad_at_zero = 0.25

# --- 문제 4 -------------------------------------------------------------------
# no_grad 안에서는 연결을 기록하지 않아 y.creator가 없다. 역전파가 y에서
# 멈추므로 x.grad는 None으로 남는다. 밖에서 만든 z는 연결이 있어 dz/dx = 2x = 6.
creator_inside = None
grad_inside = None
grad_outside = 6.0
