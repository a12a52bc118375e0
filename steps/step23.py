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

22단계와 달리 Variable이 np.ndarray만 받는 점, 파이썬 수와의 연산(x + 3, 2.0 * x)이 되는 점,
y.backward() 한 줄로 미분이 끝나는 점은 그대로다. 실행 위치는 어디든 좋다: 저장소 루트에서
`pip install -e .`를 해 두었거나, 루트에서 `python steps/step23.py`로 실행하면 된다.

출력에서 볼 것
* 22단계와 같은 식 y = exp(x ** 2) ** 2 가 같은 값 3.297442541400256 (x=0.5)을 낸다.
* Variable/Function이 어느 모듈에서 왔는지 (dezero_kr.core)
* 역전파 뒤 x.grad는 ndarray가 아니라 Variable이다 (30단계 이후 고차 미분의 열쇠).
"""
import numpy as np

import dezero_kr as dz
import dezero_kr.functions as F
from dezero_kr import Variable


if __name__ == '__main__':
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
    print('\nx.grad의 타입:', type(x.grad).__name__, ' x.grad.data의 타입:', type(x.grad.data).__name__)

    # 22단계에서 만든 모드 전환도 그대로 쓸 수 있다: no_grad 안에서는 그래프를 기록하지 않는다
    with dz.no_grad():
        y = x * 2
    print('no_grad 안에서 만든 y의 creator:', y.creator)
