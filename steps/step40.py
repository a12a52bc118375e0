"""40단계: 브로드캐스트 -- broadcast_to와 sum_to는 서로의 역전파

NumPy는 모양이 다른 배열끼리 계산할 때 작은 쪽을 복사해 늘린다(브로드캐스트).
(2, 3) + (3,)에서는 (3,)이 두 행에 복사된다. 복사된 값은 출력의 여러 곳에 쓰였으므로, 역전파에서
그 기울기들을 "복사된 방향으로 모두 더해" 원래 모양으로 되돌려야 한다 (한 변수가 여러 곳에 쓰이면
기울기를 더한다는 규칙, 32단계와 같은 이유).

    broadcast_to(x, shape):  forward  복사해서 늘린다      backward  sum_to(gy, x.shape)
    sum_to(x, shape):        forward  더해서 줄인다        backward  broadcast_to(gy, x.shape)

dezero_kr의 Add, Sub, Mul, Div는 입력 모양이 다르면 backward 끝에서 sum_to로 기울기를 입력
모양에 맞춘다. 그래서 x + b (b는 편향 벡터) 같은 신경망의 식을 그대로 쓸 수 있다.

출력에서 볼 것
* (3,) + (1,): 길이 1인 x1이 세 번 쓰였으므로 x1.grad = [3]
* (2, 3) + (3,)(편향): b.grad = 각 열의 기울기 합 = [2, 2, 2]
* (2, 3) * (3,): w.grad = 열마다 x를 더한 값 (x의 각 열 합)
* F.broadcast_to와 F.sum_to를 직접 써서 서로의 역전파임을 확인
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable


if __name__ == '__main__':
    x0 = Variable(np.array([1.0, 2.0, 3.0]))
    x1 = Variable(np.array([10.0]))
    y = x0 + x1
    y.backward()
    print('(3,) + (1,):    y =', y.data, ' x0.grad =', x0.grad.data, ' x1.grad =', x1.grad.data)

    x = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    b = Variable(np.array([0.1, 0.2, 0.3]))
    y = x + b
    y.backward()
    print('(2, 3) + (3,):  b.grad =', b.grad.data, ' x.grad 모양', x.grad.shape)

    x.cleargrad()
    w = Variable(np.array([1.0, 10.0, 100.0]))
    y = x * w
    y.backward()
    print('(2, 3) * (3,):  w.grad =', w.grad.data, '(= x의 열 합)', ' x.grad =', x.grad.data.tolist())

    # 두 함수를 직접 써 보기
    v = Variable(np.array([1.0, 2.0, 3.0]))
    y = F.broadcast_to(v, (2, 3))
    y.backward()
    print('\nbroadcast_to((3,) -> (2, 3)): y =', y.data.tolist(), ' v.grad =', v.grad.data, '(sum_to)')

    m = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    y = F.sum_to(m, (1, 3))
    y.grad = Variable(np.array([[1.0, 2.0, 3.0]]))
    y.backward()
    print('sum_to((2, 3) -> (1, 3)):     y =', y.data.tolist(), ' m.grad =', m.grad.data.tolist(),
          '(broadcast_to)')
