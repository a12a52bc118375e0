"""Spiral classification with an MLP (나선형 데이터 분류).

    python examples/spiral_mlp.py                     # 100 epochs, about 1 s
    python examples/spiral_mlp.py --plot plots        # + plots/spiral_boundary.png, spiral_curves.png

Three interleaved spirals of 100 points each (``dezero_kr.datasets.Spiral``)
cannot be separated by straight lines; one hidden layer of 30 ReLU units can.
Model 2 -> 30 -> 3, softmax cross entropy, Adam (alpha 0.01), mini-batches of
30 from ``DataLoader``.  The test split is another draw of the same spirals.
Prints the loss per epoch (every tenth), then the test accuracy.
"""
import time

import numpy as np

import dezero_kr.functions as F
from dezero_kr import DataLoader, no_grad
from dezero_kr.datasets import Spiral
from dezero_kr.models import MLP
from dezero_kr.optimizers import Adam
from dezero_kr.plot import plot_curves, plot_decision_boundary

import _util


def evaluate(model, dataset):
    with no_grad():
        y = model(dataset.data)
        return (float(F.softmax_cross_entropy(y, dataset.label).data),
                float(F.accuracy(y, dataset.label).data))


def main(argv=None):
    p = _util.parser(__doc__, epochs=100)
    p.add_argument('--hidden', type=int, default=30, help='hidden units (default 30)')
    p.add_argument('--lr', type=float, default=0.01, help='Adam step size (default 0.01)')
    args = p.parse_args(argv)
    start = time.perf_counter()

    np.random.seed(args.seed)  # initial weights
    train_set, test_set = Spiral(train=True), Spiral(train=False)
    loader = DataLoader(train_set, batch_size=30, seed=args.seed)
    model = MLP((args.hidden, 3), activation=F.relu)
    optimizer = Adam(alpha=args.lr).setup(model)

    history = {'train_loss': [], 'test_loss': [], 'train_acc': [], 'test_acc': []}
    for epoch in range(1, args.epochs + 1):
        for x, t in _util.epoch_bar(args, loader, epoch):
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
        for split, dataset in (('train', train_set), ('test', test_set)):
            split_loss, split_acc = evaluate(model, dataset)
            history[f'{split}_loss'].append(split_loss)
            history[f'{split}_acc'].append(split_acc)
        if epoch % 10 == 0 or epoch == args.epochs:
            print(f'epoch {epoch:4d}  train loss {history["train_loss"][-1]:.4f}  '
                  f'test acc {history["test_acc"][-1]:.4f}')

    _util.save_plot(args, plot_decision_boundary, 'spiral_boundary.png',
                    lambda points: model(points), test_set.data, test_set.label,
                    title='spiral: decision boundary (test points)')
    _util.save_plot(args, plot_curves, 'spiral_curves.png', history, title='spiral MLP')
    _util.report('test_accuracy', history['test_acc'][-1], start)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
