"""Small CNN training step: dezero_kr against a hand-written im2col NumPy floor.

Model: conv 3x3, 3 -> 16 channels, pad 1 on a float32 batch (32, 3, 32, 32),
ReLU, 2x2 max pooling, linear 4096 -> 10, softmax cross entropy, backward and
a plain SGD update.  One BLAS thread.

The NumPy floor is the textbook im2col implementation of the same step
(``im2col`` by KH*KW slice copies into an (N*OH*OW, C*KH*KW) matrix, one
matmul, NHWC -> NCHW transpose, im2col + argmax max pooling, its gradient by
``col2im``), keeping ``col`` from the forward pass for the weight gradient and,
like dezero_kr (and PyTorch) with a data batch, never computing the gradient
of the input images.  Both start from the same weights and their weights are
compared after a few steps, so the floor is the same math.

PyTorch (``torch``) and DeZero (``DEZERO_PATH`` = a folder holding the
``dezero`` package) are timed too when importable; neither is required.

    python -m bench cnn [--iters 10] [--repeat 15]
"""
import bench._timing as timing  # noqa: I001  (first: one BLAS thread before NumPy loads)

import argparse
import importlib
import os
import statistics
import sys

import numpy as np

N, C, H, W, OC, K, CLASSES, LR = 32, 3, 32, 32, 16, 3, 10, 0.01
FEATURES = OC * (H // 2) * (W // 2)


def make_data(seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(N, C, H, W).astype(np.float32)
    t = rng.randint(0, CLASSES, size=N)
    return x, t


def initial_weights(seed=0):
    rng = np.random.RandomState(seed)
    f32 = np.float32
    return [(rng.randn(OC, C, K, K) * np.sqrt(1 / (C * K * K))).astype(f32),
            np.zeros(OC, f32),
            (rng.randn(FEATURES, CLASSES) * np.sqrt(1 / FEATURES)).astype(f32),
            np.zeros(CLASSES, f32)]


# =============================================================================
# dezero_kr
# =============================================================================
def _functions():
    """``dezero_kr.functions`` (F); the defining modules until the façade re-exports them."""
    import dezero_kr.functions as F
    if all(hasattr(F, name) for name in ('relu', 'softmax_cross_entropy', 'pooling')):
        return F
    import types

    from dezero_kr import core, functions_conv, functions_nn
    return types.SimpleNamespace(relu=functions_nn.relu, pooling=functions_conv.pooling,
                                 softmax_cross_entropy=functions_nn.softmax_cross_entropy,
                                 reshape=core.reshape)


def framework_step_fn(x, t, weights, F, L, Model, SGD):
    """The step on a DeZero-like library: its F (functions), L (layers), Model and SGD."""
    class SmallCNN(Model):
        def __init__(self):
            super().__init__()
            self.conv = L.Conv2d(OC, K, stride=1, pad=1, in_channels=C)
            self.fc = L.Linear(CLASSES, in_size=FEATURES)

        def forward(self, x):
            h = F.pooling(F.relu(self.conv(x)), 2, 2)
            return self.fc(F.reshape(h, (h.shape[0], -1)))

    model = SmallCNN()
    params = [model.conv.W, model.conv.b, model.fc.W, model.fc.b]
    for p, w in zip(params, weights):
        p.data = w.copy()
    optimizer = SGD(LR).setup(model)

    def step():
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()

    return step, [p.data for p in params]


def dezero_kr_step_fn(x, t, weights):
    import dezero_kr.layers as L
    from dezero_kr.models import Model
    from dezero_kr.optimizers import SGD
    return framework_step_fn(x, t, weights, _functions(), L, Model, SGD)


# =============================================================================
# The NumPy floor: textbook im2col / col2im
# =============================================================================
def im2col(img, kh, kw, stride, pad):
    """(N*OH*OW, C*KH*KW): rows (n, oh, ow), columns (c, i, j)."""
    n, c, h, w = img.shape
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    img = np.pad(img, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else img
    col = np.empty((n, c, kh, kw, oh, ow), dtype=img.dtype)
    for i in range(kh):
        for j in range(kw):
            col[:, :, i, j] = img[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
    return col.transpose(0, 4, 5, 1, 2, 3).reshape(n * oh * ow, -1)


def col2im(col, shape, kh, kw, stride, pad):
    """Adjoint of ``im2col``: add the patches back into an image of ``shape``."""
    n, c, h, w = shape
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    col = col.reshape(n, oh, ow, c, kh, kw).transpose(0, 3, 4, 5, 1, 2)
    img = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dtype=col.dtype)
    for i in range(kh):
        for j in range(kw):
            img[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride] += col[:, :, i, j]
    return img[:, :, pad:pad + h, pad:pad + w]


def numpy_step_fn(x, t, weights):
    W1, b1, W2, b2 = [w.copy() for w in weights]
    rows = np.arange(N)
    ph, pw = H // 2, W // 2
    windows = np.arange(N * OC * ph * pw)

    def step():
        nonlocal W1, b1, W2, b2  # updated in place (``-=`` on the same arrays)
        # conv: im2col, one matmul, back to NCHW
        col = im2col(x, K, K, 1, 1)                           # (N*H*W, C*K*K)
        z = col @ W1.reshape(OC, -1).T + b1                   # (N*H*W, OC)
        z = z.reshape(N, H, W, OC).transpose(0, 3, 1, 2)      # (N, OC, H, W)
        h = np.maximum(z, 0)
        # max pooling 2x2: im2col, argmax per window
        pcol = im2col(h, 2, 2, 2, 0).reshape(-1, 4)           # rows (n, oh, ow, c)
        arg = pcol.argmax(axis=1)
        p = pcol[windows, arg].reshape(N, ph, pw, OC).transpose(0, 3, 1, 2)
        f = p.reshape(N, -1)
        logits = f @ W2 + b2
        # softmax cross entropy and its gradient (p - onehot) / N
        m = logits.max(axis=1, keepdims=True)
        lse = np.log(np.exp(logits - m).sum(axis=1, keepdims=True)) + m
        loss = (lse[:, 0] - logits[rows, t]).mean()  # noqa: F841 (computed, as in the framework)
        g = np.exp(logits - lse)
        g[rows, t] -= 1
        g *= np.float32(1 / N)
        # backward
        gW2 = f.T @ g
        gb2 = g.sum(axis=0)
        gp = (g @ W2.T).reshape(N, OC, ph, pw).transpose(0, 2, 3, 1).ravel()
        gpcol = np.zeros((gp.size, 4), dtype=np.float32)
        gpcol[windows, arg] = gp
        gh = col2im(gpcol.reshape(N * ph * pw, -1), h.shape, 2, 2, 2, 0)
        gz = (gh * (z > 0)).transpose(0, 2, 3, 1).reshape(-1, OC)  # NHWC rows, like col
        gW1 = (col.T @ gz).T.reshape(W1.shape)
        gb1 = gz.sum(axis=0)
        # SGD
        W1 -= LR * gW1
        b1 -= LR * gb1
        W2 -= LR * gW2
        b2 -= LR * gb2

    return step, [W1, b1, W2, b2]


# =============================================================================
# Optional references
# =============================================================================
def torch_step_fn(x, t, weights):
    try:
        import torch
    except Exception:
        return None, None
    torch.set_num_threads(1)
    tf = torch.nn.functional
    params = [torch.tensor(w, requires_grad=True) for w in weights]
    W1, b1, W2, b2 = params
    xt, tt = torch.from_numpy(x), torch.from_numpy(t)

    def step():
        h = tf.max_pool2d(tf.relu(tf.conv2d(xt, W1, b1, padding=1)), 2)
        loss = tf.cross_entropy(h.reshape(N, -1) @ W2 + b2, tt)
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= LR * p.grad

    return step, [p.detach().numpy() for p in params]


def dezero_step_fn(x, t, weights):
    path = os.environ.get('DEZERO_PATH')
    if not path:
        return None, None
    sys.path.insert(0, path)
    try:
        dezero = importlib.import_module('dezero')
    except Exception:
        return None, None
    return framework_step_fn(x, t, weights, dezero.functions, dezero.layers, dezero.Model,
                             dezero.optimizers.SGD)


def static_step_fn(x, t, weights, keep_buffers=False):
    """dezero_kr's step as a ``static_graph``: traced on its first call, then replayed."""
    import dezero_kr
    step, params = dezero_kr_step_fn(x, t, weights)
    return dezero_kr.static_graph(step, keep_buffers=keep_buffers), params


def static_buffers_step_fn(x, t, weights):
    """The same with ``keep_buffers=True`` (arrays kept between calls, memory reused)."""
    return static_step_fn(x, t, weights, keep_buffers=True)


# =============================================================================
# Driver
# =============================================================================
CONTENDERS = {'dezero_kr': dezero_kr_step_fn, 'static_graph': static_step_fn,
              'static buffers': static_buffers_step_fn, 'numpy floor': numpy_step_fn,
              'pytorch': torch_step_fn, 'dezero 0.0.13': dezero_step_fn}


def run(iters=10, repeat=15):
    x, t = make_data()
    weights = initial_weights()
    steps, finals = {}, {}
    for name, make in CONTENDERS.items():
        step, params = make(x, t, weights)
        if step is not None:
            steps[name], finals[name] = step, params

    # Same math: after the same steps from the same weights, the weights agree.
    for _ in range(3):
        for step in steps.values():
            step()
    for name, params in finals.items():
        for a, b in zip(params, finals['numpy floor']):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=name)
    assert all(p.dtype == np.float32 for p in finals['dezero_kr'])
    for a, b, c in zip(finals['dezero_kr'], finals['static_graph'], finals['static buffers']):
        np.testing.assert_array_equal(a, b)  # eager's numbers bit for bit
        np.testing.assert_array_equal(a, c)

    def many(step):
        def run_iters():
            for _ in range(iters):
                step()
        return run_iters

    samples = timing.interleave({name: many(step) for name, step in steps.items()}, repeat)
    return {name: [s / iters for s in seconds] for name, seconds in samples.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench cnn', description=__doc__.splitlines()[0])
    parser.add_argument('--iters', type=int, default=10, help='steps per timed sample')
    parser.add_argument('--repeat', type=int, default=15, help='timed samples of each')
    parser.add_argument('--processes', type=int, default=3,
                        help='rounds of one contender per fresh process (0: none)')
    parser.add_argument('--alone', choices=list(CONTENDERS)[:4], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.alone:  # a child of --processes: this contender only
        x, t = make_data()
        timing.time_alone(args.alone, CONTENDERS[args.alone](x, t, initial_weights())[0],
                          args.iters, args.repeat)
        return 0
    samples = run(args.iters, args.repeat)
    print(f'CNN step: conv3x3 {C}->{OC} pad 1 on ({N}, {C}, {H}, {W}) float32, ReLU, max-pool 2, '
          f'linear {FEATURES}->{CLASSES}, softmax CE, backward, SGD; '
          f'BLAS threads = {os.environ["OPENBLAS_NUM_THREADS"]}')
    dz = samples['dezero_kr']
    for name, s in samples.items():
        line = f'{name:14s} {statistics.median(s) * 1e3:7.2f} ms/step (median of {args.repeat} x {args.iters})'
        if name != 'dezero_kr':
            ratio = statistics.median([b / a for a, b in zip(dz, s)])
            line += f'   {name} / dezero_kr = {ratio:.2f}x'
        print(line)
    if args.processes:
        alone = timing.one_per_process('cnn', list(CONTENDERS)[:4], args.processes,
                                       ['--iters', str(args.iters), '--repeat', str(args.repeat)])
        timing.print_alone(alone, 'dezero_kr')
    return 0


if __name__ == '__main__':
    sys.exit(main())
