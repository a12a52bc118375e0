"""8x8 handwritten digits with an MLP (8x8 손글씨 숫자 분류, 오프라인).

    python examples/digits_mlp.py                  # 60 epochs: >= 95% test accuracy
    python examples/digits_mlp.py --plain          # no augmentation/smoothing/noise: about 92%
    python examples/digits_mlp.py --plot plots     # + digits_mlp_curves.png, digits_mlp_errors.png
    python examples/digits_mlp.py --static         # the training step traced once and replayed

Data: ``dezero_kr.datasets.Digits`` (bundled, no network): the first 1,500
images train, the last 297 test.  The test images come partly from other
writers, so a plain MLP that fits the training set perfectly still stops near
92% (a 3 written with a pointed middle looks like an 8 to it).  Three cheap
regularisers close most of the gap:

* random affine distortions of each training batch (rotation up to 15
  degrees, scale and shear up to 10%, shift up to one pixel; bilinear);
* label smoothing 0.2: the target is 0.8 on the right class plus 0.02 on
  every class, so the net is not pushed to ever larger scores;
* Gaussian pixel noise (sigma 0.1) and dropout 0.3 after each hidden layer.

Model 64 -> 512 -> 512 -> 10 (ReLU), Adam with a warm-up + cosine schedule
(peak 0.002, ``optimizers.WarmupCosine``), batches of 64.
"""
import math
import time

import numpy as np

import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import DataLoader, cuda, no_grad, static_graph, test_mode
from dezero_kr.datasets import Digits
from dezero_kr.models import Model
from dezero_kr.optimizers import Adam, WarmupCosine
from dezero_kr.plot import plot_curves, plot_digits_grid

import _util


class DigitsMLP(Model):
    """x (N, 64) -> scores (N, 10): two hidden ReLU layers, each followed by dropout."""

    def __init__(self, hidden, dropout_ratio):
        super().__init__()
        self.l1 = L.Linear(hidden)
        self.l2 = L.Linear(hidden)
        self.l3 = L.Linear(10)
        self.dropout_ratio = dropout_ratio

    def forward(self, x):
        h = F.dropout(F.relu(self.l1(x)), self.dropout_ratio)
        h = F.dropout(F.relu(self.l2(h)), self.dropout_ratio)
        return self.l3(h)


def smoothed_targets(t, c, smoothing, dtype):
    """q = (1 - s) one_hot(t) + s / C, shape (N, C), built from the labels t (N,) where they are
    (NumPy, or CuPy with --gpu)."""
    n = len(t)
    xp = cuda.get_array_module(t)
    q = xp.full((n, c), smoothing / c, dtype=dtype)
    q[xp.arange(n), t] += 1 - smoothing
    return q


def smoothed_cross_entropy(y, t, smoothing):
    """Cross entropy against q = (1 - s) one_hot(t) + s / C:  -sum(q * log_softmax(y)) / N."""
    n, c = y.shape
    q = smoothed_targets(t, c, smoothing, y.dtype)
    return -F.sum(q * F.log_softmax(y)) / n


def static_train_step(model, optimizer):
    """The training step as ``dezero_kr.static_graph`` (``--static``): traced once, then replayed.

    The smoothed targets q come in as an argument: NumPy builds them from the
    labels, which an operation of the trace would keep as a constant.
    """
    @static_graph
    def step(x, q):
        loss = -F.sum(q * F.log_softmax(model(x))) / len(q)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        return loss
    return step


def random_affine(x, rng, rotate=15.0, scale=0.1, shear=0.1, shift=1.0, side=8):
    """Warp each image of x (N, side*side) by its own random affine map (bilinear, zeros outside)."""
    n = len(x)
    images = x.reshape(n, side, side)
    angle = np.deg2rad(rng.uniform(-rotate, rotate, n))
    s = 1 + rng.uniform(-scale, scale, n)
    sh = rng.uniform(-shear, shear, n)
    tx, ty = rng.uniform(-shift, shift, (2, n))
    # Output pixel (row i, column j) reads the source at A @ (j - c, i - c) + c + (tx, ty).
    cos, sin = np.cos(angle) / s, np.sin(angle) / s
    a, b, c_, d = cos, -sin + sh, sin, cos
    grid = np.arange(side) - (side - 1) / 2
    cols = grid[None, None, :]
    rows = grid[None, :, None]
    src_x = a[:, None, None] * cols + b[:, None, None] * rows + (side - 1) / 2 + tx[:, None, None]
    src_y = c_[:, None, None] * cols + d[:, None, None] * rows + (side - 1) / 2 + ty[:, None, None]
    x0, y0 = np.floor(src_x).astype(int), np.floor(src_y).astype(int)
    wx, wy = src_x - x0, src_y - y0
    out = np.zeros_like(images)
    batch = np.arange(n)[:, None, None]
    for dy, weight_y in ((0, 1 - wy), (1, wy)):
        for dx, weight_x in ((0, 1 - wx), (1, wx)):
            xi, yi = x0 + dx, y0 + dy
            inside = (xi >= 0) & (xi < side) & (yi >= 0) & (yi < side)
            pixel = images[batch, np.clip(yi, 0, side - 1), np.clip(xi, 0, side - 1)]
            out += (weight_y * weight_x * inside * pixel).astype(out.dtype)
    return out.reshape(n, side * side)


def train(args, model, optimizer, loader, test_set, distort, smoothing, log_every, to_device=None):
    """Train ``args.epochs`` epochs on ``distort(x)`` of each batch; returns the history.

    ``to_device``: moves a host array where the model is (``cuda.as_cupy`` for ``--gpu``)."""
    to_device = to_device or (lambda a: a)
    test_x, test_t = to_device(test_set.data), to_device(test_set.label)
    history = {'train_loss': [], 'test_acc': []}
    step = static_train_step(model, optimizer) if getattr(args, 'static', False) else None
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for x, t in _util.epoch_bar(args, loader, epoch):
            x, t = to_device(distort(x)), to_device(t)
            if step is not None:  # --static: the same numbers, replayed (docs/static_graph.md)
                loss = step(x, smoothed_targets(t, 10, smoothing, x.dtype))
            else:
                loss = smoothed_cross_entropy(model(x), t, smoothing)
                model.cleargrads()
                loss.backward()
                optimizer.update()
            total += float(loss.data) * len(t)
        with test_mode(), no_grad():  # dropout off
            acc = float(F.accuracy(model(test_x), test_t).data)
        history['train_loss'].append(total / loader.data_size)
        history['test_acc'].append(acc)
        if epoch % log_every == 0 or epoch == args.epochs:
            print(f'epoch {epoch:3d}  train loss {history["train_loss"][-1]:.4f}  test acc {acc:.4f}')
    return history


def main(argv=None):
    p = _util.parser(__doc__, epochs=60)
    p.add_argument('--hidden', type=int, default=512, help='units per hidden layer (default 512)')
    p.add_argument('--plain', action='store_true',
                   help='no augmentation, label smoothing, noise or dropout (the 92%% baseline)')
    p.add_argument('--static', action='store_true',
                   help='train with dezero_kr.static_graph (Define-and-Run; the same numbers)')
    args = p.parse_args(argv)
    start = time.perf_counter()

    augment, smoothing, noise, ratio = (False, 0.0, 0.0, 0.0) if args.plain else (True, 0.2, 0.1, 0.3)
    np.random.seed(args.seed)  # initial weights and dropout masks
    rng = np.random.default_rng(args.seed)  # distortions and noise
    train_set, test_set = Digits(train=True), Digits(train=False)
    loader = DataLoader(train_set, batch_size=64, seed=args.seed)
    model = DigitsMLP(args.hidden, ratio)
    optimizer = Adam(alpha=0.002).setup(model)
    total_steps = args.epochs * loader.max_iter
    optimizer.add_hook(WarmupCosine(0.002, warmup_steps=math.ceil(0.3 * total_steps),
                                    total_steps=total_steps))
    print(f'Digits: {len(train_set)} train / {len(test_set)} test images, MLP 64-{args.hidden}-'
          f'{args.hidden}-10, {"plain" if args.plain else "augment + smoothing + noise + dropout"}')

    def distort(x):
        if augment:
            x = random_affine(x, rng)
        if noise:
            x = x + rng.normal(0, noise, x.shape).astype(x.dtype)
        return x

    history = train(args, model, optimizer, loader, test_set, distort, smoothing, log_every=10)

    with test_mode(), no_grad():
        predicted = model(test_set.data).data.argmax(axis=1)
    wrong = np.flatnonzero(predicted != test_set.label)
    print(f'틀린 테스트 이미지 / wrong test images: {len(wrong)} of {len(test_set)}')
    _util.save_plot(args, plot_curves, 'digits_mlp_curves.png', history, title='digits MLP')
    if len(wrong):
        _util.save_plot(args, plot_digits_grid, 'digits_mlp_errors.png', test_set.data[wrong],
                        labels=[f'{test_set.label[i]}>{predicted[i]}' for i in wrong])
    _util.report('test_accuracy', history['test_acc'][-1], start)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
