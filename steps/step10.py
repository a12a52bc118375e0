"""10단계: 테스트

프레임워크가 커질수록 "고쳤더니 다른 곳이 깨졌다"를 빨리 알아채야 한다. 파이썬 표준 unittest로
Square와 Exp를 테스트한다.

* 순전파 테스트: 알려진 입력에 대해 값이 맞는가
* 역전파 테스트: 손으로 구한 미분과 맞는가
* 기울기 확인(gradient check): 무작위 입력에서 역전파 결과가 수치 미분(04단계)과 가까운가.
  손으로 정답을 구하지 않아도 되므로 새 함수를 만들 때마다 쓸 수 있는 가장 쓸모 있는 테스트다.

프레임워크 자체는 바뀌지 않는다(09단계와 같다. 정답지로 쓸 numerical_diff는 04단계와 같다).
테스트는 이 스크립트 안에서 바로 실행한다
(python steps/step10.py, 또는 steps/ 안에서 python -m unittest step10 -v).

출력에서 볼 것
* 각 테스트의 이름과 결과(ok)
* 일부러 틀린 backward(2x 대신 x)를 기울기 확인이 잡아내는 모습
"""
import unittest

import numpy as np


def as_array(x):
    """NumPy 스칼라(np.float64 등)나 파이썬 수를 0차원 배열로 바꾼다. 배열은
    그대로 둔다."""
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
        if self.grad is None:
            self.grad = np.ones_like(self.data)  # 출력 자신에 대한 미분은 1

        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            x, y = f.input, f.output
            x.grad = f.backward(y.grad)
            if x.creator is not None:
                funcs.append(x.creator)


class Function:
    def __call__(self, input):
        x = input.data
        y = self.forward(x)
        output = Variable(as_array(y))
        output.set_creator(self)
        self.input = input
        self.output = output
        return output

    def forward(self, x):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')

    def backward(self, gy):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.backward를 구현해야 합니다')


class Square(Function):
    def forward(self, x):
        return x ** 2

    def backward(self, gy):
        x = self.input.data
        return 2 * x * gy


class Exp(Function):
    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.input.data
        return np.exp(x) * gy


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def numerical_diff(f, x, eps=1e-4):
    """중앙 차분으로 f'(x)를 근사한다(04단계). 기울기 확인의 정답지."""
    x0 = Variable(np.asarray(x.data - eps))
    x1 = Variable(np.asarray(x.data + eps))
    y0 = f(x0)
    y1 = f(x1)
    return (y1.data - y0.data) / (2 * eps)


def gradient_check(f, x, rtol=1e-5, atol=1e-8):
    """f(x)의 역전파 미분과 수치 미분을 비교해 (일치 여부, 역전파 값, 수치 값)을
    돌려준다."""
    x.grad = None
    f(x).backward()
    num_grad = numerical_diff(f, x)
    return np.allclose(x.grad, num_grad, rtol=rtol, atol=atol), x.grad, num_grad


class SquareTest(unittest.TestCase):
    def test_forward(self):
        y = square(Variable(np.array(2.0)))
        self.assertEqual(y.data, np.array(4.0))

    def test_backward(self):
        x = Variable(np.array(3.0))
        square(x).backward()
        self.assertEqual(x.grad, np.array(6.0))

    def test_gradient_check(self):
        x = Variable(np.random.default_rng(0).random(1))
        ok, _, _ = gradient_check(square, x)
        self.assertTrue(ok)


class ExpTest(unittest.TestCase):
    def test_forward(self):
        y = exp(Variable(np.array(0.0)))
        self.assertEqual(y.data, np.array(1.0))

    def test_gradient_check(self):
        x = Variable(np.random.default_rng(1).random(1))
        ok, _, _ = gradient_check(exp, x)
        self.assertTrue(ok)


class _Recorder(unittest.TestResult):
    """결과를 실행 순서대로 모아 둔다(unittest 기본 출력은 실행 시간이 섞여 매번
    달라진다)."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def addSuccess(self, test):
        super().addSuccess(test)
        self.lines.append(f'{test.id().split(".", 1)[1]} ... ok')

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.lines.append(f'{test.id().split(".", 1)[1]} ... FAIL')

    def addError(self, test, err):
        super().addError(test, err)
        self.lines.append(f'{test.id().split(".", 1)[1]} ... ERROR')


def run_tests(*cases):
    loader = unittest.defaultTestLoader
    suite = unittest.TestSuite(loader.loadTestsFromTestCase(c) for c in cases)
    result = _Recorder()
    suite.run(result)
    print('\n'.join(result.lines))
    print(f'{result.testsRun}개 실행, 실패 {len(result.failures)}개, '
          f'오류 {len(result.errors)}개')
    return result.wasSuccessful()


class BrokenSquare(Square):
    """일부러 틀린 backward: (x^2)' = 2x 인데 x를 돌려준다."""

    def backward(self, gy):
        return self.input.data * gy


if __name__ == '__main__':
    run_tests(SquareTest, ExpTest)

    x = Variable(np.array([0.3, 1.5]))
    for name, f in [('square', square), ('틀린 square', lambda v: BrokenSquare()(v))]:
        ok, grad, num = gradient_check(f, x)
        verdict = '통과' if ok else '실패'
        print(f'기울기 확인 [{name}]: 역전파 {grad}, 수치 미분 {num} -> {verdict}')
