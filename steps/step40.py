"""40단계: 브로드캐스트 -- BroadcastTo와 SumTo를 직접 만든다 (서로의 역전파, mydezero)

NumPy는 모양이 다른 배열끼리 계산할 때 작은 쪽을 복사해 늘린다(브로드캐스트).
(2, 3) + (3,)에서는 (3,)이 두 행에 복사된다. 복사된 값은 출력의 여러 곳에 쓰였으므로, 역전파에서
그 기울기들을 "복사된 방향으로 모두 더해" 원래 모양으로 되돌려야 한다 (한 변수가 여러 곳에 쓰이면
기울기를 더한다는 규칙, 14단계와 같은 이유).

    broadcast_to(x, shape):  forward  복사해서 늘린다      backward  sum_to(gy, x.shape)
    sum_to(x, shape):        forward  더해서 줄인다        backward  broadcast_to(gy, x.shape)

sum_to(x, shape)가 더할 축은 브로드캐스트 규칙을 거꾸로 따라가면 나온다.
    1. x가 shape보다 차원이 많으면 앞쪽의 남는 축들 (예: (5, 2, 3) -> (2, 3)이면 0번 축)
    2. shape에서 길이가 1인 축 (예: (2, 3) -> (1, 3)이면 0번 축, keepdims로 남긴다)

이 둘로 Add의 backward를 고치면 x + b (b는 편향 벡터) 같은 신경망의 식을 그대로 쓸 수 있다.
이 단계에서 mydezero/functions.py에 BroadcastTo, SumTo(배열 계산은 utils.sum_to)가 생기고,
mydezero/core.py의 Add, Sub, Mul, Div는 입력 모양이 다르면 backward 끝에서 sum_to로 기울기를 입력
모양에 맞춘다(dezero_kr도 같다).

출력에서 볼 것
* (3,) + (1,): 길이 1인 x1이 세 번 쓰였으므로 x1.grad = [3]
* (2, 3) + (3,)(편향): b.grad = 각 열의 기울기 합 = [2, 2, 2]
* (2, 3) * (3,): w.grad = 열마다 x를 더한 값 (x의 각 열 합)  (mydezero의 Mul)
* mydezero의 broadcast_to, sum_to, Add가 기준 패키지 dezero_kr와 같은 값·기울기를 내고 중앙 차분과 맞는다.
"""
import numpy as np

import dezero_kr.functions as RF  # 기준 패키지
from mydezero import Variable
from mydezero.core import add
from mydezero.functions import broadcast_to, sum_to

from _common import report, report_header


if __name__ == '__main__':
    x0 = Variable(np.array([1.0, 2.0, 3.0]))
    x1 = Variable(np.array([10.0]))
    y = add(x0, x1)
    y.backward()
    print('(3,) + (1,):   y =', y.data, ' x0.grad =', x0.grad.data,
          ' x1.grad =', x1.grad.data)

    x = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    b = Variable(np.array([0.1, 0.2, 0.3]))
    y = add(x, b)
    y.backward()
    print('(2, 3) + (3,): b.grad =', b.grad.data, ' x.grad 모양', x.grad.shape)

    x.cleargrad()
    w = Variable(np.array([1.0, 10.0, 100.0]))
    y = x * w  # Mul도 같은 방식으로 sum_to를 쓴다
    y.backward()
    print('(2, 3) * (3,): w.grad =', w.grad.data, '(= x의 열 합)')
    print('  x.grad =', x.grad.data.tolist())

    # 두 함수를 직접 써 보기
    v = Variable(np.array([1.0, 2.0, 3.0]))
    y = broadcast_to(v, (2, 3))
    y.backward()
    print('\nbroadcast_to((3,) -> (2, 3)): y =', y.data.tolist())
    print('  v.grad =', v.grad.data, '(sum_to로 되돌린 기울기)')

    m = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    y = sum_to(m, (1, 3))
    y.grad = Variable(np.array([[1.0, 2.0, 3.0]]))
    y.backward()
    print('sum_to((2, 3) -> (1, 3)): y =', y.data.tolist())
    print('  m.grad =', m.grad.data.tolist(), '(broadcast_to로 복사한 기울기)')

    report_header('dezero_kr와 비교')
    rng = np.random.default_rng(40)
    a, v3 = rng.standard_normal((2, 3)), rng.standard_normal(3)
    col = rng.standard_normal((2, 1))
    batch = rng.standard_normal((5, 2, 3))
    report('broadcast_to (2, 3)', lambda u: broadcast_to(u, (2, 3)),
           lambda u: RF.broadcast_to(u, (2, 3)), v3)
    report('broadcast_to (4, 2, 3)', lambda u: broadcast_to(u, (4, 2, 3)),
           lambda u: RF.broadcast_to(u, (4, 2, 3)), col)
    report('sum_to (1, 3)', lambda u: sum_to(u, (1, 3)),
           lambda u: RF.sum_to(u, (1, 3)), a)
    report('sum_to (2, 1)', lambda u: sum_to(u, (2, 1)),
           lambda u: RF.sum_to(u, (2, 1)), batch)
    report('sum_to (3,)', lambda u: sum_to(u, (3,)),
           lambda u: RF.sum_to(u, (3,)), batch)
    report('add (2, 3) + (3,)', add, lambda p, q: p + q, a, v3)
    report('add (2, 1) + (5, 2, 3)', add, lambda p, q: p + q, col, batch)
