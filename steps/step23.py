"""23단계: 패키지로 정리 -- 이제부터는 dezero_kr를 import한다

01~22단계에서 스크립트 안에서 키운 프레임워크(Variable, Function, 역전파, 연산자 오버로드,
no_grad ...)는 dezero_kr 패키지에 같은 이름으로 들어 있다. 이 단계부터는 파일마다
프레임워크를 다시 정의하지 않고 다음처럼 가져다 쓴다.

    import dezero_kr as dz                 # 패키지 전체
    from dezero_kr import Variable         # 자주 쓰는 이름은 맨 위에서 바로
    import dezero_kr.functions as F        # 함수 모음: F.exp, F.sin, F.tanh, F.sum, ...

패키지 안의 파일 배치 (필요할 때 찾아 읽을 곳)

    dezero_kr/core.py            Variable, Function, 역전파 엔진, 사칙연산/행렬곱/reshape/sum ...
    dezero_kr/functions_math.py  sin cos tanh exp log ... 같은 수학 함수
    dezero_kr/functions.py       위 둘(과 뒤에 나올 신경망 함수)을 F 하나로 모아 주는 창구
    dezero_kr/utils.py           수치 미분, 기울기 확인(gradient_check)

직접 만든 코드를 패키지로 정리하는 방법 (책의 23단계)

    mydezero/                  폴더 하나가 패키지 하나다
        __init__.py            `import mydezero` 할 때 실행되는 파일. 밖에 보일 이름을 모은다
        core_simple.py         01~22단계의 Variable, Function, 연산자 ...

    # mydezero/__init__.py
    from mydezero.core_simple import Variable, Function, exp, no_grad

__init__.py가 이름을 모아 두면 쓰는 쪽은 `from mydezero import Variable` 한 줄이면 된다.
이 스크립트는 임시 폴더에 이 구조를 실제로 만들고(core_simple.py는 22단계 파일에서 이름을 가져온다),
그 패키지로 계산한 값이 dezero_kr의 값과 같은지 확인한다. dezero_kr도 같은 원리다.

22단계와 달리 Variable이 np.ndarray만 받는 점, 파이썬 수와의 연산(x + 3, 2.0 * x)이 되는 점,
y.backward() 한 줄로 미분이 끝나는 점은 그대로다. 실행 위치는 어디든 좋다: 저장소 루트에서
`pip install -e .`를 해 두었거나, 루트에서 `python steps/step23.py`로 실행하면 된다.

출력에서 볼 것
* 22단계와 같은 식 y = exp(x ** 2) ** 2 가 같은 값 3.297442541400256 (x=0.5)을 낸다.
* 직접 만든 패키지 mydezero의 파일 목록과, 그것으로 계산한 값 = dezero_kr의 값
* Variable/Function이 어느 모듈에서 왔는지 (dezero_kr.core)
* 역전파 뒤 x.grad는 ndarray가 아니라 Variable이다 (30단계 이후 고차 미분의 열쇠).
"""
import importlib
import os
import sys
import tempfile

import numpy as np

import dezero_kr as dz
import dezero_kr.functions as F
from dezero_kr import Variable

# 작은 패키지의 파일들. core_simple.py에는 원래 01~22단계의 코드를 옮겨 적는다.
# 여기서는 길어지지 않도록 22단계 파일(steps/step22.py)에서 이름을 가져온다:
# 하는 일은 같다.
MY_PACKAGE = {
    '__init__.py':
        'from mydezero.core_simple import Variable, Function, exp, no_grad\n',
    'core_simple.py':
        'from step22 import Variable, Function, exp, no_grad  # noqa: F401\n',
}


def build_package(folder):
    """folder 아래에 mydezero/ 패키지를 쓰고 import해서 돌려준다."""
    package = os.path.join(folder, 'mydezero')
    os.makedirs(package)
    for name, text in MY_PACKAGE.items():
        with open(os.path.join(package, name), 'w', encoding='utf-8') as f:
            f.write(text)
    sys.path.insert(0, folder)
    return importlib.import_module('mydezero')


def my_package_matches(mydezero, v):
    """mydezero와 dezero_kr로 y = exp(x ** 2) ** 2를 계산해 값과 미분이 같은지
    확인한다."""
    mine = mydezero.Variable(np.array(v))
    y_mine = mydezero.exp(mine ** 2) ** 2
    y_mine.backward()  # 22단계의 grad는 ndarray
    ours = Variable(np.array(v))
    y_ours = F.exp(ours ** 2) ** 2
    y_ours.backward()  # dezero_kr의 grad는 Variable
    np.testing.assert_allclose(y_mine.data, y_ours.data, rtol=1e-15)
    np.testing.assert_allclose(mine.grad, ours.grad.data, rtol=1e-15)
    return float(y_mine.data), float(mine.grad)


if __name__ == '__main__':
    with tempfile.TemporaryDirectory() as folder:
        mydezero = build_package(folder)
        files = ', '.join(f'mydezero/{name}' for name in sorted(MY_PACKAGE))
        print('직접 만든 패키지:', files)
        print('y = exp(x ** 2) ** 2를 mydezero로 (dezero_kr와 같은지 assert로 확인):')
        for v in (0.5, 2.0):
            y, gx = my_package_matches(mydezero, v)
            print(f'  x={v}: y = {y}, dy/dx = {gx}')
    print()

    # 22단계 마지막 예제를 패키지로 그대로 옮겨 본다
    for v in (0.5, 2.0):
        x = Variable(np.array(v))
        y = F.exp(x ** 2) ** 2
        y.backward()
        print(f'y = exp(x ** 2) ** 2, x={v}: y = {y.data}, dy/dx = {x.grad.data}')

    # 연산자와 파이썬 수가 섞인 식도 22단계와 같다
    x = Variable(np.array(1.0))
    y = (x + 3) ** 2 / 2.0 - 1
    y.backward()
    print('y = (x + 3) ** 2 / 2 - 1, x=1:', y, ' dy/dx =', x.grad)

    print('\n이름은 어디에서 왔나')
    print('  Variable  :', Variable.__module__ + '.' + Variable.__name__)
    print('  Function  :', dz.Function.__module__ + '.' + dz.Function.__name__)
    print('  F.exp     :', F.exp.__module__ + '.exp')
    print('  no_grad   :', dz.no_grad.__module__ + '.no_grad')

    # 역전파가 만든 기울기도 Variable이다. data에 실제 배열이 있다.
    print('\nx.grad의 타입:', type(x.grad).__name__,
          ' x.grad.data의 타입:', type(x.grad.data).__name__)

    # 22단계에서 만든 모드 전환도 그대로 쓸 수 있다: no_grad 안에서는 그래프를
    # 기록하지 않는다
    with dz.no_grad():
        y = x * 2
    print('no_grad 안에서 만든 y의 creator:', y.creator)
