"""Regenerate the example graph pictures of docs/graph.md in docs/_static/graphs/.

    python docs/make_graphs.py            # write NAME.dot and NAME.svg for every example
    python docs/make_graphs.py --check    # exit 1 if a committed .dot differs from the code's
    python docs/make_graphs.py --out DIR  # write somewhere else

The DOT text depends only on dezero_kr, so it is byte-identical on every
machine.  The SVGs are drawn with graphviz-pure when it is installed (it
draws the same picture on every platform), else with whatever
``find_renderer()`` finds.  Labels are ASCII so that any renderer and font
draws them.  The docs build runs this script.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dezero_kr.core import Constant, Parameter, Variable  # noqa: E402
from dezero_kr.core import sum as vsum  # noqa: E402
from dezero_kr.functions_math import exp, log, sin, tanh  # noqa: E402
from dezero_kr.graph import (find_graphviz_pure, find_renderer, get_dot_graph,  # noqa: E402
                             plot_dot_graph)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, '_static', 'graphs')


def seed_graph():
    """u = x*y; L = u*u + u at x=2, y=3 (L=42, dL/dx=39, dL/dy=26)."""
    x = Variable(np.array(2.0), name='x')
    y = Variable(np.array(3.0), name='y')
    u = x * y
    u.name = 'u'
    L = u * u + u
    L.name = 'L'
    return x, y, L


def named_seed(k):
    """The seed dy/dy = 1 of the k-th backward, named so the picture labels it ``seedk``
    (a seed set on ``y.grad`` before ``y.backward()`` is used as is)."""
    return Variable(np.array(1.0), name=f'seed{k}')


def tanh_grad(order):
    """The order-th derivative of tanh at x=1 as a graph (step 35); the seeds are named."""
    x = Variable(np.array(1.0), name='x')
    y = tanh(x)
    y.name = 'y'
    y.grad = named_seed(1)
    y.backward(create_graph=True)
    for k in range(2, order + 1):
        gx = x.grad
        x.cleargrad()
        gx.grad = named_seed(k)
        gx.backward(create_graph=True)
    gx = x.grad
    gx.name = f'gx{order}'
    return gx


class _TwoLayers:
    """Stands in for a Model: named_params() yields (path, Parameter)."""

    def __init__(self):
        rng = np.random.default_rng(0)
        self.W0 = Parameter(rng.standard_normal((3, 4)) * 0.5)
        self.b0 = Parameter(np.zeros(4))
        self.W1 = Parameter(rng.standard_normal((4, 1)) * 0.5)
        self.b1 = Parameter(np.zeros(1))

    def named_params(self):
        yield from (('l0/W', self.W0), ('l0/b', self.b0), ('l1/W', self.W1), ('l1/b', self.b1))

    def __call__(self, x):
        return tanh(x @ self.W0 + self.b0) @ self.W1 + self.b1


def sin_chain(n=1000):
    """y = sin(sin(...sin(x))), n times, from x = 0.5 (graph.md section 6)."""
    x = Variable(np.array(0.5), name='x')
    y = x
    for _ in range(n):
        y = sin(y)
    y.name = 'y'
    return y


def examples():
    """(file stem, output Variable(s), options) for every picture."""
    x, y, L = seed_graph()
    yield 'seed', L, {}
    x, y, L = seed_graph()
    L.backward(retain_grad=True)  # keep dL/du = 13 on u as well
    yield 'seed_values', L, dict(verbose=False, show_values=True, show_grads=True)
    # show_values=0: no variable values, but a function's constant (RSubConstant c=1 of
    # 1 - y*y) is written in its box
    yield 'tanh_gx2', tanh_grad(2), dict(verbose=False, show_values=0)
    yield 'tanh_gx3', tanh_grad(3), dict(verbose=False, show_values=0)

    x = Variable(np.array(1.0), name='x')
    y = tanh(x)
    y.name = 'y'
    y.grad = named_seed(1)
    y.backward(create_graph=True)
    yield 'tanh_follow_grads', y, dict(verbose=False, follow_grads=True, show_values=0)

    model = _TwoLayers()
    batch = Constant(np.ones((2, 3)))
    yield 'model_params', model(batch), dict(param_names=model)

    x = Variable(np.array([0.0, 1.0]), name='x')
    with np.errstate(divide='ignore', invalid='ignore'):
        loss = vsum(exp(log(x) * 2.0))
        loss.name = 'loss'
        loss.backward()
    yield 'nonfinite', loss, dict(verbose=False, show_values=True, show_grads=True,
                                  mark_nonfinite=True)

    y = sin_chain()
    yield 'chain_max_depth', y, dict(max_depth=3)
    yield 'chain_collapse', y, dict(collapse=True)


def pick_renderer():
    return find_graphviz_pure() or find_renderer()


def generate(out_dir, renderer):
    written = []
    for stem, output, options in examples():
        path = os.path.join(out_dir, f'{stem}.svg')
        if renderer is None:
            plot_dot_graph(output, to_file=path[:-4] + '.dot', **options)
        else:
            plot_dot_graph(output, to_file=path, renderer=renderer, **options)
        written.append(stem)
    return written


def check(out_dir):
    """Compare the committed .dot files with freshly generated text; return the stale ones."""
    stale = []
    for stem, output, options in examples():
        path = os.path.join(out_dir, f'{stem}.dot')
        text = get_dot_graph(output, options.pop('verbose', True), **options)
        try:
            with open(path, encoding='utf-8') as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        if not same or not os.path.isfile(path[:-4] + '.svg'):
            stale.append(stem)
    return stale


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=DEFAULT_OUT, help='output folder (default: %(default)s)')
    parser.add_argument('--check', action='store_true',
                        help='only check that the committed pictures match the code')
    args = parser.parse_args(argv)
    if args.check:
        stale = check(args.out)
        if stale:
            print(f'stale graph pictures in {args.out}: {", ".join(stale)}; '
                  f'run `python docs/make_graphs.py`')
            return 1
        print(f'graph pictures in {args.out} are up to date')
        return 0
    renderer = pick_renderer()
    if renderer is None:
        print('no Graphviz renderer found (pip install graphviz-pure): writing .dot files only',
              file=sys.stderr)
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(args.out))) as tmp:
        written = generate(tmp, renderer)  # all or nothing: replace the files at the end
        for name in sorted(os.listdir(tmp)):
            os.replace(os.path.join(tmp, name), os.path.join(args.out, name))
    print(f'wrote {len(written)} graphs to {args.out} with {renderer or "no renderer"}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
