"""더 깊이(docs/tutorial/theory.md) 연습 문제의 확인: 초기화, 기울기 소실, 잔차 연결, 위상 정렬."""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable

from . import exercise

STUB_INIT = '''
"""더 깊이 문제 1: 초기화의 크기를 유도한다 (theory.md 2절).

z = W h의 한 성분은 n개 항의 합이다. W의 원소가 평균 0, 분산 Var(W)로 독립이면
Var(z) = n Var(W) E[h^2]. 층을 지나도 크기가 그대로이려면?
"""


def lecun_std(n):
    """기울기 1인 활성화(tanh, 항등)용: E[h^2] = Var(z)일 때 W의 표준편차."""
    raise NotImplementedError


def he_std(n):
    """ReLU용: ReLU는 E[h^2] = Var(z) / 2. W의 표준편차."""
    raise NotImplementedError


def glorot_std(n_in, n_out):
    """Glorot(Xavier): 순전파(n_in)와 역전파(n_out)의 가운데. W의 표준편차."""
    raise NotImplementedError


relu_second_moment = ...   # z ~ N(0, 1)일 때 E[relu(z)^2] (정확한 수)
'''


@exercise(1, '초기화의 크기 유도하기', STUB_INIT)
def check_init(t):
    lecun, he, glorot = t.get('lecun_std'), t.get('he_std'), t.get('glorot_std')
    for n in (1, 64, 256, 1000):
        with t.part(f'lecun_std({n})'):
            got = lecun(n)
        t.close(f'lecun_std({n}) = sqrt(1/n)', got, np.sqrt(1 / n), rtol=1e-12)
        with t.part(f'he_std({n})'):
            got = he(n)
        t.close(f'he_std({n}) = sqrt(2/n)', got, np.sqrt(2 / n), rtol=1e-12)
    for n_in, n_out in ((784, 100), (3, 5)):
        with t.part(f'glorot_std({n_in}, {n_out})'):
            got = glorot(n_in, n_out)
        t.close(f'glorot_std({n_in}, {n_out}) = sqrt(2/(n_in + n_out))', got,
                np.sqrt(2 / (n_in + n_out)), rtol=1e-12)
    t.close('relu_second_moment (E[relu(z)^2], z ~ N(0, 1))',
            t.get('relu_second_moment'), 0.5, rtol=1e-9)
    # 유도한 크기가 실제로 크기를 지키는지: ReLU 10층(폭 256)을 지난 평균 제곱.
    # 폭이 유한해 층마다 조금씩 흔들리지만 He는 1 근처에 남고, 1/n은 층마다 절반이 된다.
    for fn, low, high, what in ((he, 0.3, 3.0, '1 근처'),
                                (lecun, 0.3 * 2 ** -10, 3.0 * 2 ** -10, '2^-10 근처')):
        rng = np.random.default_rng(0)
        h = rng.standard_normal((500, 256))
        for _ in range(10):
            h = np.maximum(h @ (rng.standard_normal((256, 256)) * float(fn(256))), 0)
        t.true(f'{fn.__name__}(256)로 ReLU 10층을 지난 E[h^2]가 {what}',
               low < np.mean(h ** 2) < high, f'E[h^2] = {np.mean(h ** 2):.3g}')


STUB_VANISH = '''
"""더 깊이 문제 2: 시그모이드 기울기의 곱 (theory.md 1절).

스칼라 층 h_(k+1) = sigmoid(z_k), z_k = w_k h_k + b_k를 n개 쌓으면
dh_n/dh_0는 층마다의 국소 미분 w_k sigmoid'(z_k)의 곱이다.
"""
import numpy as np


def sigmoid_slope(z):
    """sigmoid'(z) = sigmoid(z) (1 - sigmoid(z)), z는 ndarray."""
    raise NotImplementedError


def chain_grad(zs, ws):
    """층마다의 z_k와 w_k(길이 n의 목록)로 dh_n/dh_0."""
    raise NotImplementedError


best_ten_layers = ...   # w = 1인 층 10개에서 dh_10/dh_0의 가장 큰 값 (정확한 수)
'''


def _sigmoid_chain(h0, ws, bs):
    """dezero_kr로 쓴 시그모이드 층 n개: h_(k+1) = sigmoid(w_k h_k + b_k)."""
    h0 = Variable(np.array([h0]))
    h, zs = h0, []
    for w, b in zip(ws, bs):
        z = w * h + b
        zs.append(float(z.data[0]))
        h = F.sigmoid(z)
    h.backward()
    return zs, float(h0.grad.data[0])


@exercise(2, '기울기 소실: 시그모이드 기울기의 곱', STUB_VANISH)
def check_vanish(t):
    slope = t.get('sigmoid_slope')
    chain_grad = t.get('chain_grad')
    zs = np.linspace(-6, 6, 25)
    z = Variable(zs.copy())
    F.sigmoid(z).backward()  # 원소마다의 sigmoid'(z): 합의 기울기 = 미분
    with t.part('sigmoid_slope(z)'):
        got = slope(zs.copy())
    t.close('sigmoid_slope(z) (F.sigmoid의 역전파와 비교)', got, z.grad.data, rtol=1e-12)
    rng = np.random.default_rng(5)
    for n, scale in ((10, 1.0), (6, 5.0)):
        ws, bs = rng.standard_normal(n) * scale, rng.standard_normal(n)
        zs_chain, grad = _sigmoid_chain(0.3, ws, bs)
        with t.part(f'chain_grad({n}층, w ~ {scale} N(0, 1))'):
            got = chain_grad(list(zs_chain), list(ws))
        t.close(f'chain_grad({n}층, w ~ {scale} N(0, 1)) (역전파와 비교)', got, grad,
                rtol=1e-10)
    t.close('best_ten_layers (0이 아닌 가장 좋은 경우)', t.get('best_ten_layers'), 0.25 ** 10,
            rtol=1e-9)


STUB_RESIDUAL = '''
"""더 깊이 문제 3: 잔차 연결의 기울기 (theory.md 3절).

h_(k+1) = h_k + a tanh(h_k)를 n번. 블록 하나의 미분은 1 + a (1 - tanh(h_k)^2).
"""
import numpy as np


def residual_grad(x0, a, n):
    """x0에서 시작한 n개 블록의 dh_n/dx0 (float)."""
    raise NotImplementedError


cancel_a = ...   # 블록이 x0 = 0에서 기울기를 정확히 0으로 만드는 a (F(x) = a tanh(x))
'''


@exercise(3, '잔차 연결의 기울기', STUB_RESIDUAL)
def check_residual(t):
    residual_grad = t.get('residual_grad')
    for x0, a, n in ((0.5, 0.1, 10), (-1.2, 0.7, 5), (2.0, -0.3, 8)):
        x = Variable(np.array(x0))
        h = x
        for _ in range(n):
            h = h + a * F.tanh(h)
        h.backward()
        with t.part(f'residual_grad({x0}, {a}, {n})'):
            got = residual_grad(x0, a, n)
        t.close(f'residual_grad({x0}, {a}, {n}) (역전파와 비교)', got, x.grad.data,
                rtol=1e-12)
    a = t.get('cancel_a')
    x = Variable(np.array(0.0))
    (x + a * F.tanh(x)).backward()
    t.close('cancel_a: x + a tanh(x)의 x = 0에서의 기울기가 0', x.grad.data, 0.0, atol=1e-12)


STUB_TOPO = '''
"""더 깊이 문제 4: 깊이 우선 위상 정렬 (theory.md 4절).

노드는 .children(이 노드를 만든 입력 노드의 튜플)을 가진다. build_topo(root)는 root에서
닿는 노드를 하나씩, **모든 자식 뒤에** 오도록 나열한 목록을 돌려준다(root가 맨 끝).
역전파는 이 목록을 거꾸로 돈다.
"""


def build_topo(root):
    raise NotImplementedError
'''


class Node:
    """스칼라 노드: 값, 기울기, 입력 노드(children)와 그 국소 미분. 해시할 수 있어
    답의 visited 집합에 그대로 넣을 수 있다."""
    __slots__ = ('data', 'grad', 'name', 'children', 'local_grads')

    def __init__(self, data, name='', children=(), local_grads=()):
        self.data, self.grad, self.name = data, 0.0, name
        self.children, self.local_grads = children, local_grads

    def __repr__(self):
        return self.name or f'Node({self.data})'


def _op(kind, a, b, name=''):
    """a*b 또는 a+b 노드: 국소 미분은 곱이면 (b, a), 합이면 (1, 1)."""
    if kind == '*':
        return Node(a.data * b.data, name, (a, b), (b.data, a.data))
    return Node(a.data + b.data, name, (a, b), (1.0, 1.0))


def _graphs():
    """(이름, root, 잎 목록, 잎마다 정답 기울기; None이면 중앙 차분)."""
    a, b = Node(2.0, 'a'), Node(3.0, 'b')
    d = _op('+', _op('*', a, b, 'c'), a, 'd')
    yield 'c = a*b, d = c + a', d, (a, b), (4.0, 2.0)
    x = Node(1.5, 'x')
    u = _op('*', x, x, 'u')
    y = _op('+', _op('*', u, _op('+', x, x, 'v')), u, 'y')
    # y = x^2 * 2x + x^2 = 2x^3 + x^2, dy/dx = 6x^2 + 2x
    yield 'y = (x*x)*(x+x) + x*x', y, (x,), (6 * 1.5 ** 2 + 2 * 1.5,)
    p = Node(0.5, 'p')
    h = p
    for _ in range(30):
        h = _op('+', _op('*', h, p), p)
    # h_(k+1) = h_k p + p: 다항식이므로 기울기는 수치로 비교한다
    yield '30층 h = h*p + p', h, (p,), (None,)


@exercise(4, '깊이 우선 위상 정렬', STUB_TOPO)
def check_topo(t):
    build_topo = t.get('build_topo')
    for name, root, leaves, grads in _graphs():
        with t.part(f'build_topo({name})'):
            order = build_topo(root)
        reach, stack = set(), [root]
        while stack:
            node = stack.pop()
            if id(node) not in reach:
                reach.add(id(node))
                stack.extend(node.children)
        t.equal(f'{name}: 목록의 길이 (닿는 노드 수, 중복 없이)', len(order), len(reach))
        t.equal(f'{name}: 노드가 한 번씩', len({id(v) for v in order}), len(reach))
        t.true(f'{name}: root가 맨 끝', order[-1] is root)
        place = {id(v): i for i, v in enumerate(order)}
        late = [(v, c) for v in order for c in v.children
                if place.get(id(c), -1) > place[id(v)]]
        t.true(f'{name}: 모든 노드가 자식 뒤에', not late,
               f'{late[0][1]!r}이(가) 그것을 쓰는 {late[0][0]!r}보다 뒤에 있습니다.'
               if late else '')
        for v in order:
            v.grad = 0.0
        root.grad = 1.0
        for v in reversed(order):
            for child, local in zip(v.children, v.local_grads):
                child.grad += local * v.grad
        for leaf, expected in zip(leaves, grads):
            if expected is None:
                eps, p0 = 1e-6, leaf.data
                expected = (_chain(p0 + eps) - _chain(p0 - eps)) / (2 * eps)
                t.close(f'{name}: {leaf!r}.grad (중앙 차분과 비교)', leaf.grad, expected,
                        rtol=1e-6)
            else:
                t.close(f'{name}: {leaf!r}.grad', leaf.grad, expected, rtol=1e-12)


def _chain(p):
    h = p
    for _ in range(30):
        h = h * p + p
    return h
