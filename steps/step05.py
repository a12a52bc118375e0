"""05단계: 역전파 이론 (연쇄 법칙)

y = C(B(A(x))), 즉 a=A(x), b=B(a), y=C(b) 이면 연쇄 법칙에 따라

    dy/dx = (dy/db) * (db/da) * (da/dx)

이다. 이 곱을 출력 쪽에서부터(dy/dy = 1 에서 출발해 C, B, A 순으로) 계산하는 것이 역전파다.
중간 결과 dy/db, dy/da 는 "y가 그 변수에 얼마나 민감한가"이고, 계산하려면 순전파 때의
값(a, b)이 필요하다. 그래서 역전파는 순전파를 먼저 하고 그 값을 기억해 둔다.

출력이 스칼라 하나(손실)이고 입력이 많은 신경망에서는, 출력 쪽부터 곱하면 한 번의 역방향
계산으로 모든 입력의 미분이 나온다. 이것이 수치 미분(입력마다 순전파 2번) 대신 역전파를
쓰는 이유다.

이 단계는 이론이라 프레임워크를 바꾸지 않는다(Variable, Function, Square, Exp,
square_exp_square, numerical_diff는 04단계와 같다). 국소 미분을 손으로 적어 곱해 보고, 04단계의
수치 미분과 같은지 확인한다.

출력에서 볼 것
* x=0.5: 역전파로 곱한 dy/dx = 3.297442541400256..., 수치 미분 3.2974426293... 과 거의 같다.
* x=2:   dy/dx = 8e^8 = 23847.66389633382... (y = e^8 = 2980.957987... 의 기울기)
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


def chain_rule_demo(x):
    # 순전파: 값을 계산하면서 기억해 둔다
    a = x ** 2
    b = np.exp(a)
    y = b ** 2
    # 각 함수의 국소 미분 (순전파 때의 값으로 계산)
    dC = 2 * b        # (b^2)' = 2b
    dB = np.exp(a)    # (e^a)' = e^a
    dA = 2 * x        # (x^2)' = 2x
    # 역전파: 출력 쪽에서 출발해 하나씩 곱한다
    gy = 1.0
    gb = gy * dC
    ga = gb * dB
    gx = ga * dA
    print(f'x={x}: a={a} b={b} y={y}')
    print(f'  국소 미분: dC/db={dC} dB/da={dB} dA/dx={dA}')
    print(f'  역전파:    dy/dy={gy} dy/db={gb}')
    print(f'             dy/da={ga} dy/dx={gx}')
    numerical = numerical_diff(square_exp_square, Variable(np.array(x)))
    exact = 4 * x * np.exp(2 * x ** 2)
    print(f'  수치 미분 dy/dx={numerical}  해석식 4x*e^(2x^2)={exact}')


if __name__ == '__main__':
    chain_rule_demo(0.5)
    chain_rule_demo(2.0)
