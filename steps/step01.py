"""01단계: 상자로서의 변수(Variable)

딥러닝 프레임워크의 첫 부품은 "값을 담는 상자"다. 이 단계의 Variable은 NumPy 배열
하나(data)를 들고 있을 뿐이지만, 앞으로 이 상자에 미분값(grad), 자신을 만든 함수(creator),
이름, 연산자 등이 하나씩 붙는다. 01~22단계는 dezero_kr 패키지를 쓰지 않고 이 파일들 안에서
프레임워크를 처음부터 키운다. 단계마다 파일 하나가 그 단계까지의 프레임워크 전부다: 앞 단계에서
바뀌지 않은 코드도 다시 적어 두었으므로, 다른 파일을 열지 않고 위에서 아래로 읽으면 된다
(NumPy와 파이썬 표준 라이브러리만 쓴다).

실행: python steps/step01.py  (steps/ 안에서 python step01.py 도 된다)

출력에서 볼 것
* 상자 안의 값은 바꿔 넣을 수 있다.
* NumPy 배열의 ndim(차원 수)과 shape: 스칼라는 0차원, 벡터는 1차원, 행렬은 2차원이다.
"""
import numpy as np


class Variable:
    """NumPy 배열 하나를 담는 상자."""

    def __init__(self, data):
        self.data = data


if __name__ == '__main__':
    x = Variable(np.array(1.0))
    print('x.data =', x.data)

    # 상자는 그대로 두고 내용물만 바꾼다
    x.data = np.array(2.0)
    print('새 값을 넣은 뒤 x.data =', x.data)

    print('\n배열의 차원(ndim)과 모양(shape)')
    for label, a in [('스칼라', np.array(1.0)),
                     ('벡터', np.array([1, 2, 3])),
                     ('행렬', np.array([[1, 2, 3], [4, 5, 6]]))]:
        v = Variable(a)
        print(f'{label}: ndim={v.data.ndim} shape={v.data.shape}')
