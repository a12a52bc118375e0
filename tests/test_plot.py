"""dezero_kr.plot: real PNG files with the requested pixel size, atomic writes, missing matplotlib."""
import os
import sys

import numpy as np
import pytest

from _checks import png_size

from dezero_kr import plot
from dezero_kr.datasets import Digits, get_spiral


@pytest.fixture
def mpl():
    return pytest.importorskip('matplotlib', reason='matplotlib is not installed (plot extra)')


def test_plot_curves(mpl, tmp_path):
    history = {'loss': [1.2, 0.8, 0.5, 0.4], 'test_loss': [1.3, 0.9, 0.7, 0.6],
               'accuracy': [0.3, 0.6, 0.8, 0.85]}
    path = plot.plot_curves(history, tmp_path / 'curves.png', dpi=50)
    assert path == str(tmp_path / 'curves.png')
    assert png_size(path) == (500, 200)  # two panels of 5 x 4 inches at 50 dpi
    assert os.path.getsize(path) > 1000
    only_loss = plot.plot_curves({'loss': [1, 0.5]}, tmp_path / 'loss.png', figsize=(4, 3), dpi=40)
    assert png_size(only_loss) == (160, 120)
    with pytest.raises(ValueError):
        plot.plot_curves({}, tmp_path / 'empty.png')


def test_plot_decision_boundary(mpl, tmp_path):
    x, t = get_spiral()
    calls = []

    def predict(points):
        calls.append(points.shape)
        assert points.dtype == np.float32
        return np.stack([points[:, 0], points[:, 1], -points[:, 0]], axis=1)  # scores (M, 3)

    path = plot.plot_decision_boundary(predict, x, t, tmp_path / 'boundary.png', resolution=50,
                                       figsize=(4, 4), dpi=50)
    assert calls == [(2500, 2)]  # one call on the whole grid
    assert png_size(path) == (200, 200) and os.path.getsize(path) > 1000
    labels_path = plot.plot_decision_boundary(lambda p: (p[:, 0] > 0).astype(int), x, t,
                                              tmp_path / 'ids.png', resolution=20, dpi=30)
    assert png_size(labels_path) == (150, 150)
    with pytest.raises(ValueError):
        plot.plot_decision_boundary(predict, x[:, :1], t, tmp_path / 'bad.png')


def test_plot_digits_grid(mpl, tmp_path):
    digits = Digits(train=False)
    path = plot.plot_digits_grid(digits.data[:20], digits.label[:20], to_file=tmp_path / 'g.png',
                                 ncols=10, dpi=40)
    assert png_size(path) == (400, 80)  # 10 x 2 cells of one inch
    color = np.random.default_rng(0).integers(0, 256, (3, 3, 32, 32)).astype(np.uint8)
    assert png_size(plot.plot_digits_grid(color, to_file=tmp_path / 'c.png', dpi=30)) == (90, 30)
    assert plot.plot_image_grid is plot.plot_digits_grid
    with pytest.raises(ValueError):
        plot.plot_digits_grid(np.zeros((2, 5)), to_file=tmp_path / 'odd.png')
    with pytest.raises(ValueError):
        plot.plot_digits_grid(digits.data[:3], labels=[1], to_file=tmp_path / 'n.png')


def test_dataset_show_writes_a_grid(mpl, tmp_path):
    path = Digits().show(row=2, col=3, to_file=tmp_path / 'show.png')
    assert png_size(path)[0] == 300


def test_failed_save_keeps_the_old_file_and_leaves_no_temp(mpl, tmp_path):
    target = tmp_path / 'plot.xyz'  # matplotlib has no 'xyz' format
    target.write_bytes(b'previous')
    with pytest.raises(ValueError):
        plot.plot_curves({'loss': [1, 2]}, target)
    assert target.read_bytes() == b'previous'
    assert os.listdir(tmp_path) == ['plot.xyz']


def test_missing_matplotlib_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    with pytest.raises(ImportError, match='pip install matplotlib'):
        plot.plot_curves({'loss': [1.0]}, tmp_path / 'x.png')
    assert not (tmp_path / 'x.png').exists()
