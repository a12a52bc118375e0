"""21단계: 연산자 오버로드 (2) -- ndarray, 파이썬 수와 함께 쓰기

x * 2.0, 3.0 + x, np.array(1.0) + x 처럼 Variable과 다른 값을 섞어 계산할 수 있게 한다.

* as_variable(obj): Variable이면 그대로, 아니면(파이썬 수, ndarray) Variable로 감싼다.
  Function.__call__이 입력마다 이것을 불러 주므로 연산 클래스들은 늘 Variable만 받는다.
  감쌀 때는 다른 입력 Variable과 같은 클래스를 쓴다(02단계에서 출력 클래스를 정한 방식과 같다).
* __radd__, __rmul__: 3.0 * x 에서 왼쪽 피연산자 float은 Variable과 곱하는 법을 모르므로
  파이썬이 x.__rmul__(3.0)을 부른다. 덧셈과 곱셈은 교환 법칙이 성립하므로 add, mul을 그대로 쓴다.
* __array_priority__: 왼쪽이 ndarray이면 NumPy가 먼저 나서서 Variable을 원소마다 넣을 객체(object)로 보고
  원소마다 계산한 object 배열을 만들어 버린다. 우선순위를 ndarray(0)보다 크게 주면 NumPy가
  양보하고 Variable.__radd__가 불린다.

Function이 바뀌었으므로 연산 클래스들을 새 Function 위에 얹고, Variable의 +, * 도 이 단계의
add, mul을 가리키게 다시 연결한다.

출력에서 볼 것
* y = 3.0 * x + 1.0 (x=2): y=7, dy/dx=3
* np.array([1, 2]) + Variable([10, 20]): 우선순위가 있으면 Variable, 없으면 object ndarray
"""
import numpy as np

import step18
import step20
from step16 import functional, rebase
# noqa: F401
from step20 import Config, FunctionHeap, as_array, no_grad, using_config


def as_variable(obj, cls=None):
    """obj를 Variable로 만든다. cls를 주면 그 클래스(이 단계 Variable의 하위
    클래스)로 감싼다."""
    if isinstance(obj, Variable):
        return obj
    return (cls or Variable)(as_array(obj))


class Function(step18.Function):
    def __call__(self, *inputs):
        variables = (type(x) for x in inputs if isinstance(x, Variable))
        cls = next(variables, Variable)
        inputs = [as_variable(x, cls) for x in inputs]
        return super().__call__(*inputs)


Square, Exp, Add, Mul = rebase(Function, step18.Square, step18.Exp, step18.Add, step18.Mul)
square, exp, add, mul = functional(Square, Exp, Add, Mul)


class Variable(step20.Variable):
    __array_priority__ = 200
    # 함수를 클래스 속성으로 두면 메서드가 된다: x + 1 -> add(x, 1), 1 + x ->
    # add(x, 1)
    __add__ = __radd__ = add
    __mul__ = __rmul__ = mul


if __name__ == '__main__':
    x = Variable(np.array(2.0))
    y = 3.0 * x + 1.0
    y.backward()
    print('y = 3.0 * x + 1.0 =', y, ' dy/dx =', x.grad)
    print('x + np.array(3.0) =', x + np.array(3.0), ' x * 4 =', x * 4)

    class NoPriority(Variable):
        __array_priority__ = 0  # 비교용: ndarray와 같은 우선순위

    a = np.array([1.0, 2.0])
    for cls in (Variable, NoPriority):
        r = a + cls(np.array([10.0, 20.0]))
        detail = f'dtype={r.dtype}, 원소 {len(r)}개' if isinstance(r, np.ndarray) else str(r)
        print(f'np.array([1, 2]) + {cls.__name__}([10, 20]) -> {type(r).__name__}: {detail}')
