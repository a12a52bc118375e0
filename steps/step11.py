"""11단계: 가변 길이 인수 (순전파)

덧셈처럼 입력이 둘 이상인 함수, 출력이 둘 이상인 함수를 다루려면 Function이 변수 하나가
아니라 "변수 리스트"를 주고받아야 한다. 이 단계에서는 입력도 리스트, 출력도 리스트(튜플)다.

* Function.__call__(inputs): inputs 리스트의 data를 꺼내 forward(xs)에 넘기고, 돌아온 ys를
  각각 Variable에 담아 outputs 리스트로 돌려준다. (나머지는 09단계 Function 그대로)
* 계산 그래프 연결(set_creator, inputs/outputs 기억)은 link 메서드로 따로 뺀다.
  뒤 단계(16~18)에서 그래프 연결 방식만 바꿀 때 이 메서드만 고치면 된다.
* Add: 첫 번째 다입력 함수.

이 단계는 순전파만 다룬다. 역전파(Variable.backward)는 아직 입력 하나짜리(f.input)를 가정하므로
13단계에서 고친다. square, exp는 09단계 것을 그대로 쓸 수 있다.

출력에서 볼 것
* Add()([2, 3])의 결과가 리스트이고, 그 첫 원소가 5라는 것 -- 쓰기 불편하다(12단계에서 개선).
"""
import numpy as np

import step09
from step09 import Variable, as_array


class Function(step09.Function):
    def __call__(self, inputs):
        xs = [x.data for x in inputs]
        ys = self.forward(xs)
        # 출력은 입력과 같은 클래스로(02단계)
        outputs = [type(inputs[0])(as_array(y)) for y in ys]
        self.link(inputs, outputs)
        return outputs

    def link(self, inputs, outputs):
        """순전파 결과를 계산 그래프에 잇는다."""
        for output in outputs:
            output.set_creator(self)
        self.inputs = inputs
        self.outputs = outputs


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
