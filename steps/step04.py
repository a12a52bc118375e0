"""04단계: 수치 미분

미분은 "입력을 아주 조금 바꿨을 때 출력이 얼마나 바뀌는가"이다. 극한을 컴퓨터로 그대로
계산할 수는 없으니 작은 h를 골라 근사한다.

* 전진 차분: (f(x+h) - f(x)) / h           오차가 h에 비례한다.
* 중앙 차분: (f(x+h) - f(x-h)) / (2h)      오차가 h^2에 비례해 훨씬 정확하다.

numerical_diff는 중앙 차분을 쓴다. 구현이 쉬워 정답 확인용으로 좋지만, 입력 하나마다
순전파를 두 번씩 해야 해서 변수가 많은 신경망에는 쓸 수 없다. 그래서 05단계부터 역전파를 만든다.

Variable, Function, Square, Exp, square_exp_square는 03단계와 같다.

출력에서 볼 것
* y=(3x+1)^2, x=1: 정답 dy/dx=24. 전진 차분(h=0.001)은 24.009, 중앙 차분은 24에 붙는다.
* h를 줄이면 전진 차분의 오차(=9h)가 h에 비례해 줄어든다.
* Square -> Exp -> Square 합성 함수의 수치 미분(x=0.5).
"""
import numpy as np


class Variable:
    """NumPy 배열 하나를 담는 상자."""

    def __init__(self, data):
        self.data = data


class Function:
    """모든 함수의 기반 클래스. 하위 클래스는 forward만 구현하면 된다."""

    def __call__(self, input):
        x = input.data
        y = self.forward(x)
        output = Variable(y)
        return output

    def forward(self, x):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')


class Square(Function):
    def forward(self, x):
        return x ** 2


class Exp(Function):
    def forward(self, x):
        return np.exp(x)


def square_exp_square(x):
    """Square -> Exp -> Square 를 이은 합성 함수."""
    A, B, C = Square(), Exp(), Square()
    return C(B(A(x)))


def numerical_diff(f, x, eps=1e-4):
    """중앙 차분으로 f'(x)를 근사한다. f는 Variable을 받아 Variable을 돌려주는
    함수."""
    # np.asarray: 0차원 배열에서 빼면 NumPy 스칼라가 나오므로 다시 배열로
    # 만든다.
    x0 = Variable(np.asarray(x.data - eps))
    x1 = Variable(np.asarray(x.data + eps))
    y0 = f(x0)
    y1 = f(x1)
    return (y1.data - y0.data) / (2 * eps)


def forward_diff(f, x, h):
    """비교용 전진 차분. 한쪽만 보므로 중앙 차분보다 부정확하다."""
    x1 = Variable(np.asarray(x.data + h))
    return (f(x1).data - f(x).data) / h


if __name__ == '__main__':
    x = Variable(np.array(2.0))
    print('Square, x=2: 수치 미분 =', numerical_diff(Square(), x), '(정답 4)')

    # 연쇄 법칙의 예: g = 3x+1, y = g^2 이면 dy/dx = 2g * 3 = 6(3x+1)
    def f(x):
        return Square()(Variable(3 * x.data + 1))

    x = Variable(np.array(1.0))
    print('\ny=(3x+1)^2, x=1: y =', f(x).data,
          ' 정답 dy/dx = 6*(3*1+1) =', 6 * (3 * 1 + 1))
    print('  h       전진 차분     중앙 차분')
    for h in [0.1, 0.01, 0.001, 0.0001]:
        forward = forward_diff(f, x, h)
        central = numerical_diff(f, x, h)
        print(f'  {h:<7} {forward:.10f} {central:.10f}')

    x = Variable(np.array(0.5))
    print('\nSquare -> Exp -> Square, x=0.5: 수치 미분 =',
          numerical_diff(square_exp_square, x))
