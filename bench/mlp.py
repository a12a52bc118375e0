"""MLP training step: dezero_kr against a hand-written NumPy floor of the same math.

Model 784-1000-10, batch 100, float32, plain SGD, softmax cross entropy,
sigmoid (default) or ReLU hidden layer.  One training step is forward, loss,
backward and update.  The NumPy floor does exactly the same array operations
(same dtype, same formulas) and, like dezero_kr with a data batch, never
computes the gradient of the input batch.  Both start from the same weights
and their weights are compared after the run, so the floor is the same math.

    python -m bench.mlp [--activation sigmoid|relu] [--iters 20] [--repeat 15]

Prints the median time per step of each and the ratio dezero_kr / floor.
"""
from bench import _timing  # first: one BLAS thread before NumPy loads

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

IN, HIDDEN, OUT, BATCH, LR = 784, 1000, 10, 100, 0.1


def aligned_copy(a, alignment=64):
    """A copy of ``a`` whose data starts on an ``alignment``-byte boundary.

    Both implementations get their weights this way: BLAS speed depends a
    little on alignment, and malloc gives arbitrary 16-byte offsets.
    """
    buf = np.empty(a.nbytes + alignment, dtype=np.uint8)
    start = (-buf.ctypes.data) % alignment
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def make_data(seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(BATCH, IN).astype(np.float32)
    t = rng.randint(0, OUT, size=BATCH)
    return x, t


def dezero_step_fn(x, t, activation):
    import dezero_kr.functions_nn as FN
    from dezero_kr.models import MLP
    from dezero_kr.optimizers import SGD

    act = FN.sigmoid if activation == 'sigmoid' else FN.relu
    np.random.seed(0)
    model = MLP((HIDDEN, OUT), activation=act)
    model.l0.in_size = IN
    model.l0._init_W()
    model.l1.in_size = HIDDEN
    model.l1._init_W()
    for p in model.params():
        p.data = aligned_copy(p.data)
    optimizer = SGD(LR).setup(model)

    def step():
        y = model(x)
        loss = FN.softmax_cross_entropy(y, t)
        model.cleargrads()
        loss.backward()
        optimizer.update()

    params = [p.data for p in model.params()]  # W1, b1, W2, b2
    return step, params


def numpy_step_fn(x, t, activation, params):
    W1, b1, W2, b2 = [aligned_copy(p) for p in params]
    n = x.shape[0]
    rows = np.arange(n)

    def step():
        nonlocal W1, b1, W2, b2  # updated in place (``-=`` rebinds the same arrays)
        # forward
        z1 = x @ W1
        z1 += b1
        if activation == 'sigmoid':
            h = z1 * 0.5
            np.tanh(h, out=h)
            h *= 0.5
            h += 0.5
        else:
            h = np.maximum(z1, 0)
        z2 = h @ W2
        z2 += b2
        m = z2.max(axis=1, keepdims=True)
        z = z2 - m
        lse = np.log(np.exp(z).sum(axis=1, keepdims=True))
        loss = (lse.sum() - z[rows, t].sum()) / n  # noqa: F841 (computed, as in the framework)
        lse += m
        # backward: softmax CE gradient (p - onehot) / N, then the two layers
        gz2 = z2 - lse
        np.exp(gz2, out=gz2)
        gz2[rows, t] -= 1
        gz2 *= np.float32(1.0) / n
        gW2 = h.T @ gz2
        gb2 = gz2.sum(axis=0)
        gh = gz2 @ W2.T
        if activation == 'sigmoid':
            gz1 = 1 - h
            gz1 *= h
            gz1 *= gh
        else:
            gz1 = gh * (z1 > 0)
        gW1 = x.T @ gz1
        gb1 = gz1.sum(axis=0)
        # SGD update
        W1 -= LR * gW1
        b1 -= LR * gb1
        W2 -= LR * gW2
        b2 -= LR * gb2

    return step, [W1, b1, W2, b2]


def products_fn(x, params):
    """The step's five BLAS products (forward x W1, h W2; backward h^T gz2, gz2 W2^T, x^T gz1)
    and SGD's update of the four parameters (``p -= lr * g``, as ``SGD.update_one``), on copies
    of the step's arrays: the NumPy calls a bit-for-bit replay must make too."""
    params = [p.copy() for p in params]
    grads = [np.full_like(p, 1e-6) for p in params]
    W1, _, W2, _ = params
    h = np.full((x.shape[0], W1.shape[1]), 0.5, dtype=np.float32)
    gz2 = np.full((x.shape[0], W2.shape[1]), 0.01, dtype=np.float32)
    gz1 = np.full(h.shape, 0.01, dtype=np.float32)

    def step():
        x @ W1
        h @ W2
        h.T @ gz2
        gz2 @ W2.T
        x.T @ gz1
        for p, g in zip(params, grads):
            p -= LR * g
    return step


def _block(step, iters):
    def run():
        for _ in range(iters):
            step()
    return run


def run(activation='sigmoid', iters=20, repeat=15):
    import dezero_kr
    x, t = make_data()
    dz_step, dz_params = dezero_step_fn(x, t, activation)
    np_step, np_params = numpy_step_fn(x, t, activation, dz_params)
    st_step, st_params = dezero_step_fn(x, t, activation)
    st_step = dezero_kr.static_graph(st_step)  # traced on its first call, then replayed

    # Same math: after the same number of steps the weights agree.
    for _ in range(5):
        dz_step()
        np_step()
        st_step()
    for a, b, c in zip(dz_params, np_params, st_params):
        assert a.dtype == b.dtype == np.float32, (a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(a, c)  # static_graph: eager's numbers bit for bit

    # Interleaved blocks of ``iters`` steps, so load changes hit both alike.
    samples = _timing.interleave({'dezero_kr': _block(dz_step, iters), 'numpy': _block(np_step, iters),
                                  'static': _block(st_step, iters),
                                  'products': _block(products_fn(x, np_params), iters)}, repeat)
    dz = statistics.median(samples['dezero_kr']) / iters
    fl = statistics.median(samples['numpy']) / iters
    ratios = [a / b for a, b in zip(samples['dezero_kr'], samples['numpy'])]
    st = statistics.median(samples['static']) / iters
    static_ratio = statistics.median(a / b for a, b in zip(samples['static'], samples['numpy']))
    products = statistics.median(a / b for a, b in zip(samples['products'], samples['numpy']))
    return dz, fl, statistics.median(ratios), st, static_ratio, products


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--activation', choices=('sigmoid', 'relu'), default='sigmoid')
    parser.add_argument('--iters', type=int, default=20, help='steps per timed sample')
    parser.add_argument('--repeat', type=int, default=15, help='timed samples of each')
    parser.add_argument('--processes', type=int, default=3,
                        help='rounds of one contender per fresh process (0: none)')
    parser.add_argument('--alone', choices=ALONE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.alone:  # a child of --processes: this contender only
        _timing.time_alone(args.alone, alone_step(args.alone, args.activation), args.iters, args.repeat)
        return 0
    dz, fl, ratio, st, static_ratio, products = run(args.activation, args.iters, args.repeat)
    print(f'MLP {IN}-{HIDDEN}-{OUT}, batch {BATCH}, float32, SGD, {args.activation}, '
          f'OMP/OPENBLAS/MKL threads = {os.environ["OPENBLAS_NUM_THREADS"]}')
    print(f'dezero_kr    {dz * 1e3:7.3f} ms/step (median of {args.repeat} x {args.iters} steps)')
    print(f'NumPy floor  {fl * 1e3:7.3f} ms/step')
    print(f'ratio        {ratio:7.3f}x (median of the paired ratios; {dz / fl:.3f}x of the medians)')
    print(f'static_graph {st * 1e3:7.3f} ms/step (weights equal to dezero_kr\'s bit for bit)')
    print(f'static / NumPy floor = {static_ratio:.3f}x (median of the paired ratios); '
          f'static / dezero_kr = {st / dz:.3f}x (of the medians)')
    print(f'the five BLAS products and the update alone = {products:.3f}x the floor (calls a '
          f'bit-for-bit replay makes too)')
    if args.processes:
        alone = _timing.one_per_process('mlp', ALONE, args.processes,
                                        ['--activation', args.activation, '--iters', str(args.iters),
                                         '--repeat', str(args.repeat)])
        _timing.print_alone(alone, 'dezero_kr')
    return 0


ALONE = ('dezero_kr', 'static_graph', 'numpy floor')


def alone_step(name, activation):
    """The step of one contender, built as ``run`` builds it."""
    import dezero_kr
    x, t = make_data()
    step, params = dezero_step_fn(x, t, activation)
    if name == 'static_graph':
        return dezero_kr.static_graph(step)
    if name == 'numpy floor':
        return numpy_step_fn(x, t, activation, params)[0]
    return step


if __name__ == '__main__':
    sys.exit(main())
