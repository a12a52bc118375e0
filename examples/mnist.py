"""MNIST with an MLP (MNIST 손글씨 숫자 분류; 데이터를 한 번 내려받는다).

    python examples/mnist.py                  # 5 epochs (about 6 s each on 2 cores)
    python examples/mnist.py --limit 10000    # train on the first 10,000 images only (quicker)
    python examples/mnist.py --plot plots     # + mnist_curves.png, mnist_samples.png

Data: ``dezero_kr.datasets.MNIST`` (60,000 train / 10,000 test images of 28x28
pixels).  The four files (about 11 MB) are downloaded once into the cache folder
(``~/.dezero_kr``, or ``$DEZERO_KR_CACHE``) and checked against their SHA-256.
Without a network, place them there by hand (see docs/data.md); if they are
missing and cannot be downloaded, this script prints where to put them and
exits with status 2.

The dataset is loaded without its per-sample transform: each batch is turned
into float32 (B, 784) in [0, 1] in one NumPy operation, which is much faster
than transforming 60,000 samples one by one.  Model 784 -> 1000 -> 10 (ReLU),
Adam, batches of 100.
"""
import sys
import time

import numpy as np

import dezero_kr.functions as F
from dezero_kr import DataLoader, no_grad
from dezero_kr.datasets import MNIST
from dezero_kr.download import DownloadError, cache_dir
from dezero_kr.models import MLP
from dezero_kr.optimizers import Adam
from dezero_kr.plot import plot_curves, plot_digits_grid

import _util

EXIT_NO_DATA = 2


def load(skip_checksum):
    """(train, test) MNIST datasets of raw uint8 images, or None when the files are unavailable."""
    if skip_checksum:
        MNIST.sha256 = {}  # documented switch for mirrors whose files differ from the pinned digests
    try:
        return MNIST(train=True, transform=None), MNIST(train=False, transform=None)
    except DownloadError as e:
        print(e, file=sys.stderr)
        names = [name for pair in MNIST.files.values() for name in pair]
        print(f'\nMNIST needs these {len(names)} files in {cache_dir()}:\n  ' + '\n  '.join(names),
              file=sys.stderr)
        return None


def as_input(images):
    """uint8 (B, 1, 28, 28) -> float32 (B, 784) in [0, 1]."""
    return images.reshape(len(images), -1).astype(np.float32) / np.float32(255)


def evaluate(model, dataset, batch_size=1000):
    correct = 0.0
    with no_grad():
        for i in range(0, len(dataset), batch_size):
            x, t = dataset[i:i + batch_size]
            correct += float(F.accuracy(model(as_input(x)), t).data) * len(t)
    return correct / len(dataset)


def main(argv=None):
    p = _util.parser(__doc__, epochs=5)
    p.add_argument('--batch-size', type=int, default=100, help='mini-batch size (default 100)')
    p.add_argument('--hidden', type=int, default=1000, help='hidden units (default 1000)')
    p.add_argument('--limit', type=int, default=None, metavar='N',
                   help='train on the first N training images only')
    p.add_argument('--skip-checksum', action='store_true',
                   help='accept MNIST files whose SHA-256 differs from the pinned one')
    args = p.parse_args(argv)
    start = time.perf_counter()

    data = load(args.skip_checksum)
    if data is None:
        return EXIT_NO_DATA
    train_set, test_set = data
    if args.limit is not None:
        train_set.data, train_set.label = train_set.data[:args.limit], train_set.label[:args.limit]
    print(f'MNIST: {len(train_set)} train / {len(test_set)} test images of {train_set.data.shape[1:]}')

    np.random.seed(args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, seed=args.seed)
    model = MLP((args.hidden, 10), activation=F.relu)
    optimizer = Adam(alpha=0.001).setup(model)
    history = {'train_loss': [], 'test_acc': []}
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for x, t in _util.epoch_bar(args, loader, epoch):
            loss = F.softmax_cross_entropy(model(as_input(x)), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            total += float(loss.data) * len(t)
        history['train_loss'].append(total / len(train_set))
        history['test_acc'].append(evaluate(model, test_set))
        print(f'epoch {epoch:3d}  train loss {history["train_loss"][-1]:.4f}  '
              f'test acc {history["test_acc"][-1]:.4f}')

    _util.save_plot(args, plot_curves, 'mnist_curves.png', history, title='MNIST MLP')
    with no_grad():
        first = test_set.data[:40]
        predicted = model(as_input(first)).data.argmax(axis=1)
    _util.save_plot(args, plot_digits_grid, 'mnist_samples.png', first,
                    labels=[f'{p}' for p in predicted])
    _util.report('test_accuracy', history['test_acc'][-1], start)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
