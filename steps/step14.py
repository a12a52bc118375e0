"""14단계: 같은 변수를 반복해서 사용

y = x + x 의 dy/dx는 2다. 그런데 13단계의 receive_grad는 미분을 덮어쓰므로 두 경로 중 한쪽의
기여만 남아 1이 나온다. 같은 변수가 여러 곳에서 쓰이면 각 경로에서 온 미분을 더해야 한다
(다변수 연쇄 법칙). 바뀌는 것은 두 가지다.

* receive_grad: 처음이면 그대로 넣고, 이미 있으면 더한다.
  x.grad += gx 처럼 제자리(in-place) 덧셈을 쓰지 않는 이유: Add.backward는 받은 gy 배열을
  두 입력에 그대로 넘기므로, 제자리로 더하면 출력 y.grad 배열까지 함께 바뀐다(아래 출력 참고).
* cleargrad(): 미분이 누적되므로, 같은 변수로 다른 계산을 다시 미분하기 전에 비워야 한다.

출력에서 볼 것
* 13단계 방식은 x + x 의 미분을 1로, 이 단계는 2로 계산한다. x + x + x 는 3.
* cleargrad 없이 두 번째 계산을 미분하면 이전 미분(2)이 남아 더해진다.
* 제자리 덧셈으로 구현하면 y.grad가 1에서 2로 오염된다.
"""
import numpy as np

import step13
from step13 import Add, Exp, Function, Mul, Square, add, as_array, exp, mul, square  # noqa: F401


class Variable(step13.Variable):
    def receive_grad(self, gx):
        # 새 배열을 만드는 덧셈이어야 다른 변수와 배열을 공유하지 않는다
        self.grad = gx if self.grad is None else self.grad + gx

    def cleargrad(self):
        self.grad = None


class _InPlaceVariable(Variable):
    """비교용: 제자리 덧셈으로 누적하면 어떻게 되는지 보여 주는 잘못된 구현."""

    def receive_grad(self, gx):
        if self.grad is None:
            self.grad = gx
        else:
            self.grad += gx


if __name__ == '__main__':
    for cls, label in [(step13.Variable, '13단계(덮어쓰기)'), (Variable, '14단계(누적)')]:
        x = cls(np.array(3.0))
        y = add(x, x)
        y.backward()
        print(f'{label}: y = x + x = {y.data}, dy/dx = {x.grad}')

    x = Variable(np.array(3.0))
    y = add(add(x, x), x)
    y.backward()
    print('y = x + x + x: dy/dx =', x.grad)

    x = Variable(np.array(3.0))
    add(x, x).backward()
    print('\n첫 번째 계산 x + x 뒤 x.grad =', x.grad)
    add(add(x, x), x).backward()
    print('cleargrad 없이 x + x + x 를 미분하면 x.grad =', x.grad, '(2가 남아 있다)')
    x.cleargrad()
    add(add(x, x), x).backward()
    print('cleargrad 뒤 다시 미분하면 x.grad =', x.grad)

    for cls, label in [(Variable, '새 배열 덧셈'), (_InPlaceVariable, '제자리 덧셈')]:
        x = cls(np.array(3.0))
        y = add(x, x)
        y.backward()
        print(f'{label}: dy/dx = {x.grad}, y.grad = {y.grad}')
