"""8x8 handwritten digits with a small CNN (합성곱 신경망으로 숫자 분류, 오프라인).

    python examples/digits_cnn.py                  # 30 epochs
    python examples/digits_cnn.py --plot plots     # + digits_cnn_curves.png, digits_cnn_filters.png
    python examples/digits_cnn.py --gpu            # on a CUDA GPU (CuPy; docs/gpu.md)
    python examples/digits_cnn.py --static         # the training step traced once and replayed

The same bundled ``Digits`` as ``digits_mlp.py``, read as images (N, 1, 8, 8)
(``Digits(flatten=False)``):

    conv 3x3, 16 channels, pad 1 -> ReLU -> max pool 2x2   (N, 16, 4, 4)
    conv 3x3, 32 channels, pad 1 -> ReLU -> max pool 2x2   (N, 32, 2, 2)
    flatten -> Linear 64 -> ReLU -> dropout 0.3 -> Linear 10

A convolution shares one small filter over every position, so the net has
about 14 thousand weights (the MLP of ``digits_mlp.py`` has 300 thousand).
Training reuses that example's random affine distortions and label smoothing
(``--plain`` turns them off).  Adam with a warm-up + cosine schedule.
"""
import math
import time

import numpy as np

import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import DataLoader, cuda
from dezero_kr.datasets import Digits
from dezero_kr.models import Model
from dezero_kr.optimizers import Adam, WarmupCosine
from dezero_kr.plot import plot_curves, plot_image_grid

import _util
from digits_mlp import random_affine, train


class DigitsCNN(Model):
    """x (N, 1, 8, 8) -> scores (N, 10)."""

    def __init__(self, dropout_ratio):
        super().__init__()
        self.conv1 = L.Conv2d(16, kernel_size=3, pad=1)
        self.conv2 = L.Conv2d(32, kernel_size=3, pad=1)
        self.fc1 = L.Linear(64)
        self.fc2 = L.Linear(10)
        self.dropout_ratio = dropout_ratio

    def forward(self, x):
        h = F.pooling(F.relu(self.conv1(x)), 2, 2)
        h = F.pooling(F.relu(self.conv2(h)), 2, 2)
        h = F.reshape(h, (h.shape[0], -1))
        h = F.dropout(F.relu(self.fc1(h)), self.dropout_ratio)
        return self.fc2(h)


def main(argv=None):
    p = _util.parser(__doc__, epochs=30)
    p.add_argument('--plain', action='store_true', help='no augmentation, label smoothing or dropout')
    p.add_argument('--gpu', action='store_true', help='train on a CUDA GPU with CuPy (docs/gpu.md)')
    p.add_argument('--static', action='store_true',
                   help='train with dezero_kr.static_graph (Define-and-Run; the same numbers)')
    args = p.parse_args(argv)
    start = time.perf_counter()

    augment, smoothing, ratio = (False, 0.0, 0.0) if args.plain else (True, 0.1, 0.3)
    np.random.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train_set, test_set = Digits(train=True, flatten=False), Digits(train=False, flatten=False)
    loader = DataLoader(train_set, batch_size=32, seed=args.seed)
    model = DigitsCNN(ratio)
    optimizer = Adam(alpha=0.003).setup(model)
    total_steps = args.epochs * loader.max_iter
    optimizer.add_hook(WarmupCosine(0.003, warmup_steps=math.ceil(0.2 * total_steps),
                                    total_steps=total_steps))
    print(f'Digits as images: train {train_set.data.shape}, test {test_set.data.shape}')

    def distort(x):  # the MLP's distortions work on flat (B, 64) images
        return random_affine(x.reshape(len(x), 64), rng).reshape(x.shape) if augment else x

    to_device = None
    if args.gpu:  # batches are distorted on the host, then copied over (one copy each)
        cuda.require_gpu('examples/digits_cnn.py --gpu')
        model.to_gpu()
        to_device = cuda.as_cupy
    history = train(args, model, optimizer, loader, test_set, distort, smoothing, log_every=5,
                    to_device=to_device)

    n_weights = sum(param.data.size for param in model.params())
    print(f'가중치 수 / number of weights: {n_weights}')
    _util.save_plot(args, plot_curves, 'digits_cnn_curves.png', history, title='digits CNN')
    _util.save_plot(args, plot_image_grid, 'digits_cnn_filters.png', model.conv1.W.data, ncols=8)
    _util.report('test_accuracy', history['test_acc'][-1], start)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
