"""Every number on docs/tutorial/theory.md, computed.

Run ``python docs/tutorial/answers/theory_check.py``: each section prints the numbers the
page quotes and asserts them against a closed form where one exists.  The page shows this
output (``theory_check.txt`` next to this file, the golden copy); tests/test_theory.py runs
the script and compares its stdout with that file, so the page cannot drift from the code.

Sections
--------
1. vanishing: ten sigmoid layers, each Jacobian ``J_k = diag(sigmoid'(z_k)) W_k`` with
   ``W_k = 1`` and ``z_k = 0``: ``dh_10/dh_0 = 0.25**10 = 9.5367431640625e-07``.
2. init: activation spread through 10 ReLU layers of width 256 for three weight scales
   (0.01, Xavier/LeCun ``sqrt(1/n)``, He ``sqrt(2/n)``), fixed seed.
3. residual: ``y = x + F(x)`` has ``dy/dx = I + J_F``; ten blocks keep the gradient near 1,
   while ``F(x) = -x`` makes it exactly 0.
4. topo: micrograd-style depth-first ``build_topo`` vs the wrong order ``[c, d, a, b]`` on
   ``c = a*b, d = c + a`` (a=2, b=3): right a=4, b=2; wrong a=1, b=0; DeZero's generations.
5. shapes: the shapes of an MNIST layer's backward, and the 1-D ``x.T`` pitfall.
6. numerical: central differences of ``f(x, y) = x**2 + y**2`` at (3, 4) vs ``(2x, 2y)``.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable
from dezero_kr.utils import numerical_grad


def vanishing():
    """Chain of ten sigmoids; each bias resets the pre-activation to 0, where
    sigmoid' = 1/4."""
    grid = np.linspace(-10, 10, 20001)
    s = 1 / (1 + np.exp(-grid))
    slope = s * (1 - s)
    assert slope.max() == 0.25 and grid[slope.argmax()] == 0.0
    # shape (1,): F.sigmoid on a 0-d array currently fails (reported to the
    # lead)
    h0 = Variable(np.array([0.0]))
    h = h0
    for _ in range(10):
        z = h - h.data  # z_k = W h + b with W = 1, b = -h: always 0
        h = F.sigmoid(z)
    h.backward()
    assert h0.grad.data[0] == 0.25 ** 10 == 9.5367431640625e-07
    print('1. 기울기 소실')
    print(f"   max sigmoid'(z) on [-10, 10] = {slope.max()} at z = {grid[slope.argmax()]}")
    print(f'   dh10/dh0 (backward) = {h0.grad.data[0]:.10e}')
    print(f'   0.25 ** 10          = {0.25 ** 10:.10e}')
    # The same product with a weight w: (w/4)^10 explodes once |w| > 4.
    for w in (1.0, 4.0, 6.0):
        print(f'   W = {w}: (W * 0.25) ** 10 = {(w * 0.25) ** 10:.4g}')
    return h0.grad.data[0]


def init_spread():
    """Std of the activations after 10 ReLU layers (256 wide) for three weight
    scales."""
    n, depth = 256, 10
    print('2. 초기화: ReLU 10층(폭 256)을 지난 활성값의 표준편차')
    results = {}
    for label, scale in (('0.01', 0.01), ('Xavier sqrt(1/n)', np.sqrt(1 / n)),
                         ('He sqrt(2/n)', np.sqrt(2 / n))):
        rng = np.random.default_rng(0)
        h = rng.standard_normal((1000, n))
        for _ in range(depth):
            W = rng.standard_normal((n, n)) * scale
            h = np.maximum(h @ W, 0)
        results[label] = h.std()
        print(f'   {label:<17} std = {h.std():.3g}')
    # He keeps the scale (order 1); sqrt(1/n) halves the second moment each
    # layer; 0.01 shrinks it by (0.01**2 * 256 / 2) per layer.
    assert 0.3 < results['He sqrt(2/n)'] < 3
    ratio = results['Xavier sqrt(1/n)'] / results['He sqrt(2/n)']
    # (1/2)^(10/2): half the variance per layer
    assert abs(ratio - 2 ** -5) < 0.01, ratio
    assert results['0.01'] < 1e-8
    print(f'   Xavier / He = {ratio:.4f} (2 ** -5 = {2 ** -5})')
    return results


def residual():
    """d/dx of ten residual blocks x + 0.1 tanh(x) vs one block with F(x) = -x.
    """
    x = Variable(np.array(0.5))
    h = x
    for _ in range(10):
        h = h + 0.1 * F.tanh(h)
    h.backward()
    x_plain = Variable(np.array(0.5))
    h = x_plain
    for _ in range(10):
        h = 0.1 * F.tanh(h)
    h.backward()
    x_neg = Variable(np.array(0.5))
    y = x_neg + (-x_neg)
    y.backward()
    assert x_neg.grad.data == 0.0
    assert 1 < x.grad.data < 1.1 ** 10 and x_plain.grad.data < 0.1 ** 10
    print('3. 잔차 연결: dy/dx = I + J_F')
    print(f'   10 blocks x + 0.1 tanh(x): dy/dx = {float(x.grad.data):.6f}')
    print(f'   10 layers 0.1 tanh(x):     dy/dx = {float(x_plain.grad.data):.3e}')
    print(f'   F(x) = -x:                 dy/dx = {float(x_neg.grad.data)}')
    return float(x.grad.data), float(x_plain.grad.data), float(x_neg.grad.data)


class Value:
    """micrograd-sized scalar node: data, grad, children and the local
    derivatives."""

    def __init__(self, data, children=(), local_grads=(), name=''):
        self.data, self.grad, self.name = data, 0.0, name
        self.children, self.local_grads = children, local_grads

    def __mul__(self, other):
        return Value(self.data * other.data, (self, other), (other.data, self.data))

    def __add__(self, other):
        return Value(self.data + other.data, (self, other), (1.0, 1.0))


def build_topo(root):
    """Depth-first post-order: each node after every node it depends on."""
    topo, visited = [], set()

    def visit(v):
        if v not in visited:
            visited.add(v)
            for child in v.children:
                visit(child)
            topo.append(v)

    visit(root)
    return topo


def backprop(order, root):
    """Run the chain rule over ``order`` (parents first); returns nothing, fills
    .grad."""
    for v in order:
        v.grad = 0.0
    root.grad = 1.0
    for v in order:
        for child, local in zip(v.children, v.local_grads):
            child.grad += local * v.grad


def topo():
    a, b = Value(2.0, name='a'), Value(3.0, name='b')
    c = a * b
    c.name = 'c'
    d = c + a
    d.name = 'd'
    order = build_topo(d)
    backprop(list(reversed(order)), d)
    right = (a.grad, b.grad)
    backprop([c, d, a, b], d)
    wrong = (a.grad, b.grad)
    assert right == (4.0, 2.0) and wrong == (1.0, 0.0)
    # The same graph in dezero_kr: generations decide the order.
    av, bv = Variable(np.array(2.0)), Variable(np.array(3.0))
    cv = av * bv
    dv = cv + av
    dv.backward()
    assert (float(av.grad.data), float(bv.grad.data)) == right
    gens = {'a': av.generation, 'b': bv.generation, 'c': cv.generation, 'd': dv.generation}
    assert gens == {'a': 0, 'b': 0, 'c': 1, 'd': 2}
    print('4. 위상 정렬: c = a*b, d = c + a (a=2, b=3)')
    print('   build_topo(d) =', [v.name for v in order],
          '-> reversed:', [v.name for v in reversed(order)])
    print(f'   올바른 순서: a.grad = {right[0]}, b.grad = {right[1]}')
    print(f'   틀린 순서 [c, d, a, b]: a.grad = {wrong[0]}, b.grad = {wrong[1]}')
    print('   dezero_kr 세대:', gens)
    print(f'   dezero_kr backward: a.grad = {float(av.grad.data)}, '
          f'b.grad = {float(bv.grad.data)}')
    return right, wrong


def shapes():
    """Backward of y = x @ W + b for an MNIST batch, and the 1-D transpose
    pitfall."""
    N, I, O = 32, 784, 100
    x, W, gy = np.ones((N, I)), np.ones((I, O)), np.ones((N, O))
    gW, gx, gb = x.T @ gy, gy @ W.T, gy.sum(axis=0)
    assert (gW.shape, gx.shape, gb.shape) == ((I, O), (N, I), (O,))
    print('5. 모양: MNIST 층 y = x @ W + b')
    print(f'   x {x.shape}  W {W.shape}  b ({O},)  y {gy.shape}')
    print(f'   gW = x.T @ gy {gW.shape}  gx = gy @ W.T {gx.shape}  gb = sum(gy, 0) {gb.shape}')
    x1, gy1 = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 1.0])
    wrong = x1.T @ gy1
    right = np.outer(x1, gy1)
    assert x1.T.shape == (3,) and np.ndim(wrong) == 0 and wrong == 6.0 and right.shape == (3, 3)
    print(f'   1-D x: x.T.shape = {x1.T.shape}, x.T @ gy = {wrong} (스칼라!)')
    print(f'   x[:, None] @ gy[None, :] -> {right.shape}')
    return gW.shape, wrong


def numerical():
    """Central differences of f = x^2 + y^2 at (3, 4): the error is round-off
    only."""
    def f(v):
        return F.sum(v ** 2)

    v = Variable(np.array([3.0, 4.0]))
    y = f(v)
    y.backward()
    num = numerical_grad(f, np.array([3.0, 4.0]))
    err = np.abs(num - v.grad.data).max()
    assert v.grad.data.tolist() == [6.0, 8.0] and err < 1e-6
    print('6. 수치 미분: f(x, y) = x^2 + y^2, (3, 4)')
    print(f'   f = {float(y.data)}, backward = {v.grad.data.tolist()}, 2(x, y) = [6.0, 8.0]')
    print(f'   중앙 차분 = [{num[0]:.10f}, {num[1]:.10f}], 최대 오차 {err:.1e}')
    return err


def main():
    vanishing()
    init_spread()
    residual()
    topo()
    shapes()
    numerical()


if __name__ == '__main__':
    main()
