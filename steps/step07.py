"""07단계: 역전파 자동화 (먼저 재귀로)

06단계에서는 backward를 부르는 순서를 사람이 정했다. 순전파를 할 때 "누가 누구를 만들었는지"를
기록해 두면 그 기록을 거꾸로 따라가며 자동으로 역전파할 수 있다.

* Variable.creator: 이 변수를 만든 함수
* Function.output:  이 함수가 만든 변수 (Function.input은 06단계부터 있다)

변수 -> 만든 함수 -> 그 함수의 입력 -> 그 입력을 만든 함수 ... 로 이어지는 연결이 계산 그래프다.
Variable.backward는 여기서 재귀로 구현한다: 자기 creator의 backward로 입력의 grad를 구하고
입력에게 backward를 다시 부탁한다. 짧고 읽기 쉽지만 그래프가 깊으면 파이썬의 재귀 한도에 걸린다.
08단계에서 반복문으로 바꾼다(이 튜토리얼에서 재귀로 역전파하는 것은 이 단계뿐이다).

Square, Exp의 계산(forward, backward)은 06단계와 같다.

출력에서 볼 것
* 그래프 연결 확인(True들)과, y.backward() 한 줄로 얻은 x.grad = 3.297442541400256
* Square를 1020번 이은 깊은 그래프에서 재귀 버전이 RecursionError로 실패한다.
* 그림 step07_graph.png: 같은 기록(creator, input)을 따라가며 만든 계산 그래프.
  DOT 텍스트(step07_graph.dot)는 언제나 쓰고, Graphviz의 dot 프로그램이 있으면 그림으로도
  그린다. 쓴 파일은 표준 오류로 알린다(표준 출력은 어느 컴퓨터에서나 같다).
"""
import shutil
import subprocess
import sys

import numpy as np


class Variable:
    def __init__(self, data):
        self.data = data
        self.grad = None
        self.creator = None  # 사용자가 직접 만든 변수(잎)는 creator가 없다

    def set_creator(self, func):
        self.creator = func

    def backward(self):
        """재귀 버전. 그래프 깊이만큼 파이썬 호출이 쌓인다."""
        f = self.creator
        if f is not None:
            x = f.input
            x.grad = f.backward(self.grad)
            x.backward()


class Function:
    def __call__(self, input):
        x = input.data
        y = self.forward(x)
        output = Variable(y)
        # 출력이 자기를 만든 함수를 기억해야 거꾸로 갈 수 있다
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


def graph_dot(y, names):
    """y에서 creator -> input 을 거슬러 가며 계산 그래프를 DOT 텍스트로 만든다
    (역전파와 같은 길).

    names: {변수: 이름}. 변수는 주황 타원, 함수는 파란 상자, 화살표는 계산이
    흐르는 방향이다.
    """
    def variable(v):  # 이름과 값을 적은 주황 타원
        label = f'{names[v]}\\n{v.data:.4g}'
        return f'"{names[v]}" [label="{label}", style=filled, color=orange]'

    lines = ['digraph g {', 'node [fontname="NanumGothic", fontsize=11]']
    v = y
    lines.append(variable(v))
    while v.creator is not None:
        f = v.creator
        fname = f'{type(f).__name__} ({names[f]})'
        lines.append(f'"{fname}" [shape=box, color=lightblue, style=filled]')
        lines.append(f'"{fname}" -> "{names[v]}"')
        v = f.input
        lines.append(variable(v))
        lines.append(f'"{names[v]}" -> "{fname}"')
    return '\n'.join(lines + ['}']) + '\n'


def deep_backward(Variable, depth):
    """x=1에 Square를 depth번 이은 그래프를 역전파해 x.grad(= 2**depth)를
    돌려준다. Variable: 입력 x를 만들 클래스."""
    x = Variable(np.array(1.0))
    y = x
    for _ in range(depth):
        y = Square()(y)
    y.grad = np.array(1.0)
    y.backward()
    return x.grad


# -----------------------------------------------------------------------------
# 여기부터 __main__ 앞까지는 그림을 파일로 쓰는 잔일이다 (이 단계의 내용이 아니다: 건너뛰어도 된다).
# DOT 텍스트를 .dot으로 쓰고, Graphviz의 dot 프로그램이 있으면 그 프로그램을 불러 그림으로 바꾼다.
# -----------------------------------------------------------------------------
def save_dot(dot_text, to_file):
    """DOT 텍스트를 to_file과 같은 이름의 .dot으로 쓰고, Graphviz의 dot 프로그램이
    있으면 to_file(.png/.svg)로 그린다. dot이 없으면 .dot만 남긴다."""
    stem, fmt = to_file.rsplit('.', 1)
    with open(stem + '.dot', 'w', encoding='utf-8') as f:
        f.write(dot_text)
    print(f'[그림 저장] {stem}.dot', file=sys.stderr)
    exe = shutil.which('dot')
    if exe is None:
        return
    proc = subprocess.run([exe, f'-T{fmt}'], input=dot_text.encode('utf-8'),
                          capture_output=True, timeout=60)
    if proc.returncode != 0:
        print(f'[그림 생략] dot 실패: {proc.stderr.decode(errors="replace")[:300]}',
              file=sys.stderr)
        return
    with open(to_file, 'wb') as f:  # 다 그린 뒤 한 번에 쓴다: 반쪽 파일이 남지 않는다
        f.write(proc.stdout)
    print(f'[그림 저장] {to_file}', file=sys.stderr)


if __name__ == '__main__':
    A, B, C = Square(), Exp(), Square()
    x = Variable(np.array(0.5))
    a = A(x)
    b = B(a)
    y = C(b)

    # 기록이 거꾸로 이어져 있는지 확인한다
    print('y.creator is C:', y.creator is C, ' C.input is b:', C.input is b)
    print('b.creator is B:', b.creator is B, ' B.input is a:', B.input is a)
    print('a.creator is A:', a.creator is A, ' A.input is x:', A.input is x)
    print('x.creator is None (사용자가 만든 변수):', x.creator is None)

    y.grad = np.array(1.0)
    y.backward()
    print('x.grad =', x.grad)
    names = {x: 'x', a: 'a', b: 'b', y: 'y', A: 'A', B: 'B', C: 'C'}
    save_dot(graph_dot(y, names), 'step07_graph.png')

    try:
        deep_backward(Variable, 1020)
        print('깊이 1020: 성공')
    except RecursionError as e:
        limit = sys.getrecursionlimit()
        print(f'깊이 1020: 재귀 버전은 {type(e).__name__}로 실패한다 (재귀 한도 {limit})')
