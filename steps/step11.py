"""11단계: 가변 길이 인수 (순전파)

덧셈처럼 입력이 둘 이상인 함수, 출력이 둘 이상인 함수를 다루려면 Function이 변수 하나가
아니라 "변수 리스트"를 주고받아야 한다. 이 단계에서는 입력도 리스트, 출력도 리스트(튜플)다.

* Function.__call__(inputs): inputs 리스트의 data를 꺼내 forward(xs)에 넘기고, 돌아온 ys를
  각각 Variable에 담아 outputs 리스트로 돌려준다. (나머지는 09단계 Function 그대로)
* 계산 그래프 연결(set_creator, inputs/outputs 기억)은 link 메서드로 따로 뺀다.
  뒤 단계(16~18)에서 그래프 연결 방식이 바뀔 때 바뀌는 곳이 이 메서드 하나로 모인다.
* Add: 첫 번째 다입력 함수.

이 단계는 순전파만 다룬다. 09단계의 역전파(Variable.backward)는 입력 하나짜리(f.input)를
가정하므로 이 Function과는 맞지 않는다. 틀린 값을 내는 대신 분명하게 멈추도록 해 두고
13단계에서 다시 쓴다. as_array와 Variable의 나머지는 09단계와 같다.

출력에서 볼 것
* Add()([2, 3])의 결과가 리스트이고, 그 첫 원소가 5라는 것 -- 쓰기 불편하다(12단계에서 개선).
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
        # 09단계의 반복문은 f.input 하나만 알았다. 입력이 여럿인 함수의
        # 역전파는 13단계에서 만든다.
        raise NotImplementedError(
            'Variable.backward: 여러 입력의 역전파는 13단계에서 만듭니다')


class Function:
    def __call__(self, inputs):
        xs = [x.data for x in inputs]
        ys = self.forward(xs)
        outputs = [Variable(as_array(y)) for y in ys]
        self.link(inputs, outputs)
        return outputs

    def link(self, inputs, outputs):
        """순전파 결과를 계산 그래프에 잇는다."""
        for output in outputs:
            output.set_creator(self)
        self.inputs = inputs
        self.outputs = outputs

    def forward(self, xs):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')


class Add(Function):
    def forward(self, xs):
        x0, x1 = xs
        y = x0 + x1
        return (y,)  # 출력도 여러 개일 수 있으므로 튜플로 돌려준다


if __name__ == '__main__':
    xs = [Variable(np.array(2)), Variable(np.array(3))]
    ys = Add()(xs)
    print('출력의 타입:', type(ys).__name__, ' 길이:', len(ys))
    y = ys[0]
    print('y.data =', y.data)
    print('y.creator.inputs가 xs와 같은가:', y.creator.inputs is xs)
