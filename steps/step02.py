"""02단계: 변수를 만드는 함수(Function)

함수는 Variable을 받아 Variable을 돌려준다. 공통 동작(상자에서 값을 꺼내고, 계산하고,
결과를 다시 상자에 담기)은 Function.__call__에 한 번만 쓰고, 실제 계산은 하위 클래스의
forward가 맡는다. Square는 그 첫 예다.

출력에서 볼 것
* Square()(x)의 결과도 Variable이다. 함수를 이어 붙일 수 있는 이유가 여기에 있다.
* forward를 구현하지 않은 Function을 호출하면 NotImplementedError가 난다.
"""
import numpy as np

from step01 import Variable


class Function:
    """모든 함수의 기반 클래스. 하위 클래스는 forward만 구현하면 된다."""

    def __call__(self, input):
        x = input.data
        y = self.forward(x)
        # 출력은 입력과 같은 클래스의 상자에 담는다. 이 튜토리얼은 뒤 단계에서
        # Variable을 상속해 기능을 덧붙이는데, 이렇게 해 두면 그때마다
        # Function을 다시 쓰지 않아도 새 Variable이 입력에서 출력으로 그대로
        # 흘러간다.
        return type(input)(y)

    def forward(self, x):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')


class Square(Function):
    def forward(self, x):
        return x ** 2


if __name__ == '__main__':
    x = Variable(np.array(10))
    f = Square()
    y = f(x)
    print('y의 클래스:', type(y).__name__)
    print('y.data =', y.data)

    try:
        Function()(x)
    except NotImplementedError as e:
        print('NotImplementedError:', e)
