"""docs/make_figures.py draws the tutorial's explanatory pictures (docs/_static/figures/).

* every picture a docs page shows is drawn by the script and committed, and every picture the
  script draws is shown somewhere;
* the script is deterministic: two runs write byte-identical PNGs (no timestamps, fixed seeds);
* the numbers written in the pictures are the tutorial's: the chain rule's values are step 05's
  golden output, the initialisation curves end where theory_check.py's printed numbers are, the
  pooling picture is dezero_kr's pooling, the causal weights are a causal softmax.
"""
import importlib.util
import pathlib
import re

import numpy as np
import pytest

pytest.importorskip('matplotlib', reason='matplotlib is in the [test] extra')

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / 'docs'
FIGURES = DOCS / '_static' / 'figures'


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_figures = _load(DOCS / 'make_figures.py', 'make_figures')


def referenced():
    """{picture name: [pages]} for every ``_static/figures/NAME.png`` a docs page names."""
    found = {}
    for page in DOCS.rglob('*.md'):
        for name in re.findall(r'_static/figures/([\w-]+)\.png', page.read_text(encoding='utf-8')):
            found.setdefault(name, []).append(page.relative_to(DOCS).as_posix())
    return found


def test_every_referenced_picture_is_drawn_and_committed():
    refs = referenced()
    assert refs, 'no page shows a picture of docs/_static/figures'
    assert set(refs) <= set(make_figures.FIGURES), sorted(set(refs) - set(make_figures.FIGURES))
    assert set(make_figures.FIGURES) <= set(refs), \
        f'drawn but shown nowhere: {sorted(set(make_figures.FIGURES) - set(refs))}'
    for name in refs:
        path = FIGURES / f'{name}.png'
        assert path.is_file(), f'{path} missing: run python docs/make_figures.py'
        assert path.stat().st_size < 80_000, f'{path.name} is {path.stat().st_size} bytes'
    # the pictures the issue asks for, on the pages of their steps
    wanted = {'chain_rule': 'tutorial/stage1.md', 'multi_input': 'tutorial/stage2.md',
              'broadcast': 'tutorial/stage4.md', 'matmul': 'tutorial/stage4.md',
              'conv_window': 'tutorial/stage5.md', 'pooling_window': 'tutorial/stage5.md',
              'rnn_unrolled': 'tutorial/stage5.md', 'lstm_cell': 'tutorial/stage5.md',
              'causal_mask': 'tutorial/beyond.md', 'theory_vanishing': 'tutorial/theory.md',
              'theory_init': 'tutorial/theory.md'}
    for name, page in wanted.items():
        assert page in refs.get(name, []), (name, page)


def test_pictures_are_regenerated_identically(tmp_path):
    first, second = tmp_path / 'a', tmp_path / 'b'
    assert make_figures.main(['--out', str(first)]) == 0
    assert make_figures.main(['--out', str(second)]) == 0
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(f'{n}.png' for n in make_figures.FIGURES)
    for name in names:
        data = (first / name).read_bytes()
        assert data[:8] == b'\x89PNG\r\n\x1a\n'
        assert data == (second / name).read_bytes(), f'{name} differs between two runs'
        assert b'tIME' not in data and b'Software' not in data


def test_chain_rule_numbers_are_step05s():
    golden = (ROOT / 'tests' / 'golden' / 'steps' / 'step05.txt').read_text(encoding='utf-8')
    v = make_figures.chain_values(2.0)
    for key in ('b', 'y'):
        assert f'{key}={float(v[key])!r}' in golden, key
    for key, label in (('gb', 'dy/db'), ('ga', 'dy/da'), ('gx', 'dy/dx')):
        assert f'{label}={float(v[key])!r}' in golden, label


def test_init_curves_end_at_theory_checks_numbers(capsys):
    theory = _load(DOCS / 'tutorial' / 'answers' / 'theory_check.py', 'theory_check')
    final = theory.init_spread()
    capsys.readouterr()
    curves = make_figures.init_spread()
    assert set(curves) == set(final)
    for label, row in curves.items():
        assert len(row) == 11 and row[-1] == final[label], label
    z, slope, k, products = make_figures.vanishing_curves()
    assert slope.max() == 0.25 and z[slope.argmax()] == 0.0
    assert products[1.0][-1] == 0.25 ** 10 and products[4.0][-1] == 1.0


def test_pooling_and_mask_pictures_show_real_values():
    import dezero_kr.functions as F
    from dezero_kr import Variable
    y, mask = make_figures.pooled(make_figures.POOL_X)
    x = Variable(make_figures.POOL_X[None, None].copy())
    out = F.pooling(x, kernel_size=2, stride=2)
    np.testing.assert_array_equal(out.data[0, 0], y)
    out.grad = Variable(np.array([[[[1.0, 2.0], [3.0, 4.0]]]]))
    out.backward()
    np.testing.assert_array_equal(x.grad.data[0, 0],
                                  np.kron([[1.0, 2.0], [3.0, 4.0]], np.ones((2, 2))) * mask)
    w = make_figures.causal_weights(6)
    assert np.all(np.triu(w, 1) == 0.0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-15)
    assert make_figures.conv_outsize(5, 3, 2, 1) == 3


def test_tutorial_table_of_contents_lists_the_step_65_viewer():
    index = (DOCS / 'tutorial' / 'index.md').read_text(encoding='utf-8')
    assert re.search(r'^\| \[역전파 보기\]\(\.\./backprop_view\.md\) \| 65 \|', index, re.M)
