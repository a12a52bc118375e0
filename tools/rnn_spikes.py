"""Why step 59's loss jumps, and what calms it: the same training with clipping or a smaller step.

    python tools/rnn_spikes.py               # 3 epochs (the tests' setting of step 59)
    python tools/rnn_spikes.py --epochs 100  # the book's setting (minutes)

The training is step 59's, written with the package: ``SinCurve(train=True)``,
``np.random.seed(0)``, an RNN of 100 hidden units and a Linear output, one
value at a time, truncated BPTT over 30 steps, Adam.  Three variants differ
only in the update:

* ``plain``: ``Adam()`` (alpha 0.001), as step 59;
* ``clip``: the same, with the global gradient norm clipped to 1 before each
  update (step 61's ``clip_grad_norm``);
* ``small_lr``: ``Adam(alpha=0.0003)``, no clipping.

Per epoch it prints the mean loss and the largest pre-clip gradient norm of the
epoch's updates; at the end the mean squared error of the next-value prediction
on the cosine curve (as step 59 computes it).  Lines ``RESULT variant epoch N
loss L max_norm G`` and ``RESULT variant mse M`` are for tests/test_doc_numbers.py.
"""
import argparse

import numpy as np

import dezero_kr
import dezero_kr.functions as F
import dezero_kr.layers as L
from dezero_kr import optimizers
from dezero_kr.blas import small_model_policy
from dezero_kr.datasets import SinCurve
from dezero_kr.grad_clip import clip_grad_norm
from dezero_kr.models import Model

BPTT = 30
HIDDEN = 100
VARIANTS = {'plain': (0.001, None), 'clip': (0.001, 1.0), 'small_lr': (0.0003, None)}


class SimpleRNN(Model):
    """x (1, 1) -> RNN(100) -> Linear(1), the model of step 59."""

    def __init__(self):
        super().__init__()
        self.rnn = L.RNN(HIDDEN)
        self.fc = L.Linear(1)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


def train(alpha, max_norm, epochs):
    """Yield (epoch, mean loss, largest pre-clip gradient norm); return the trained model."""
    train_set = SinCurve(train=True)
    np.random.seed(0)
    model = SimpleRNN()
    optimizer = optimizers.Adam(alpha=alpha).setup(model)
    for epoch in range(1, epochs + 1):
        model.reset_state()
        loss, count, total, largest = 0, 0, 0.0, 0.0
        for x, t in train_set:
            loss += F.mean_squared_error(model(x.reshape(1, 1)), t.reshape(1, 1))
            count += 1
            if count % BPTT == 0 or count == len(train_set):
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()
                norm = clip_grad_norm(model.params(), max_norm if max_norm else float('inf'))
                largest = max(largest, float(norm))
                optimizer.update()
                total += loss.data.item()
                loss = 0
        yield epoch, total / count, largest
    return model


def cosine_mse(model):
    """Mean squared error of the next-value prediction on cos over [0, 4 pi] (step 59's check)."""
    xs = np.linspace(0, 4 * np.pi, 1000)
    ys = np.cos(xs)
    model.reset_state()
    with dezero_kr.no_grad():
        preds = np.array([model(np.array(y).reshape(1, 1)).data.item() for y in ys])
    return float(np.mean((preds[:-1] - ys[1:]) ** 2))


def run(name, epochs):
    alpha, max_norm = VARIANTS[name]
    steps = train(alpha, max_norm, epochs)
    while True:
        try:
            epoch, loss, largest = next(steps)
        except StopIteration as done:
            model = done.value
            break
        print(f'RESULT {name} epoch {epoch} loss {loss:.6f} max_norm {largest:.2f}')
    print(f'RESULT {name} mse {cosine_mse(model):.6f}')


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--epochs', type=int, default=3)
    p.add_argument('--variants', nargs='+', choices=list(VARIANTS), default=list(VARIANTS))
    args = p.parse_args(argv)
    small_model_policy()
    for name in args.variants:
        run(name, args.epochs)


if __name__ == '__main__':
    main()
