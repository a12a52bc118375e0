"""18단계: 메모리 절약 모드

메모리를 아끼는 두 가지 방법을 넣는다.

1. 중간 변수의 미분 버리기 (retain_grad)
   보통 필요한 것은 잎 변수(사용자가 만든 입력, 나중의 매개변수)의 미분뿐이다. 세대순 역전파에서는
   함수 f를 처리하고 나면 f의 출력 미분은 다시 쓰이지 않으므로 그 자리에서 None으로 지운다.
   중간 미분까지 보고 싶으면 backward(retain_grad=True).

2. 역전파를 안 할 때는 그래프를 만들지 않기 (Config, using_config, no_grad)
   추론이나 평가처럼 미분이 필요 없을 때는 Function이 입력을 기억하거나 creator를 이을 필요가 없다.
   Config.enable_backprop이 False이면 Function.link가 아무것도 하지 않는다.
   using_config(name, value)는 with 블록 동안만 설정을 바꾸고, 블록 안에서 예외가 나도 finally에서
   원래 값을 되돌린다. no_grad()는 using_config('enable_backprop', False)의 줄임이다.

출력에서 볼 것
* 기본 backward 뒤 중간 변수 t, y의 grad는 None, 잎 x0, x1의 grad는 2.0, 1.0
* retain_grad=True이면 중간 미분(1.0)이 남는다.
* no_grad 안에서 만든 변수는 creator가 없다. with 블록 안에서 예외가 나도 설정이 True로 돌아온다.
"""
import contextlib

import numpy as np

import step17
# noqa: F401 (다음 단계가 가져간다)
from step17 import FunctionHeap, as_array, functional, rebase


class Config:
    enable_backprop = True  # False이면 계산 그래프를 만들지 않는다


@contextlib.contextmanager
def using_config(name, value):
    # 없는 설정 이름이면 여기서 AttributeError
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():
    return using_config('enable_backprop', False)


class Variable(step17.Variable):
    def backward(self, retain_grad=False):
        if self.grad is None:
            self.grad = np.ones_like(self.data)
        for f in self._creators():
            self._backprop_through(f)
            if not retain_grad:
                for y in self._outputs(f):
                    # 세대순이므로 f의 출력 미분은 더 쓰이지 않는다
                    y.grad = None


class Function(step17.Function):
    def link(self, inputs, outputs):
        if Config.enable_backprop:
            super().link(inputs, outputs)


Square, Exp, Add, Mul = rebase(Function, step17.Square, step17.Exp, step17.Add, step17.Mul)
square, exp, add, mul = functional(Square, Exp, Add, Mul)


def small_graph():
    x0 = Variable(np.array(1.0))
    x1 = Variable(np.array(1.0))
    t = add(x0, x1)
    y = add(x0, t)
    return x0, x1, t, y


if __name__ == '__main__':
    x0, x1, t, y = small_graph()
    y.backward()
    print('기본(retain_grad=False): y.grad =', y.grad, ' t.grad =', t.grad)
    print('                         x0.grad =', x0.grad, ' x1.grad =', x1.grad)
    x0, x1, t, y = small_graph()
    y.backward(retain_grad=True)
    print('retain_grad=True:        y.grad =', y.grad, ' t.grad =', t.grad)
    print('                         x0.grad =', x0.grad, ' x1.grad =', x1.grad)

    x = Variable(np.ones((100, 100)))
    with no_grad():
        y = square(square(x))
        print('\nno_grad 안: y.creator is None:', y.creator is None,
              ' Config.enable_backprop =', Config.enable_backprop)
    y = square(square(x))
    print('no_grad 밖: y.creator is None:', y.creator is None,
          ' Config.enable_backprop =', Config.enable_backprop)

    try:
        with no_grad():
            raise ValueError('블록 안에서 난 오류')
    except ValueError as e:
        print(f'예외({e}) 뒤 Config.enable_backprop =', Config.enable_backprop)
