"""15단계: 복잡한 계산 그래프 (이론)

지금까지의 그래프는 거의 한 줄이었다. 변수 하나가 여러 함수에 쓰이고 그 결과가 다시 합쳐지는
그래프(마름모 모양)에서는 역전파 순서가 중요하다. 변수 a의 backward를 시작하려면 a를 쓴 모든
함수에서 미분이 다 모여 있어야 한다. 14단계의 "목록 끝에서 꺼내기"는 이 조건을 지키지 않는다.

* 마름모: a = x^2, b = a^2, c = a^2, y = b + c  ->  y = 2x^4,  dy/dx = 8x^3 (x=2이면 64)
  14단계 방식은 a의 미분이 반쯤만 모였을 때 a=x^2를 처리하고, 나머지가 온 뒤 또 처리해서
  잘못된 값(96)을 낸다.
* 제2고지의 대표 예제: u = x*y, L = u*u + u (x=2, y=3): L=42, dL/du=13, dL/dx=39, dL/dy=26.
  14단계 방식은 u=x*y를 두 번 이상 처리해 틀린다.

해결책은 "세대(generation)"다. 함수의 세대는 입력 변수를 만든 함수들보다 하나 뒤(입력이 잎뿐이면 0)
로 정한다. 세대가 큰(출력에 가까운) 함수부터 한 번씩만 처리하면, 어떤 함수를 처리할 때 그 출력의
미분은 이미 다 모여 있다. 이 단계에서는 세대를 직접 계산해 그 순서로 역전파해 보고, 16단계에서
이것을 프레임워크에 넣는다. 프레임워크 자체는 바뀌지 않는다(14단계와 같다).

출력에서 볼 것
* 14단계 방식의 처리 순서(같은 함수가 두 번 나온다)와 틀린 미분
* 각 함수의 세대, 세대순 처리 순서와 맞는 미분(64 / 39, 26)
* 그림 step15_diamond_order.png: 마름모 그래프에 변수·함수의 세대와 두 방식의 처리 순서를
  적은 것(DOT 텍스트를 코드로 만들어 그린다. DOT은 25단계에서 자세히 본다). 07단계처럼
  .dot은 언제나 쓰고, Graphviz의 dot 프로그램이 있을 때만 그림으로 그린다.
"""
import shutil
import subprocess
import sys

import numpy as np


def as_array(x):
    """NumPy 스칼라(np.float64 등)나 파이썬 수를 0차원 배열로 바꾼다."""
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
            self.grad = np.ones_like(self.data)
        for f in self._creators():
            self._backprop_through(f)

    def _creators(self):
        """이 변수에 이르는 함수들을 하나씩 내준다. 아직 순서를 따지지 않는다.
        """
        funcs = [] if self.creator is None else [self.creator]
        while funcs:
            f = funcs.pop()
            yield f
            funcs.extend(x.creator for x in f.inputs if x.creator is not None)

    @staticmethod
    def _backprop_through(f):
        gys = [y.grad for y in Variable._outputs(f)]
        gxs = f.backward(*gys)
        if not isinstance(gxs, tuple):
            gxs = (gxs,)
        for x, gx in zip(f.inputs, gxs):
            x.receive_grad(gx)

    @staticmethod
    def _outputs(f):
        """f가 만든 출력 변수들. 17단계에서 약한 참조로 바뀌면 여기가
        바뀐다."""
        return f.outputs

    def receive_grad(self, gx):
        # 새 배열을 만드는 덧셈이어야 다른 변수와 배열을 공유하지 않는다
        self.grad = gx if self.grad is None else self.grad + gx

    def cleargrad(self):
        self.grad = None


class Function:
    def __call__(self, *inputs):
        xs = [x.data for x in inputs]
        ys = self.forward(*xs)
        if not isinstance(ys, tuple):
            ys = (ys,)
        outputs = [Variable(as_array(y)) for y in ys]
        self.link(inputs, outputs)
        return outputs if len(outputs) > 1 else outputs[0]

    def link(self, inputs, outputs):
        """순전파 결과를 계산 그래프에 잇는다."""
        for output in outputs:
            output.set_creator(self)
        self.inputs = inputs
        self.outputs = outputs

    def forward(self, *xs):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')

    def backward(self, *gys):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.backward를 구현해야 합니다')


class Square(Function):
    def forward(self, x):
        return x ** 2

    def backward(self, gy):
        x = self.inputs[0].data
        return 2 * x * gy


class Exp(Function):
    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.inputs[0].data
        return np.exp(x) * gy


class Add(Function):
    def forward(self, x0, x1):
        return x0 + x1

    def backward(self, gy):
        return gy, gy  # 덧셈은 미분을 그대로 양쪽에 흘려보낸다


class Mul(Function):
    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs[0].data, self.inputs[1].data
        return gy * x1, gy * x0


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def add(x0, x1):
    return Add()(x0, x1)


def mul(x0, x1):
    return Mul()(x0, x1)


def traced_backward(y):
    """y.backward()와 같은 일(14단계 방식)을 하되, 처리한 함수를 순서대로
    돌려준다."""
    order = []
    if y.grad is None:
        y.grad = np.ones_like(y.data)
    for f in y._creators():
        order.append(f)
        y._backprop_through(f)
    return order


def function_generations(y):
    """y에 이르는 함수마다 세대를 매긴다(입력이 모두 잎이면 0, 아니면 입력을
    만든 함수 세대의 최댓값 + 1)."""
    funcs, stack = [], [y.creator]
    while stack:  # y에서 거슬러 올라가며 함수를 모두 모은다
        f = stack.pop()
        if f is not None and f not in funcs:
            funcs.append(f)
            stack.extend(x.creator for x in f.inputs)
    gen = {f: 0 for f in funcs}
    # 가장 긴 경로도 함수 개수를 넘지 않으므로 이만큼 반복하면 값이 정해진다
    for _ in funcs:
        for f in funcs:
            gen[f] = max(0 if x.creator is None else gen[x.creator] + 1
                         for x in f.inputs)
    return gen


def compare(title, build, leaves, expected):
    """같은 그래프를 두 번 만들어 14단계 방식과 세대순 방식으로 역전파한다.
    (세대순으로 역전파한 출력, 그 그래프의 DOT 텍스트)를 돌려준다."""
    print(f'== {title}')
    xs = [Variable(np.array(v)) for v in leaves]
    out, labels = build(*xs)
    wrong = [labels[f] for f in traced_backward(out)]
    print('  14단계 처리 순서:', ' -> '.join(wrong))
    print('  14단계 미분:', ', '.join(str(x.grad) for x in xs))

    xs = [Variable(np.array(v)) for v in leaves]
    out, labels = build(*xs)
    gen = function_generations(out)
    # 세대가 큰 것부터, 각 함수는 한 번씩
    order = sorted(gen, key=lambda f: -gen[f])
    print('  세대:', ', '.join(f'{labels[f]}: {gen[f]}' for f in order))
    out.grad = np.array(1.0)
    for f in order:
        out._backprop_through(f)
    print('  세대순 처리 순서:', ' -> '.join(labels[f] for f in order))
    print('  세대순 미분:', ', '.join(str(x.grad) for x in xs),
          ' 정답:', ', '.join(map(str, expected)))
    return out, order_dot(order, labels, gen, wrong)


def diamond(x):
    a = square(x)
    b = square(a)
    c = square(a)
    y = add(b, c)
    labels = {a.creator: 'a=x^2', b.creator: 'b=a^2', c.creator: 'c=a^2',
              y.creator: 'y=b+c'}
    return y, labels


def seed_example(x, y):
    u = mul(x, y)
    uu = mul(u, u)
    L = add(uu, u)
    labels = {u.creator: 'u=x*y', uu.creator: 'u*u', L.creator: 'L=u*u+u'}
    return L, labels


# -----------------------------------------------------------------------------
# 여기부터 __main__ 앞까지는 그림을 파일로 쓰는 잔일이다 (이 단계의 내용이 아니다: 건너뛰어도 된다).
# DOT 텍스트를 .dot으로 쓰고, Graphviz의 dot 프로그램이 있으면 그 프로그램을 불러 그림으로 바꾼다.
# -----------------------------------------------------------------------------
def order_dot(funcs, labels, gen, wrong):
    """그래프를 DOT 텍스트로: 변수(타원)와 함수(상자)에 세대와 두 방식의 처리
    순서를 적는다.

    funcs는 세대순(출력 쪽부터). 함수 이름 'a=x^2'의 '=' 앞이 출력 변수의
    이름이고, 잎 변수에는 입력 쪽에서 만난 순서대로 x, y, ... 를 붙인다.
    """
    names, leaves = {}, iter('xyzw')
    for f in funcs:
        for out in f.outputs:
            names[id(out)] = labels[f].split('=')[0]
    lines = ['digraph g {', 'node [fontname="NanumGothic", fontsize=11]']
    for f in reversed(funcs):  # 입력 쪽부터 적어야 잎 이름이 x, y 순서로 붙는다
        for x in f.inputs:
            if id(x) not in names:
                names[id(x)] = next(leaves)
                lines.append(f'v{id(x)} [label="{names[id(x)]}\\n세대 0", '
                             'color=orange, style=filled]')
            lines.append(f'v{id(x)} -> f{id(f)}')
        when = ', '.join(str(i + 1) for i, name in enumerate(wrong)
                         if name == labels[f])
        lines.append(f'f{id(f)} [label="{labels[f]}  (세대 {gen[f]})\\n'
                     f'14단계: {when}번째\\n세대순: {funcs.index(f) + 1}번째", '
                     'shape=box, color=lightblue, style=filled]')
        for out in f.outputs:
            lines.append(f'v{id(out)} [label="{names[id(out)]}\\n세대 {gen[f] + 1}", '
                         'color=orange, style=filled]')
            lines.append(f'f{id(f)} -> v{id(out)}')
    lines.append('}')
    # 같은 줄(두 번 쓰인 간선)은 한 번만
    return '\n'.join(dict.fromkeys(lines)) + '\n'


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
    y, picture = compare('마름모 y = 2x^4, x=2', diamond, [2.0], [8 * 2.0 ** 3])
    save_dot(picture, 'step15_diamond_order.png')
    L, _ = compare('L = u*u + u, u = x*y, x=2, y=3', seed_example,
                   [2.0, 3.0], [39.0, 26.0])
    u = L.creator.inputs[1]
    print('  L =', L.data, ' dL/du =', u.grad, '(= 2u + 1)')
