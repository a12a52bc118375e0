"""dezero_kr.progress: the built-in text bar's output, disabling, and the tqdm switch."""
import io
import sys

import pytest

from dezero_kr.dataloaders import DataLoader
from dezero_kr.datasets import Spiral
from dezero_kr.progress import TextProgress, progress


@pytest.fixture(autouse=True)
def progress_on(monkeypatch):
    monkeypatch.delenv('DEZERO_KR_PROGRESS', raising=False)


def test_text_bar_passes_items_through_and_writes_a_final_line():
    out = io.StringIO()
    items = list(progress(range(5), desc='epoch 1', file=out, backend='text'))
    assert items == [0, 1, 2, 3, 4]
    line = out.getvalue()
    assert line.count('\n') == 1  # not a TTY: one line at the end
    assert line.startswith('epoch 1: 100%|' + '#' * 20 + '| 5/5 [00:00<00:00, ')
    assert 'it/s]' in line


def test_text_bar_uses_the_loader_length_and_shows_postfix():
    out = io.StringIO()
    loader = DataLoader(Spiral(), batch_size=30, shuffle=False)
    bar = progress(loader, desc='train', file=out, backend='text')
    assert isinstance(bar, TextProgress) and bar.total == 10
    count = 0
    for x, t in bar:
        count += 1
        bar.set_postfix(loss=0.25, step=count)
    assert count == 10
    assert '| 10/10 [' in out.getvalue() and 'loss=0.25, step=10]' in out.getvalue()


def test_break_still_closes_the_bar():
    out = io.StringIO()
    for i in progress(range(10), desc='d', file=out, backend='text'):
        if i == 2:
            break
    # Like tqdm, an item counts once the loop body is done with it: 0 and 1.
    assert ' 20%|####  ' in out.getvalue() and '| 2/10 [' in out.getvalue()


def test_manual_bar_with_bytes_and_unknown_total():
    out = io.StringIO()
    with progress(total=4 * 1024 * 1024, desc='file.gz', file=out, unit='B', unit_scale=True,
                  unit_divisor=1024, backend='text') as bar:
        bar.update(1024 * 1024)
        bar.update(3 * 1024 * 1024)
    assert out.getvalue().startswith('file.gz: 100%|') and '| 4.0M/4.0M [' in out.getvalue()

    out = io.StringIO()
    list(progress((i for i in range(3)), file=out, backend='text'))  # a generator: no length
    assert out.getvalue().startswith('3it [00:00, ')


def test_terminal_output_redraws_in_place():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Terminal()
    list(progress(range(3), desc='t', file=out, backend='text'))
    text = out.getvalue()
    draws = text.split('\r')[1:]
    first, last = draws[0], draws[-1]
    assert first.startswith('t:  33%|######  ') and '| 1/3 [' in first
    assert last.startswith('t: 100%|') and last.endswith('\n')  # redrawn over the first


def test_disable_and_environment_switch(monkeypatch):
    out = io.StringIO()
    assert list(progress(range(3), file=out, disable=True, backend='text')) == [0, 1, 2]
    assert out.getvalue() == ''
    monkeypatch.setenv('DEZERO_KR_PROGRESS', '0')
    assert list(progress(range(3), file=out, backend='text')) == [0, 1, 2]
    assert out.getvalue() == ''


def test_backend_choice(monkeypatch):
    with pytest.raises(ValueError):
        progress(range(2), backend='fancy')
    monkeypatch.setitem(sys.modules, 'tqdm', None)  # as if tqdm were not installed
    assert isinstance(progress(range(2), disable=True), TextProgress)
    with pytest.raises(ImportError, match='pip install tqdm'):
        progress(range(2), backend='tqdm')


def test_tqdm_is_used_when_installed():
    tqdm = pytest.importorskip('tqdm', reason='tqdm is not installed')
    out = io.StringIO()
    bar = progress(range(4), desc='epoch 2', file=out)
    assert isinstance(bar, tqdm.tqdm)
    assert list(bar) == [0, 1, 2, 3]
    assert 'epoch 2' in out.getvalue() and '4/4' in out.getvalue()


def test_set_postfix_accepts_tqdms_refresh_keyword():
    import io
    from dezero_kr.progress import TextProgress
    bar = TextProgress(range(3), file=io.StringIO())
    bar.set_postfix(loss=0.5, refresh=False)
    assert bar.postfix == 'loss=0.5'
