"""제2고지(11~24단계) 연습 문제의 확인: docs/tutorial/stage2.md의 "연습 문제".

답 파일은 steps/의 단계 모듈(step22 ...)을 import해서 쓴다. check.py가 steps/를
sys.path에 넣는다.
"""
import numpy as np

from . import exercise


def skip_graph(m, x_value):
    """a = x^2, b = a^2, y = b + a: a가 두 곳에 쓰이는 (건너뛰는 연결이 있는) 그래프."""
    x = m.Variable(np.array(x_value))
    a = m.square(x)
    b = m.square(a)
    y = m.add(b, a)
    return x, a, b, y


STUB_ORDER = '''
"""제2고지 문제 1: a = x^2, b = a^2, y = b + a (x = 1). 정답 dy/dx = 4x^3 + 2x = 6.

코드를 돌리기 전에 처리 순서를 손으로 따라가 예측한다.
"""

grad_step14 = ...   # 14단계의 방식(목록 끝에서 꺼내기)이 계산하는 x.grad
grad_step16 = ...   # 16단계(세대순)가 계산하는 x.grad
'''


@exercise(1, '처리 순서가 틀리면', STUB_ORDER)
def check_order(t):
    import step14
    import step16
    for name, m in (('grad_step14', step14), ('grad_step16', step16)):
        x, *_, y = skip_graph(m, 1.0)
        y.backward()
        t.equal(f'{name} ({m.__name__}의 역전파와 비교)', t.get(name), float(x.grad))


STUB_GEN = '''
"""제2고지 문제 2: 같은 그래프(a = x^2, b = a^2, y = b + a)에서 16단계의 세대."""

variable_generations = ...   # [x, a, b, y]의 세대
function_generations = ...   # [a = x^2, b = a^2, y = b + a] 함수의 세대
'''


@exercise(2, '세대 예측', STUB_GEN)
def check_generations(t):
    import step16
    x, a, b, y = skip_graph(step16, 2.0)
    t.equal('variable_generations ([x, a, b, y])', t.get('variable_generations'),
            [v.generation for v in (x, a, b, y)])
    t.equal('function_generations ([a = x^2, b = a^2, y = b + a])',
            t.get('function_generations'), [v.creator.generation for v in (a, b, y)])


STUB_SIGMOID = '''
"""제2고지 문제 3: 22단계의 연산자만으로 sigmoid(x) = 1 / (1 + exp(-x))."""
from step22 import exp


def sigmoid(x):
    """x: step22.Variable -> Variable"""
    raise NotImplementedError


grad_at_zero = ...   # x = 0에서의 기울기
'''


@exercise(3, '연산자로 쓰는 sigmoid', STUB_SIGMOID)
def check_sigmoid(t):
    import step22
    sigmoid = t.get('sigmoid')
    for value in (-2.0, 0.0, 0.5, 3.0):
        x = step22.Variable(np.array(value))
        with t.part(f'sigmoid(x)의 순전파와 역전파 (x = {value})'):
            y = sigmoid(x)
            y.backward()
        s = 1 / (1 + np.exp(-value))
        t.close(f'sigmoid(x)의 값 (x = {value})', y.data, s, rtol=1e-15)
        t.close(f'x.grad = s(1 - s) (x = {value})', x.grad, s * (1 - s), rtol=1e-14)
    t.close('grad_at_zero', t.get('grad_at_zero'), 0.25, rtol=1e-12)


STUB_NOGRAD = '''
"""제2고지 문제 4: 18단계의 no_grad() 안에서 y = square(x) (x = 3)를 만들고 y.backward()."""

creator_inside = ...   # no_grad 안에서 만든 y의 y.creator
grad_inside = ...      # 그 y.backward() 뒤의 x.grad
grad_outside = ...     # no_grad 밖에서 z = square(x); z.backward() 뒤의 x.grad
'''


@exercise(4, 'no_grad 안의 역전파', STUB_NOGRAD)
def check_nograd(t):
    import step18
    x = step18.Variable(np.array(3.0))
    with step18.no_grad():
        y = step18.square(x)
    y.backward()
    t.equal('creator_inside (y.creator)', t.get('creator_inside'), y.creator)
    t.equal('grad_inside (no_grad 안의 y에서 역전파한 x.grad)', t.get('grad_inside'), x.grad)
    z = step18.square(x)
    z.backward()
    t.equal('grad_outside', t.get('grad_outside'), float(x.grad))
