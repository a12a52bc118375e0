"""Sine-wave prediction with an RNN or LSTM (사인파 다음 값 예측; 절단된 BPTT, 기울기 클리핑).

    python examples/sine_rnn.py                      # Elman RNN, 100 epochs
    python examples/sine_rnn.py --cell lstm          # LSTM instead
    python examples/sine_rnn.py --plot plots         # + plots/sine_rnn.png (prediction, loss, norm)

Data: ``dezero_kr.datasets.SinCurve``: 999 (x_t, x_{t+1}) pairs of a noisy sine
(train) and of a clean cosine (test).  ``SeqDataLoader`` reads the training
sequence as 30 parallel streams, so one batch is the next step of each stream.

Training loop (the parts a recurrent model needs):

* the model keeps its hidden state between calls; ``reset_state()`` at the
  start of each epoch;
* truncated back-propagation through time: the losses of ``--bptt`` steps are
  summed, back-propagated, and then ``loss.unchain_backward()`` cuts the graph
  behind them, so the next backward stops there (the state itself carries on);
* global-norm gradient clipping just before each update:
  ``norm = clip_grad_norm(model.params(), max_norm)`` returns the norm *before*
  clipping, which is logged per epoch (mean and max, and how many updates were
  clipped): a spike in it is the first sign of exploding gradients.

The test loss is the mean squared error of one-step-ahead predictions on the
cosine, feeding the true values in (teacher forcing).  For scale the script
also prints the error of simply repeating the last value, which is smaller:
the curve moves very little per step, and this example is about the training
loop, not about beating that baseline.
"""
import os
import time

import numpy as np

import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import SeqDataLoader, no_grad
from dezero_kr.datasets import SinCurve
from dezero_kr.fileio import atomic_write
from dezero_kr.grad_clip import clip_grad_norm
from dezero_kr.models import Model
from dezero_kr.optimizers import Adam

import _util


class SequenceRegressor(Model):
    """x_t (B, 1) -> prediction of x_{t+1} (B, 1) through a recurrent cell with state."""

    def __init__(self, cell, hidden):
        super().__init__()
        self.rnn = L.LSTM(hidden) if cell == 'lstm' else L.RNN(hidden)
        self.fc = L.Linear(1)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


def predict(model, dataset):
    """One-step-ahead predictions over the whole sequence (teacher forcing): array (N,)."""
    model.reset_state()
    with no_grad():
        return np.array([model(x.reshape(1, 1)).data.item() for x in dataset.data])


def plot_results(truth, prediction, history, max_norm, to_file):
    """Three panels: test truth vs prediction, training loss, pre-clip gradient norm (matplotlib)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError('plotting needs matplotlib: pip install matplotlib') from e
    figure = Figure(figsize=(12, 3.5))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot(1, 3, 1)
    ax.plot(truth, label='truth (cos)')
    ax.plot(prediction, label='prediction', linestyle='--')
    ax.set_xlabel('t')
    ax.set_title('test: one step ahead')
    ax.legend()
    epochs = np.arange(1, len(history['train_loss']) + 1)
    ax = figure.add_subplot(1, 3, 2)
    ax.semilogy(epochs, history['train_loss'])
    ax.set_xlabel('epoch')
    ax.set_title('train loss (MSE)')
    ax = figure.add_subplot(1, 3, 3)
    ax.semilogy(epochs, history['grad_norm'], label='mean pre-clip norm')
    ax.axhline(max_norm, color='gray', linestyle=':', label=f'max_norm {max_norm:g}')
    ax.set_xlabel('epoch')
    ax.set_title('global gradient norm')
    ax.legend()
    figure.tight_layout()
    with atomic_write(to_file) as f:
        figure.savefig(f, format='png')
    return os.path.abspath(to_file)


def main(argv=None):
    p = _util.parser(__doc__, epochs=100)
    p.add_argument('--cell', choices=('rnn', 'lstm'), default='rnn', help='recurrent layer (default rnn)')
    p.add_argument('--hidden', type=int, default=100, help='hidden units (default 100)')
    p.add_argument('--bptt', type=int, default=30, help='steps per truncated BPTT window (default 30)')
    p.add_argument('--max-norm', type=float, default=1.0,
                   help='clip the global gradient norm to this (default 1.0)')
    args = p.parse_args(argv)
    start = time.perf_counter()

    np.random.seed(args.seed)
    train_set, test_set = SinCurve(train=True), SinCurve(train=False)
    loader = SeqDataLoader(train_set, batch_size=30)
    model = SequenceRegressor(args.cell, args.hidden)
    optimizer = Adam(alpha=0.001).setup(model)
    print(f'SinCurve: {len(train_set)} steps, {loader.batch_size} streams; {args.cell.upper()} '
          f'{args.hidden} units, BPTT {args.bptt}, clip global norm at {args.max_norm}')

    history = {'train_loss': [], 'grad_norm': []}
    for epoch in range(1, args.epochs + 1):
        model.reset_state()
        loss, count, total = 0, 0, 0.0
        norms = []
        for x, t in _util.epoch_bar(args, loader, epoch):
            loss += F.mean_squared_error(model(x), t)
            count += 1
            if count % args.bptt == 0 or count == loader.max_iter:
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()  # the next window's backward stops here
                norms.append(clip_grad_norm(model.params(), args.max_norm))
                optimizer.update()
                total += float(loss.data)
                loss = 0
        history['train_loss'].append(total / count)
        history['grad_norm'].append(float(np.mean(norms)))
        if epoch % 10 == 0 or epoch == args.epochs:
            clipped = sum(n > args.max_norm for n in norms)
            print(f'epoch {epoch:4d}  train loss {total / count:.5f}  pre-clip grad norm '
                  f'mean {np.mean(norms):.3f} max {np.max(norms):.3f}  clipped {clipped}/{len(norms)}')

    prediction = predict(model, test_set)
    test_mse = float(np.mean((prediction - test_set.label[:, 0]) ** 2))
    repeat_mse = float(np.mean((test_set.data[:, 0] - test_set.label[:, 0]) ** 2))
    print(f'비교 / baseline: "x_(t+1) = x_t" MSE {repeat_mse:.6f} (the step is tiny, so copying wins)')
    _util.save_plot(args, plot_results, f'sine_{args.cell}.png', test_set.label[:, 0], prediction,
                    history, args.max_norm)
    _util.report('test_mse', test_mse, start, digits=6)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
