"""Plot helpers that write image files: training curves, decision boundaries, image grids.

Needs matplotlib, the optional ``plot`` extra (``pip install matplotlib``).
It is imported inside the functions, so ``import dezero_kr.plot`` works
without it and a missing matplotlib only fails when a plot is made, with an
error that says what to install.

With ``to_file`` a figure is drawn on matplotlib's Agg canvas directly (no
``pyplot``, no window, the global backend is left alone) and written
atomically: to a temporary file next to ``to_file``, then renamed over it,
so a failed plot never leaves a broken image.  The format follows the file
extension (``.png``, ``.pdf``, ``.svg``, ...).  With ``to_file=None`` the
figure is shown through ``matplotlib.pyplot`` instead.

Each function returns the absolute path written (or the figure when shown).
"""
import math
import os

import numpy as np

from dezero_kr import cuda
from dezero_kr.fileio import atomic_write

__all__ = ['plot_curves', 'plot_decision_boundary', 'plot_digits_grid', 'plot_image_grid']

_MARKERS = ('o', 'x', '^', 's', 'v', 'D', '*', '+', 'P', 'h')


def _new_figure(figsize, dpi, show):
    """A matplotlib Figure (pyplot's when ``show``, else a bare Agg one); ``ImportError`` without matplotlib."""
    # matplotlib is an optional extra [plot], imported here only: `import dezero_kr` stays light.
    try:
        import matplotlib  # noqa: F401  (checks the install first)
    except ImportError as e:
        raise ImportError('dezero_kr.plot needs matplotlib: pip install matplotlib '
                          '(or pip install "dezero_kr[plot]")') from e
    if show:
        import matplotlib.pyplot as plt
        return plt.figure(figsize=figsize, dpi=dpi)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    figure = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(figure)
    return figure


def _finish(figure, to_file, dpi):
    """Show ``figure`` (``to_file`` None) or save it atomically; returns the figure or the file's path."""
    if to_file is None:
        import matplotlib.pyplot as plt  # optional extra [plot], as in _new_figure
        plt.show()
        return figure
    to_file = os.fspath(to_file)
    fmt = os.path.splitext(to_file)[1][1:].lower() or 'png'
    with atomic_write(to_file) as f:
        figure.savefig(f, format=fmt, dpi=dpi)
    return os.path.abspath(to_file)


def plot_curves(history, to_file=None, xlabel='epoch', title=None, figsize=None, dpi=100):
    """Draw training curves, e.g. ``{'loss': [...], 'test_loss': [...], 'acc': [...]}``.

    Args:
        history: name -> list of numbers (one per epoch or iteration).  Names
            containing ``'acc'`` go to an "accuracy" panel, the others to a
            "loss" panel; a single panel is drawn when only one kind is given.
        to_file: image path (``.png`` ...); None shows a window.
        xlabel, title: axis label and figure title.
        figsize, dpi: size in inches (default 5 x 4 per panel) and dots per inch.
    """
    if not history:
        raise ValueError('history is empty: pass e.g. {"loss": [0.9, 0.5, 0.3]}')
    series = {name: np.asarray([float(v) for v in values], dtype=float)
              for name, values in history.items()}
    groups = {'loss': [], 'accuracy': []}
    for name in series:
        groups['accuracy' if 'acc' in name.lower() else 'loss'].append(name)
    panels = [(kind, names) for kind, names in groups.items() if names]
    if figsize is None:
        figsize = (5.0 * len(panels), 4.0)
    figure = _new_figure(figsize, dpi, show=to_file is None)
    for k, (kind, names) in enumerate(panels):
        ax = figure.add_subplot(1, len(panels), k + 1)
        for name in names:
            values = series[name]
            ax.plot(np.arange(1, len(values) + 1), values, marker='.' if len(values) <= 50 else None,
                    label=name)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(kind)
        ax.grid(True, alpha=0.3)
        ax.legend()
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return _finish(figure, to_file, dpi)


def plot_decision_boundary(predict_fn, x, t, to_file=None, resolution=200, title=None,
                           figsize=(5.0, 5.0), dpi=100):
    """Color the plane by predicted class and draw the 2-D points ``x`` on top.

    Args:
        predict_fn: maps a float32 array ``(M, 2)`` of points to class scores
            ``(M, C)`` (the class is the argmax) or to class ids ``(M,)``.  It
            may return a Variable; its data is used.
        x: points ``(N, 2)``; t: their class ids ``(N,)``.
        to_file: image path; None shows a window.
        resolution: grid points per axis (the model is evaluated on
            ``resolution ** 2`` points, in one call).
    """
    x = np.asarray(cuda.as_numpy(x), dtype=float)
    t = np.asarray(cuda.as_numpy(t)).astype(int).ravel()
    if x.ndim != 2 or x.shape[1] != 2 or len(t) != len(x):
        raise ValueError(f'x must be (N, 2) and t (N,); got {x.shape} and {t.shape}')
    low, high = x.min(axis=0), x.max(axis=0)
    pad = 0.1 * np.maximum(high - low, 1e-3)
    xs = np.linspace(low[0] - pad[0], high[0] + pad[0], resolution)
    ys = np.linspace(low[1] - pad[1], high[1] + pad[1], resolution)
    xx, yy = np.meshgrid(xs, ys)
    grid = np.stack([xx.ravel(), yy.ravel()], axis=1).astype(np.float32)
    scores = np.asarray(cuda.as_numpy(predict_fn(grid)))
    predicted = scores.argmax(axis=1) if scores.ndim == 2 else scores.ravel().astype(int)
    if predicted.shape != (len(grid),):
        raise ValueError(f'predict_fn returned shape {scores.shape} for {len(grid)} points')
    num_class = int(max(predicted.max(), t.max())) + 1

    figure = _new_figure(figsize, dpi, show=to_file is None)
    ax = figure.add_subplot(1, 1, 1)
    ax.contourf(xx, yy, predicted.reshape(xx.shape), levels=np.arange(num_class + 1) - 0.5,
                cmap='tab10', vmin=0, vmax=9, alpha=0.3)
    for c in range(num_class):
        chosen = t == c
        if chosen.any():
            ax.scatter(x[chosen, 0], x[chosen, 1], s=20, marker=_MARKERS[c % len(_MARKERS)],
                       color=f'C{c % 10}', label=str(c))
    ax.set_xlim(xs[0], xs[-1])
    ax.set_ylim(ys[0], ys[-1])
    ax.legend(loc='upper right', fontsize='small')
    if title:
        ax.set_title(title)
    figure.tight_layout()
    return _finish(figure, to_file, dpi)


def _as_image_stack(images):
    """Return ``(N, H, W)`` (gray) or ``(N, H, W, 3)`` (color) from common layouts.

    Accepted: ``(N, D)`` with ``D`` a square (gray, e.g. 64 or 784) or three
    times a square (CHW color, e.g. 3072); ``(N, H, W)``; ``(N, C, H, W)`` with
    C = 1 or 3; ``(N, H, W, 3)``.
    """
    images = np.asarray(cuda.as_numpy(images))
    if images.ndim == 2:
        size = images.shape[1]
        side = math.isqrt(size)
        if side * side == size:
            return images.reshape(-1, side, side)
        side = math.isqrt(size // 3)
        if size % 3 == 0 and 3 * side * side == size:
            return images.reshape(-1, 3, side, side).transpose(0, 2, 3, 1)
    elif images.ndim == 3:
        return images
    elif images.ndim == 4:
        if images.shape[1] == 1:
            return images[:, 0]
        if images.shape[1] == 3:
            return images.transpose(0, 2, 3, 1)
        if images.shape[3] == 3:
            return images
    raise ValueError(f'cannot read images of shape {images.shape} as an image stack')


def plot_digits_grid(images, labels=None, to_file=None, ncols=10, figsize=None, dpi=100,
                     cmap='gray'):
    """Draw images in a grid, optionally with a label in each cell's corner.

    Args:
        images: ``(N, 64)`` digits, ``(N, 784)`` or ``(N, 1, 28, 28)`` MNIST,
            ``(N, 3, 32, 32)`` CIFAR, ... (see ``_as_image_stack``).
        labels: N labels (ints or str) or None.
        to_file: image path; None shows a window.
        ncols: images per row.
        figsize: inches; default 1 inch per image.
    """
    stack = _as_image_stack(images)
    n = len(stack)
    if n == 0:
        raise ValueError('no images to draw')
    if labels is not None and len(labels) != n:
        raise ValueError(f'{len(labels)} labels for {n} images')
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    height, width = stack.shape[1:3]
    pad = 1

    # One mosaic and a single imshow: much faster than one axes per image.
    color = stack.ndim == 4
    values = stack.astype(float)
    low, high = float(values.min()), float(values.max())
    values = (values - low) / (high - low) if high > low else np.zeros_like(values)
    shape = (nrows * (height + pad) - pad, ncols * (width + pad) - pad) + ((3,) if color else ())
    mosaic = np.ones(shape)  # white separators
    for k in range(n):
        r, c = divmod(k, ncols)
        top, left = r * (height + pad), c * (width + pad)
        mosaic[top:top + height, left:left + width] = values[k]

    if figsize is None:
        figsize = (max(1.0 * ncols, 2.0), max(1.0 * nrows, 1.0))
    figure = _new_figure(figsize, dpi, show=to_file is None)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.imshow(mosaic, cmap=None if color else cmap, vmin=0.0, vmax=1.0, interpolation='nearest')
    ax.set_axis_off()
    if labels is not None:
        for k, label in enumerate(labels):
            r, c = divmod(k, ncols)
            ax.text(c * (width + pad) + 0.5, r * (height + pad) + 0.5, str(label), color='red',
                    fontsize=8, ha='left', va='top')
    return _finish(figure, to_file, dpi)


plot_image_grid = plot_digits_grid  # the same helper, for non-digit images
