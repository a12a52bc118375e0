"""20단계: 연산자 오버로드 (1)

add(mul(a, b), c) 대신 a * b + c 라고 쓰고 싶다. 파이썬은 a * b를 a.__mul__(b)로, a + b를
a.__add__(b)로 바꿔 부르므로 Variable에 이 두 메서드를 정의하면 된다. 계산은 13단계부터 있던
Mul, Add가 그대로 한다. Variable만 바뀐다.

출력에서 볼 것
* y = a * b + c (a=3, b=2, c=1): y=7, dy/da=2, dy/db=3, dy/dc=1
* 제2고지의 대표 예제를 식 그대로: u = x * y, L = u * u + u (x=2, y=3)
  L=42, dL/du=13 (= 2u + 1), dL/dx=39, dL/dy=26. u의 미분을 보려고 retain_grad=True로 역전파한다.
"""
import numpy as np

import step19
from step19 import (Add, Config, Exp, Function, FunctionHeap, Mul, Square, add, as_array,  # noqa: F401
                    exp, mul, no_grad, square, using_config)


class Variable(step19.Variable):
    def __add__(self, other):
        return add(self, other)

    def __mul__(self, other):
        return mul(self, other)


if __name__ == '__main__':
    a = Variable(np.array(3.0), name='a')
    b = Variable(np.array(2.0), name='b')
    c = Variable(np.array(1.0), name='c')
    y = a * b + c
    y.backward()
    print('y = a * b + c =', y)
    print('dy/da =', a.grad, ' dy/db =', b.grad, ' dy/dc =', c.grad)

    x = Variable(np.array(2.0), name='x')
    y = Variable(np.array(3.0), name='y')
    u = x * y
    L = u * u + u
    L.backward(retain_grad=True)
    print('\nu = x * y, L = u * u + u (x=2, y=3)')
    print('L =', L.data, ' u =', u.data)
    print('dL/du =', u.grad, ' dL/dx =', x.grad, ' dL/dy =', y.grad)
