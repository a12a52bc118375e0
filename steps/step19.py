"""19단계: 변수 사용성 개선

Variable을 NumPy 배열처럼 다룰 수 있게 한다. 계산 방식은 그대로이고 Variable만 바뀐다
(Function은 출력을 입력과 같은 클래스로 만들므로 18단계 함수들이 그대로 이 Variable을 낸다).

* name: 변수에 이름을 붙인다(계산 그래프를 그리거나 디버깅할 때 쓴다).
* shape, ndim, size, dtype: data의 속성을 그대로 보여 주는 프로퍼티. x.data.shape 대신 x.shape.
* len(x): 첫 번째 축의 길이.
* repr(x): variable([...]) 꼴로 보여 준다. 여러 줄이면 둘째 줄부터 들여쓰기를 맞춘다.

출력에서 볼 것
* 2x3 행렬 변수의 shape/ndim/size/dtype/len과 repr
* 함수의 출력도 같은 속성을 갖는다(이름은 None).
"""
import numpy as np

import step18
from step18 import (Add, Config, Exp, Function, FunctionHeap, Mul, Square, add, as_array,  # noqa: F401
                    exp, mul, no_grad, square, using_config)


class Variable(step18.Variable):
    def __init__(self, data, name=None):
        super().__init__(data)
        self.name = name

    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        if self.data is None:
            return 'variable(None)'
        body = str(self.data).replace('\n', '\n' + ' ' * len('variable('))
        return f'variable({body})'


if __name__ == '__main__':
    x = Variable(np.array([[1, 2, 3], [4, 5, 6]]), name='x')
    print('name:', x.name, ' shape:', x.shape, ' ndim:', x.ndim, ' size:', x.size,
          ' dtype:', x.dtype, ' len:', len(x))
    print(x)
    print(Variable(np.array(2.0)), Variable(None))

    y = square(Variable(np.array([1.0, 2.0, 3.0]), name='v'))
    print('square 출력:', y, ' name:', y.name, ' shape:', y.shape, ' 클래스:', type(y).__name__)
