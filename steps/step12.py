"""12단계: 가변 길이 인수 (쓰기 편하게)

11단계의 Add()([x0, x1])[0] 는 쓰기 번거롭다. 파이썬의 *args와 튜플 풀기를 이용해 다듬는다.

* 호출: Add()(x0, x1)  -- __call__(self, *inputs)로 받는다.
* forward(self, x0, x1) -- forward도 리스트 대신 인수 여러 개를 받는다.
* forward가 값 하나를 돌려주면 알아서 튜플로 감싸고, 출력이 하나뿐이면 리스트가 아니라 그
  Variable 하나를 돌려준다.

이제 입력 하나짜리 Square, Exp도 같은 Function 위에서 그대로 돈다(forward(self, x)).
역전파는 13단계에서 다입력에 맞게 다시 쓴다. as_array, Variable, link는 11단계와 같다.

출력에서 볼 것
* add(x0, x1) = 5, 입력과 출력이 하나인 square(x) = 4
* 출력이 두 개인 함수(합과 차)의 결과가 튜플 풀기로 바로 받아진다.
"""
import numpy as np


def as_array(x):
    """NumPy 스칼라(np.float64 등)나 파이썬 수를 0차원 배열로 바꾼다."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Variable:
    def __init__(self, data):
        if data is not None and not isinstance(data, np.ndarray):
            name = type(data).__name__
            raise TypeError(f'{name}은(는) 지원하지 않습니다. '
                            'np.ndarray를 넣으세요.')
        self.data = data
        self.grad = None
        self.creator = None

    def set_creator(self, func):
        self.creator = func

    def backward(self):
        # 입력이 여럿인 함수의 역전파는 13단계에서 만든다
        raise NotImplementedError(
            'Variable.backward: 여러 입력의 역전파는 13단계에서 만듭니다')


class Function:
    def __call__(self, *inputs):
        xs = [x.data for x in inputs]
        ys = self.forward(*xs)
        if not isinstance(ys, tuple):
            ys = (ys,)
        outputs = [Variable(as_array(y)) for y in ys]
        self.link(inputs, outputs)
        return outputs if len(outputs) > 1 else outputs[0]

    def link(self, inputs, outputs):
        """순전파 결과를 계산 그래프에 잇는다."""
        for output in outputs:
            output.set_creator(self)
        self.inputs = inputs
        self.outputs = outputs

    def forward(self, *xs):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')


class Add(Function):
    def forward(self, x0, x1):
        return x0 + x1


class Square(Function):
    def forward(self, x):
        return x ** 2


class Exp(Function):
    def forward(self, x):
        return np.exp(x)


def add(x0, x1):
    return Add()(x0, x1)


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


if __name__ == '__main__':
    x0 = Variable(np.array(2))
    x1 = Variable(np.array(3))
    print('add(x0, x1) =', add(x0, x1).data)
    print('square(x0) =', square(x0).data)

    class SumDiff(Function):
        """출력이 두 개인 함수의 예: (a+b, a-b)"""

        def forward(self, a, b):
            return a + b, a - b

    s, d = SumDiff()(x0, x1)
    print('SumDiff(2, 3): 합 =', s.data, ' 차 =', d.data)
    print('두 출력의 creator가 같은 함수인가:', s.creator is d.creator)
