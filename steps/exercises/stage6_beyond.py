"""60단계 너머(61~64단계) 연습 문제의 확인: docs/tutorial/beyond.md의 "연습 문제"."""
import numpy as np

from dezero_kr import Parameter, Variable
from dezero_kr.autograd import jvp, vjp
from dezero_kr.functions import sin, stack
from dezero_kr.grad_clip import clip_grad_norm

from . import exercise

STUB_CLIP = '''
"""60단계 너머 문제 1: 전역 노름으로 기울기 자르기 (61단계).

모든 기울기를 이어 붙인 벡터의 노름 ||g||가 max_norm보다 크면 모든 기울기에
max_norm / ||g||를 곱한다. 작거나 같으면 그대로 둔다.
"""
import numpy as np


def clip_by_global_norm(grads, max_norm):
    """grads: ndarray 목록. (자른 ndarray 목록, 자르기 전의 전역 노름 float)을 돌려준다."""
    raise NotImplementedError


# 기울기 (3, 4)와 (0, 12)를 전역 노름 1로 자르면
norm_before = ...   # 자르기 전 노름
clipped = ...       # [자른 첫 기울기, 자른 둘째 기울기] (목록 두 개)
'''


@exercise(1, '전역 노름으로 자르기', STUB_CLIP)
def check_clip(t):
    clip = t.get('clip_by_global_norm')
    rng = np.random.default_rng(7)
    cases = [[np.array([3.0, 4.0]), np.array([[0.0, 12.0]])],
             [rng.standard_normal((2, 3)), rng.standard_normal(4)],
             [np.array([0.1, 0.2]), np.array([[0.05]])]]  # 노름이 1보다 작다: 그대로
    for i, grads in enumerate(cases):
        params = [Parameter(np.zeros_like(g)) for g in grads]
        for p, g in zip(params, grads):
            p.grad = Variable(g.copy())
        norm = clip_grad_norm(params, 1.0, eps=0.0)
        with t.part(f'clip_by_global_norm(경우 {i + 1}, 1.0)'):
            got, got_norm = clip([g.copy() for g in grads], 1.0)
        t.close(f'경우 {i + 1}: 자르기 전 노름 (clip_grad_norm과 비교)', got_norm, norm,
                rtol=1e-14)
        for j, p in enumerate(params):
            t.close(f'경우 {i + 1}: 자른 기울기 {j} (clip_grad_norm과 비교)', got[j], p.grad.data,
                    rtol=1e-14)
    t.close('norm_before (손으로)', t.get('norm_before'), 13.0, rtol=1e-12)
    clipped = t.get('clipped')
    t.close('clipped[0] (손으로)', np.reshape(clipped[0], (2,)), [3 / 13, 4 / 13],
            rtol=1e-9)
    t.close('clipped[1] (손으로)', np.reshape(clipped[1], (1, 2)), [[0.0, 12 / 13]],
            rtol=1e-9)


def f(x):
    """f(x) = (x0 x1, sin(x0) + x2, x1^2 x2): 62단계의 예."""
    return stack([x[0] * x[1], sin(x[0]) + x[2], x[1] ** 2 * x[2]])


STUB_JAC = '''
"""60단계 너머 문제 2: f(x) = (x0 x1, sin(x0) + x2, x1^2 x2)의 야코비 행렬을 손으로.

jvp(f, (x,), (e_j,))가 그 j번째 열을, vjp(f, x, v=e_i)가 i번째 행을 내는지 확인된다.
"""
import numpy as np


def jacobian(x):
    """x: 원소 3개의 ndarray -> 3x3 ndarray, J[i, j] = df_i / dx_j."""
    raise NotImplementedError
'''


@exercise(2, '야코비 행렬: JVP는 열, VJP는 행', STUB_JAC)
def check_jacobian(t):
    jacobian = t.get('jacobian')
    for x0 in (np.array([0.5, -1.0, 2.0]), np.array([-1.3, 0.7, 0.2])):
        with t.part(f'jacobian({x0.tolist()})'):
            J = np.asarray(jacobian(x0.copy()), dtype=float)
        t.equal(f'jacobian({x0.tolist()})의 모양', J.shape, (3, 3))
        for j in range(3):
            _, col = jvp(f, (x0,), (np.eye(3)[j],))
            t.close(f'x = {x0.tolist()}: J의 {j}번째 열 (jvp와 비교)', J[:, j], col.data,
                    rtol=1e-14, atol=1e-15)
            _, row = vjp(f, x0, v=np.eye(3)[j])
            t.close(f'x = {x0.tolist()}: J의 {j}번째 행 (vjp와 비교)', J[j], row.data,
                    rtol=1e-14, atol=1e-15)


STUB_DIAG = '''
"""60단계 너머 문제 3: 63단계의 대각 행렬 층 a = diag(1.5, 0.5), b = diag(0.5, 1.5).

10개를 쌓고 출력 기울기 (1, 0)을 거슬러 보낼 때 입력 쪽 기울기의 첫 성분.
"""

grad_a_only = ...         # a만 10개
grad_alternating = ...    # a, b를 번갈아 10개 (a, b, a, b, ...)
'''


@exercise(3, '대각 행렬 층의 기울기', STUB_DIAG)
def check_diag(t):
    a, b = np.diag([1.5, 0.5]), np.diag([0.5, 1.5])
    for name, layers in (('grad_a_only', [a] * 10), ('grad_alternating', [a, b] * 5)):
        x = Variable(np.array([[1.0, 1.0]]))
        h = x
        for W in layers:
            h = h @ W
        h[:, 0].sum().backward()  # 출력 기울기 (1, 0)
        t.close(f'{name} (역전파한 x.grad의 첫 성분과 비교)', t.get(name), x.grad.data[0, 0],
                rtol=1e-9)
