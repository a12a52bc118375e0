"""32단계: 고차 미분 (이론 3) -- 기울기를 한 번 더 역전파하는 순서와 함정

31단계에서 create_graph=True이면 x.grad 뒤에 "기울기를 계산한 그래프"가 남는 것을 봤다. 그 그래프의
출력 gx = x.grad를 다시 backward하면 d(gx)/dx, 즉 2차 미분이 x.grad에 들어온다. 순서는 이렇다.

    y.backward(create_graph=True)   # 1차 미분 gx = dy/dx (그래프가 달린 Variable)
    gx = x.grad                     # 잠깐 꺼내 둔다
    x.cleargrad()                   # 중요: 비우지 않으면 2차 미분이 1차 미분 위에 더해진다
    gx.backward(create_graph=True)  # 2차 미분 -> x.grad (3차를 원하면 또 반복)

backward는 잎의 기울기를 "덮어쓰지 않고 더한다". 한 변수가 여러 곳에 쓰일 때 각 경로의 기여를
합해야 하기 때문이다(공유 변수의 기울기 누적). 그래서 고차 미분을 반복할 때는 매번 cleargrad가
필요하다. 이 단계는 y = x^4 (x = 2)의 1~4차 미분을 구하고, cleargrad를 빼먹으면 어떻게 되는지 본다.

    정답: y' = 4x^3 = 32,  y'' = 12x^2 = 48,  y''' = 24x = 48,  y'''' = 24

출력에서 볼 것
* 1~4차 미분이 32, 48, 48, 24로 정답과 같고 5차 미분은 0이다. 4차 미분 24도 x ** 0 같은 항을
  거쳐 x에 연결된 그래프로 계산되었기 때문에 0이라는 기울기가 흐른다. (y가 x와 전혀 연결되지
  않았다면 x.grad는 None으로 남는다. derivatives는 그때 멈춘다.)
* cleargrad를 빼먹으면 2차 미분 자리에 32 + 48 = 80이 나온다.
"""
import numpy as np

from dezero_kr import Variable


def derivatives(x, f, n):
    """f의 1~n차 미분을 x에서 차례로 구해 리스트로 돌려준다 (미분이 끊기면 None)."""
    y = f(x)
    results = []
    for _ in range(n):
        x.cleargrad()
        y.backward(create_graph=True)
        if x.grad is None:  # y가 x와 연결되어 있지 않다 (상수)
            results.append(None)
            break
        results.append(float(x.grad.data))
        y = x.grad  # 다음 차수는 방금 구한 미분을 다시 미분한다
    return results


if __name__ == '__main__':
    x = Variable(np.array(2.0), name='x')
    found = derivatives(x, lambda x: x ** 4, 5)
    for order, value in enumerate(found, 1):
        print(f'{order}차 미분: {value}')

    # 함정: cleargrad 없이 2차 미분을 구하면 1차 미분(32)이 x.grad에 그대로 남아 있어 더해진다
    x = Variable(np.array(2.0), name='x')
    y = x ** 4
    y.backward(create_graph=True)
    gx = x.grad
    gx.backward()
    print('\ncleargrad를 빼먹은 "2차 미분":', float(x.grad.data), '(= 32 + 48)')
