"""제2고지(11~22단계) 연습 문제의 정답.

각 함수는 인수 없이 불리고, 문제가 요구한 것을 스스로 assert로 확인한다
(tests/test_exercises.py가 모두 실행한다). 학습자가 만든 steps/의 코드를 그대로 가져다 쓴다.
"""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / 'steps'))

import step14  # noqa: E402  (위의 경로가 있어야 가져올 수 있다)
import step16  # noqa: E402
import step18  # noqa: E402
import step22  # noqa: E402


def skip_graph(m, x_value):
    """a = x^2, b = a^2, y = b + a: a가 두 곳에 쓰이는 (건너뛰는 연결이 있는)
    그래프."""
    x = m.Variable(np.array(x_value))
    a = m.square(x)
    b = m.square(a)
    y = m.add(b, a)
    return x, a, b, y


def exercise_1():
    """14단계 방식은 이 그래프에서 dy/dx를 얼마로 계산하는가? (x = 1, 정답 4x^3
    + 2x = 6)

    y.backward()는 add를 처리해 b.grad = 1, a.grad = 1을 만들고, 목록 끝의
    a=x^2를 먼저 꺼낸다: x.grad = 2x * 1 = 2. 그다음 b=a^2가 a.grad에 2a * 1 =
    2를 더해 3이 되고, a=x^2를 다시 처리해 x.grad에 2x * 3 = 6을 더한다. 합계 8
    (a=x^2가 두 번, 처음에는 반만 모인 채로).
    """
    x, *_, y = skip_graph(step14, 1.0)
    y.backward()
    assert x.grad == 8.0
    x, *_, y = skip_graph(step16, 1.0)
    y.backward()
    assert x.grad == 6.0 == 4 * 1.0 ** 3 + 2 * 1.0


def exercise_2():
    """같은 그래프에서 16단계의 세대: x 0, a 1, b 2, y 3. 함수는 a=x^2 0, b=a^2
    1, add 2."""
    x, a, b, y = skip_graph(step16, 2.0)
    assert [v.generation for v in (x, a, b, y)] == [0, 1, 2, 3]
    assert [v.creator.generation for v in (a, b, y)] == [0, 1, 2]
    y.backward()
    assert x.grad == 4 * 2.0 ** 3 + 2 * 2.0 == 36.0


def exercise_3():
    """22단계의 연산자만으로 sigmoid(x) = 1 / (1 + exp(-x))를 쓰고 미분이 s(1 -
    s)인지 본다."""
    def sigmoid(x):
        return 1 / (1 + step22.exp(-x))

    for value in (-2.0, 0.0, 0.5, 3.0):
        x = step22.Variable(np.array(value))
        y = sigmoid(x)
        y.backward()
        s = 1 / (1 + np.exp(-value))
        np.testing.assert_allclose(y.data, s, rtol=1e-15)
        np.testing.assert_allclose(x.grad, s * (1 - s), rtol=1e-14)
        num = step22.numerical_diff(sigmoid, step22.Variable(np.array(value)))
        np.testing.assert_allclose(x.grad, num, rtol=1e-8)
    x = step22.Variable(np.array(0.0))
    sigmoid(x).backward()
    assert x.grad == 0.25  # 최대 기울기 (더 깊이: 기울기 소실)


def exercise_4():
    """no_grad 안에서 만든 변수는 creator가 없어 역전파가 x까지 가지 않는다."""
    x = step18.Variable(np.array(3.0))
    with step18.no_grad():
        y = step18.square(x)
    assert y.creator is None and y.data == 9.0
    y.backward()
    assert x.grad is None
    z = step18.square(x)
    z.backward()
    assert z.creator is not None and x.grad == 6.0
