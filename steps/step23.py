"""23단계: 패키지로 정리 -- 이제부터는 직접 만든 패키지 mydezero를 import한다

01~22단계에서 스크립트 안에서 키운 프레임워크(Variable, Function, 역전파, 연산자 오버로드,
no_grad ...)를 파일 하나에 옮겨 적고 폴더로 묶으면 패키지가 된다. 이 저장소에서는 그 패키지가
steps/mydezero/ 이다 (DeZero와 같은 파일 배치).

    steps/mydezero/            폴더 하나가 패키지 하나다
        __init__.py            `import mydezero` 할 때 실행되는 파일. 밖에 보일 이름을 모은다
        core_simple.py         01~22단계의 Variable, Function, 연산자, Config, no_grad ...

    # mydezero/__init__.py (23단계 시점)
    from mydezero.core_simple import Variable
    from mydezero.core_simple import Function
    ...

__init__.py가 이름을 모아 두면 쓰는 쪽은 `from mydezero import Variable` 한 줄이면 된다.
`python steps/step23.py`로 실행하면 파이썬은 스크립트가 있는 폴더(steps/)를 sys.path의 맨 앞에
넣으므로 steps/mydezero/를 찾는다. 패키지는 단계마다 자란다: 지금 보이는 steps/mydezero/는 60단계까지
다 자란 모습이고, 23단계 시점의 모습은 다음으로 꺼내 읽는다(docs/tutorial/mydezero.md).

    python steps/mydezero_at.py 23 /tmp/at23     # /tmp/at23/mydezero/ 에 23단계 시점의 패키지

엔진 하나가 바뀐다: 역전파 순서를 정하는 코드. 16~22단계에서는 FunctionHeap(힙)과 생성기 _creators,
미분을 받는 receive_grad로 나눠 적었다. core_simple.py는 DeZero(책)의 core_simple.py와 한 줄씩 나란히
읽을 수 있도록 책의 모양을 따른다: backward 안의 목록 funcs에 함수를 넣을 때마다 세대로 정렬하는
add_func (core_simple.py의 Variable.backward). 22단계에서 바뀐 곳만 추리면:

    -   for f in self._creators():       # 힙: 세대가 큰 것부터 (16단계)
    -       self._backprop_through(f)    # 안에서 x.receive_grad(gx) (14단계)
    +   add_func(self.creator)           # 목록에 넣고 세대로 정렬
    +   while funcs:
    +       f = funcs.pop()              # 맨 뒤 = 세대가 가장 큰 함수
    +       ...                          # gxs = f.backward(*gys)
    +       x.grad = gx if x.grad is None else x.grad + gx   # receive_grad가 하던 일
    +       add_func(x.creator)

세대가 큰 함수부터 한 번씩 처리하는 것, 미분을 더해 모으는 것, retain_grad는 22단계와 같다.
다른 것은 두 가지다. 넣을 때마다 목록 전체를 정렬하므로 함수가 많으면 힙보다 느리다(16단계).
세대가 같은 함수끼리는 힙은 먼저 넣은 것을, 정렬한 목록은 나중에 넣은 것을 먼저 꺼낸다. 같은 세대의
함수는 서로의 출력을 쓰지 않으므로 바뀌는 것은 미분을 더하는 순서뿐이다. 30단계의 core.py도 이 모양이다.

30단계부터는 기울기도 Variable인 core.py가 생기고 mydezero.Variable이 그쪽을 가리킨다. 그래서
23~29단계의 스크립트는 `from mydezero.core_simple import Variable`처럼 core_simple에서 직접
가져온다(책의 is_simple_core 스위치와 같은 일). 기준 패키지 dezero_kr(이 저장소의 라이브러리)는 값이
맞는지 확인하는 데만 쓴다.

출력에서 볼 것
* 22단계와 같은 식 y = exp(x ** 2) ** 2 가 같은 값 3.297442541400256 (x=0.5)을 낸다 (dezero_kr와 같다).
* Variable/Function이 어느 모듈에서 왔는지 (mydezero.core_simple)
* core_simple에서 기울기 x.grad는 Variable이 아니라 ndarray다 (30단계 core.py부터 Variable).
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF
import mydezero
from mydezero.core_simple import Function, Variable, exp, no_grad


def matches_reference(v):
    """mydezero와 dezero_kr로 y = exp(x ** 2) ** 2를 계산해 값과 미분이 같은지
    확인한다."""
    mine = Variable(np.array(v))
    y_mine = exp(mine ** 2) ** 2
    y_mine.backward()  # core_simple의 grad는 ndarray
    ref = dezero_kr.Variable(np.array(v))
    y_ref = RF.exp(ref ** 2) ** 2
    y_ref.backward()  # dezero_kr의 grad는 Variable
    np.testing.assert_allclose(y_mine.data, y_ref.data, rtol=1e-15)
    np.testing.assert_allclose(mine.grad, ref.grad.data, rtol=1e-15)
    return float(y_mine.data), float(mine.grad)


if __name__ == '__main__':
    print('직접 만든 패키지: mydezero/__init__.py, mydezero/core_simple.py')
    print('y = exp(x ** 2) ** 2를 mydezero로 (dezero_kr와 같은지 assert로 확인):')
    for v in (0.5, 2.0):
        y, gx = matches_reference(v)
        print(f'  x={v}: y = {y}, dy/dx = {gx}')
    print()

    # 22단계 마지막 예제를 패키지로 그대로 옮겨 본다
    for v in (0.5, 2.0):
        x = Variable(np.array(v))
        y = exp(x ** 2) ** 2
        y.backward()
        print(f'y = exp(x ** 2) ** 2, x={v}: y = {y.data}, dy/dx = {x.grad}')

    # 연산자와 파이썬 수가 섞인 식도 22단계와 같다
    x = Variable(np.array(1.0))
    y = (x + 3) ** 2 / 2.0 - 1
    y.backward()
    print('y = (x + 3) ** 2 / 2 - 1, x=1:', y, ' dy/dx =', x.grad)

    print('\n이름은 어디에서 왔나')
    print('  Variable  :', Variable.__module__ + '.' + Variable.__name__)
    print('  Function  :', Function.__module__ + '.' + Function.__name__)
    print('  exp       :', exp.__module__ + '.exp')
    print('  no_grad   :', no_grad.__module__ + '.no_grad')
    print('  패키지    :', mydezero.__name__)

    # core_simple의 기울기는 Variable이 아니라 ndarray다
    print('\nx.grad는 Variable인가:', isinstance(x.grad, Variable),
          ' x.grad의 타입:', type(x.grad).__name__)

    # 22단계에서 만든 모드 전환도 그대로 쓸 수 있다: no_grad 안에서는 그래프를
    # 기록하지 않는다
    with no_grad():
        y = x * 2
    print('no_grad 안에서 만든 y의 creator:', y.creator)
