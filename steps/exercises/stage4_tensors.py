"""제4고지 37~41단계(텐서를 다루는 함수) 연습 문제의 확인: stage4.md의 "37~41단계 연습 문제".

부품을 만드는 문제(Mean, Transpose)의 답은 학습자가 만드는 패키지 ``mydezero``로 쓴다.
그래서 답에 넘기는 Variable도 mydezero의 것이다. 손으로 푸는 문제의 기대값은 기준
패키지 ``dezero_kr``로 계산한다.
"""
import numpy as np

import dezero_kr
import mydezero.functions as F
from mydezero import Variable

from . import central_diff, exercise

STUB_MEAN = '''
"""텐서 문제 1: 평균 함수 Mean(axis), keepdims=True.

평균 낸 원소 수를 n이라 하면 dy/dx_i = 1/n. axis는 정수나 정수 튜플.
"""
import numpy as np

import mydezero.functions as F
from mydezero import Function


class Mean(Function):
    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        raise NotImplementedError

    def backward(self, gy):
        """x와 같은 모양의 기울기 (F.broadcast_to를 쓰면 다시 미분할 수 있다)."""
        raise NotImplementedError
'''


@exercise(1, 'Mean 함수', STUB_MEAN)
def check_mean(t):
    Mean = t.get('Mean')
    x0 = np.arange(24.0).reshape(2, 3, 4) / 5
    w = np.random.default_rng(6).standard_normal((2, 3, 4))
    for axis in (0, 2, (0, 2)):
        x = Variable(x0.copy())
        with t.part(f'Mean({axis})의 순전파'):
            y = Mean(axis)(x)
        t.close(f'Mean({axis})(x)의 값 (x.mean(axis, keepdims=True)와 비교)', y,
                x0.mean(axis=axis, keepdims=True), rtol=1e-14)
        wy = w.mean(axis=axis, keepdims=True)  # 출력 모양의 무게
        with t.part(f'Mean({axis})의 역전파'):
            F.sum(Mean(axis)(x) * wy).backward()
        num = central_diff(lambda a: (a.mean(axis=axis, keepdims=True) * wy).sum(), x0)
        t.close(f'Mean({axis})의 x.grad (중앙 차분과 비교)', x.grad, num, rtol=1e-6, atol=1e-9)


STUB_LINEAR = '''
"""텐서 문제 2: L = sum(x W + b)의 기울기를 손으로.

x = [[1, 2], [3, 4], [5, 6]],  W = [[1, 0, -1], [2, 1, 0]],  b = [0, 0, 0]
"""

W_grad = ...   # 2x3 목록
b_grad = ...   # 원소 3개
x_grad = ...   # 3x2 목록
'''


@exercise(2, '선형 변환의 기울기 예측', STUB_LINEAR)
def check_linear(t):
    KF = dezero_kr.functions
    x = dezero_kr.Variable(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    W = dezero_kr.Variable(np.array([[1.0, 0.0, -1.0], [2.0, 1.0, 0.0]]))
    b = dezero_kr.Variable(np.zeros(3))
    KF.sum(KF.matmul(x, W) + b).backward()
    for name, var in (('W_grad', W), ('b_grad', b), ('x_grad', x)):
        t.close(f'{name} (역전파와 비교)', t.get(name), var.grad.data, rtol=0.0)


STUB_SUMTO = '''
"""텐서 문제 3: sum_to(x, (2, 1))은 모양 (5, 2, 3)인 x의 어느 축을 더할까?"""

summed_axes = ...   # 더하는 (원래 x의) 축 번호의 튜플
# x = np.arange(30.0).reshape(5, 2, 3)일 때 sum_to(x, (2, 1))의 값 (2x1 목록)
result = ...
'''


@exercise(3, 'sum_to가 더하는 축', STUB_SUMTO)
def check_sumto(t):
    x = np.arange(30.0).reshape(5, 2, 3)
    y = dezero_kr.functions.sum_to(dezero_kr.Variable(x), (2, 1)).data
    axes = t.get('summed_axes')
    t.true('summed_axes가 축 번호의 튜플', isinstance(axes, (tuple, list)) and
           all(isinstance(a, int) for a in axes), f'받은 값: {axes!r}')
    with t.part('x.sum(axis=summed_axes)'):
        summed = x.sum(axis=tuple(axes))
    t.close('x.sum(axis=summed_axes) (sum_to와 같은 원소인가)', summed, y.reshape(-1),
            rtol=0.0)
    t.close('result (sum_to(x, (2, 1))의 값)', t.get('result'), y, rtol=0.0)


STUB_TRANSPOSE = '''
"""텐서 문제 4: 축 순서 axes의 Transpose. 역전파는 역순열로 되돌린다."""
import numpy as np

from mydezero import Function


class Transpose(Function):
    def __init__(self, axes):
        self.axes = axes

    def forward(self, x):
        raise NotImplementedError

    def backward(self, gy):
        """gy를 x의 모양으로 되돌린다 (Transpose(역순열)(gy)이면 다시 미분할 수 있다)."""
        raise NotImplementedError
'''


@exercise(4, 'Transpose의 역순열', STUB_TRANSPOSE)
def check_transpose(t):
    Transpose = t.get('Transpose')
    x0 = np.arange(24.0).reshape(2, 3, 4)
    for axes in ((2, 0, 1), (1, 2, 0), (0, 2, 1)):
        x = Variable(x0.copy())
        with t.part(f'Transpose({axes})의 순전파'):
            y = Transpose(axes)(x)
        t.close(f'Transpose({axes})(x)의 값', y, x0.transpose(axes), rtol=0.0)
        labels = np.arange(24.0).reshape(x0.transpose(axes).shape)
        y.grad = Variable(labels)
        with t.part(f'Transpose({axes})의 역전파'):
            y.backward()
        t.close(f'Transpose({axes})의 x.grad (기울기가 원래 자리로)', x.grad,
                labels.transpose(np.argsort(axes)), rtol=0.0)
