"""60단계 너머(61~64단계) 연습 문제의 정답.

각 함수는 인수 없이 불리고, 문제가 요구한 것을 스스로 assert로 확인한다
(tests/test_exercises.py가 모두 실행한다).
"""
import numpy as np

from dezero_kr import Parameter, Variable
from dezero_kr.autograd import jvp, vjp
from dezero_kr.functions import sin, stack
from dezero_kr.grad_clip import clip_grad_norm


def exercise_1():
    """기울기 (3, 4)와 (0, 12)를 전역 노름 1로 자르면? 노름 13, 모두 1/13배.

    손으로: ||g|| = sqrt(3^2 + 4^2 + 12^2) = 13, 결과 (3/13, 4/13), (0, 12/13).
    """
    p, q = Parameter(np.zeros(2)), Parameter(np.zeros((1, 2)))
    p.grad = Variable(np.array([3.0, 4.0]))
    q.grad = Variable(np.array([[0.0, 12.0]]))
    norm = clip_grad_norm([p, q], 1.0, eps=0.0)
    assert norm == 13.0
    np.testing.assert_allclose(p.grad.data, [3 / 13, 4 / 13], rtol=1e-15)
    np.testing.assert_allclose(q.grad.data, [[0.0, 12 / 13]], rtol=1e-15)
    total = np.sqrt(np.sum(p.grad.data ** 2) + np.sum(q.grad.data ** 2))
    np.testing.assert_allclose(total, 1.0, rtol=1e-15)


def f(x):
    """f(x) = (x0 x1, sin(x0) + x2, x1^2 x2): 62단계의 예."""
    return stack([x[0] * x[1], sin(x[0]) + x[2], x[1] ** 2 * x[2]])


def exercise_2():
    """f의 야코비 행렬을 손으로 쓰고, 순방향 모드(JVP)와 역방향 모드(VJP)가 그
    열과 행인지 본다.

    J = [[x1, x0, 0], [cos x0, 0, 1], [0, 2 x1 x2, x1^2]].
    """
    x0 = np.array([0.5, -1.0, 2.0])
    J = np.array([[x0[1], x0[0], 0.0],
                  [np.cos(x0[0]), 0.0, 1.0],
                  [0.0, 2 * x0[1] * x0[2], x0[1] ** 2]])
    for j in range(3):
        _, col = jvp(f, (x0,), (np.eye(3)[j],))
        np.testing.assert_allclose(col.data, J[:, j], rtol=1e-15)
        _, row = vjp(f, x0, v=np.eye(3)[j])
        np.testing.assert_allclose(row.data, J[j], rtol=1e-15)
    # 두 모드의 관계: <J t, u> = <t, u^T J>
    t, u = np.array([1.0, 2.0, -1.0]), np.array([0.5, 0.0, 3.0])
    _, jt = jvp(f, (x0,), (t,))
    _, uj = vjp(f, x0, v=u)
    left, right = np.dot(jt.data, u), np.dot(t, uj.data)
    np.testing.assert_allclose(left, right, rtol=1e-14)


def exercise_3():
    """63단계의 대각 행렬 층: a = diag(1.5, 0.5), b = diag(0.5, 1.5). 기울기 (1,
    0)을 거슬러 보내면?

    a만 10개: 첫 좌표에 1.5가 10번 -> 1.5^10 = 57.665...; a, b를 번갈아 10개:
    1.5 * 0.5가 5번 -> 0.75^5 = 0.2373.... 최대 특이값의 곱(상한)은 둘 다
    1.5^10.
    """
    a, b = np.diag([1.5, 0.5]), np.diag([0.5, 1.5])
    for layers, expected in (([a] * 10, 1.5 ** 10), ([a, b] * 5, 0.75 ** 5)):
        x = Variable(np.array([[1.0, 1.0]]))
        h = x
        for W in layers:
            h = h @ W
        y = h[:, 0].sum()  # 출력 기울기 (1, 0)
        y.backward()
        np.testing.assert_allclose(x.grad.data, [[expected, 0.0]], rtol=1e-15)
        bound = np.prod([np.linalg.norm(W, 2) for W in layers])
        np.testing.assert_allclose(bound, 1.5 ** 10, rtol=1e-15)
