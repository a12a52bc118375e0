"""dezero_kr 데모 (demo): 설치 직후 한 번에 훑어보기.

    python examples/demo.py              # 그림 파일은 현재 폴더에
    python examples/demo.py --out demo   # 또는 demo/ 폴더에

NumPy만 있으면 돌아가고 몇 초면 끝난다. 네 부분으로 되어 있다.

1. 자동 미분 (define-by-run): 식을 계산하는 동안 그래프가 만들어지고 backward()가 그 그래프를
   거꾸로 따라가며 미분한다. u = x*y, L = u*u + u 에서 x = 2, y = 3 이면 L = 42,
   dL/dx = (2u + 1) y = 39, dL/dy = (2u + 1) x = 26. 미분 계산도 그래프로 기록하면
   (create_graph=True) 미분을 다시 미분할 수 있다: tanh의 1~3차 미분, 뉴턴 방법.
2. 학습: 나선형 데이터(점 300개, 세 클래스)를 MLP로 분류하고 테스트 정확도를 출력한다.
3. 계산 그래프 내보내기: 1의 그래프를 demo_graph.dot(Graphviz DOT 텍스트)으로 쓰고, 그림을 그릴
   프로그램(Graphviz `dot` 또는 `graphviz-pure`)이 있으면 demo_graph.svg도 쓴다. 없으면 설치
   방법을 알려 주고 넘어간다.
4. 덤: 순방향 모드(forward mode, jvp)로 방향 미분, 전역 노름 기울기 클리핑.

출력은 시드로 고정되어 실행할 때마다 같다 (그림 파일 줄만 설치된 렌더러에 따라 다르다).
"""
import argparse
import os
import sys

import numpy as np

import dezero_kr
import dezero_kr.functions as F
from dezero_kr import DataLoader, Variable, no_grad
from dezero_kr.autograd import jvp
from dezero_kr.datasets import Spiral
from dezero_kr.grad_clip import clip_grad_norm
from dezero_kr.graph import GraphRenderError, RendererNotFoundError, plot_dot_graph
from dezero_kr.models import MLP
from dezero_kr.optimizers import Adam
from dezero_kr.paths import display_path

from _util import use_utf8_safe_output


def heading(number, korean, english):
    print(f'\n[{number}] {korean} / {english}')


def seed_example():
    """u = x*y, L = u*u + u at x=2, y=3 -> (L, x, y), gradients filled in."""
    x = Variable(np.array(2.0), name='x')
    y = Variable(np.array(3.0), name='y')
    u = x * y
    u.name = 'u'
    L = u * u + u
    L.name = 'L'
    L.backward()
    return L, x, y


def tanh_derivatives(x0, order):
    """[d^k tanh / dx^k at x0 for k = 1..order] by repeated backward(create_graph=True)."""
    x = Variable(np.array(x0))
    g = F.tanh(x)
    values = []
    for _ in range(order):
        x.cleargrad()
        g.backward(create_graph=True)
        g = x.grad
        values.append(float(g.data))
    return values


def newton(x0, steps):
    """Minimise f(x) = x^4 - 2x^2 with x <- x - f'(x) / f''(x); both derivatives by autodiff."""
    x = Variable(np.array(x0))
    path = [x0]
    for _ in range(steps):
        y = x ** 4 - 2 * x ** 2
        x.cleargrad()
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        x.data = x.data - gx.data / x.grad.data
        path.append(float(x.data))
    return path


def part1_autodiff():
    heading(1, '자동 미분', 'define-by-run autodiff')
    L, x, y = seed_example()
    print('  u = x*y, L = u*u + u  (x = 2, y = 3)')
    print(f'  L = {float(L.data):g}, dL/dx = {float(x.grad.data):g}, dL/dy = {float(y.grad.data):g}'
          '   (손으로 / by hand: 42, 39, 26)')

    x0 = 0.5
    t = np.tanh(x0)
    exact = [1 - t ** 2, -2 * t * (1 - t ** 2), (1 - t ** 2) * (6 * t ** 2 - 2)]
    print(f'  고차 미분 / higher order: tanh 의 k차 미분 at x = {x0}')
    for k, (got, want) in enumerate(zip(tanh_derivatives(x0, 3), exact), start=1):
        print(f'    k={k}: autodiff {got:+.6f}   공식 / closed form {want:+.6f}')
    path = newton(2.0, 6)
    print('  뉴턴 방법 / Newton: f(x) = x^4 - 2x^2, x <- x - f\'(x)/f\'\'(x)')
    print('    x: ' + ' -> '.join(f'{v:.6f}' for v in path) + '   (최솟값 / minimum at x = 1)')
    return L


def part2_training(seed, epochs):
    heading(2, '나선형 데이터 학습', 'training an MLP on the spiral data')
    np.random.seed(seed)  # the initial weights
    train_set, test_set = Spiral(train=True), Spiral(train=False)
    model = MLP((30, 3), activation=F.relu)
    optimizer = Adam(alpha=0.01).setup(model)
    loader = DataLoader(train_set, batch_size=30, seed=seed)
    print(f'  데이터 / data: {len(train_set)} train, {len(test_set)} test points, 3 classes;'
          f' MLP 2 -> 30 -> 3, Adam, {epochs} epochs')
    for epoch in range(1, epochs + 1):
        total = 0.0
        for x, t in loader:
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            total += float(loss.data) * len(t)
        if epoch == 1 or epoch % (epochs // 4 or 1) == 0:
            print(f'    epoch {epoch:3d}  loss {total / len(train_set):.4f}')
    with no_grad():
        acc = float(F.accuracy(model(test_set.data), test_set.label).data)
    print(f'  테스트 정확도 / test accuracy: {acc:.4f}')
    return train_set


def part3_graph(L, out):
    heading(3, '계산 그래프 내보내기', 'exporting the computation graph')
    svg = os.path.join(out, 'demo_graph.svg')
    dot = os.path.join(out, 'demo_graph.dot')
    try:
        plot_dot_graph(L, verbose=True, to_file=svg)  # writes demo_graph.dot, then draws the svg
        print(f'  {display_path(dot)}  (DOT 텍스트 / DOT text)')
        print(f'  {display_path(svg)}  (그림 / picture)')
    except RendererNotFoundError:
        print(f'  {display_path(dot)}  (DOT 텍스트 / DOT text)')
        print('  그림을 그릴 프로그램이 없어 SVG는 건너뜀 / no usable Graphviz renderer, SVG skipped.')
        print('  설치 / install one:  pip install graphviz-pure   (or: apt-get install graphviz,'
              ' brew install graphviz)')
    except GraphRenderError as e:
        print(f'  {display_path(dot)}  (DOT 텍스트 / DOT text)')
        print(f'  SVG를 그리지 못함 / could not draw the SVG: {str(e).splitlines()[0][:300]}')


def part4_extras(train_set, seed):
    heading(4, '덤: 순방향 모드와 기울기 클리핑', 'extras: forward mode and gradient clipping')

    def f(x, y):
        u = x * y
        return u * u + u

    # One forward pass with tangents (1, 1) gives dL/dx + dL/dy = 39 + 26 = 65.
    L, dL = jvp(f, (np.array(2.0), np.array(3.0)), (np.array(1.0), np.array(1.0)))
    print(f'  jvp: 방향 (1, 1)의 방향 미분 / directional derivative along (1, 1): {float(dL.data):g}'
          f'  (= 39 + 26, L = {float(L.data):g})')

    # The gradient of a fresh model's first batch, clipped as a training loop would
    # (loss.backward(); clip_grad_norm(...); optimizer.update()).
    np.random.seed(seed)
    model = MLP((30, 3), activation=F.relu)
    x, t = train_set[0:100]
    F.softmax_cross_entropy(model(x), t).backward()
    before = clip_grad_norm(model.params(), max_norm=0.1)
    after = np.sqrt(sum(float((p.grad.data.astype(np.float64) ** 2).sum()) for p in model.params()))
    print(f'  clip_grad_norm(max_norm=0.1): 전역 노름 / global norm {before:.4f} -> {after:.4f}'
          '  (방향은 그대로 / same direction)')


def main(argv=None):
    use_utf8_safe_output()
    p = argparse.ArgumentParser(description='dezero_kr demo: autodiff, training, graph export, extras')
    p.add_argument('--out', default='.', help='folder for demo_graph.dot / .svg (default: here)')
    p.add_argument('--seed', type=int, default=0, help='random seed (default 0)')
    p.add_argument('--epochs', type=int, default=100, help='spiral training epochs (default 100)')
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    print(f'dezero_kr {dezero_kr.__version__} 데모 / demo (NumPy {np.__version__})')
    L = part1_autodiff()
    train_set = part2_training(args.seed, args.epochs)
    part3_graph(L, args.out)
    part4_extras(train_set, args.seed)
    print('\n다음 / next: examples/ 폴더의 다른 예제, docs/examples.md')
    return 0


if __name__ == '__main__':
    sys.exit(main())
