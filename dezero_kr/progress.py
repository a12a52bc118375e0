"""Progress bars for epochs, iterations and downloads.

``progress(iterable, desc='epoch 1')`` wraps any iterable (a list, ``range``, a
``DataLoader``) and draws a bar while you loop over it::

    for x, t in progress(train_loader, desc='epoch 1'):
        ...

It uses `tqdm <https://tqdm.github.io>`_ when that package is installed (the
optional ``progress`` extra) and otherwise a small built-in text bar that
writes to standard error.  Both accept the same arguments used here.

Turning it off:

* ``progress(..., disable=True)`` for one loop, or
* the environment variable ``DEZERO_KR_PROGRESS=0`` for every bar (useful in
  CI logs and tests).

This module imports nothing heavy; tqdm is imported only when a bar is made.
"""
import os
import sys
import time

ENV_PROGRESS = 'DEZERO_KR_PROGRESS'

__all__ = ['progress', 'TextProgress', 'ENV_PROGRESS']


def _disabled_by_env():
    return os.environ.get(ENV_PROGRESS, '').strip().lower() in ('0', 'off', 'false', 'no')


def _tqdm_class():
    """tqdm's bar class, or None when tqdm is not installed."""
    try:
        from tqdm import tqdm  # optional extra [progress]: imported only when a bar is made
    except ImportError:
        return None
    return tqdm


def progress(iterable=None, desc=None, total=None, disable=False, file=None,
             unit='it', unit_scale=False, unit_divisor=1000, initial=0, leave=True,
             backend=None):
    """Return a progress bar wrapping ``iterable`` (or a manual bar when it is None).

    Args:
        iterable: anything iterable; ``len(iterable)`` is used as the total when
            ``total`` is None and the object has a length (``DataLoader`` does).
        desc: text shown before the bar, e.g. ``'epoch 3'``.
        total: number of expected updates (items, or bytes for downloads).
        disable: True draws nothing (the iterable is still passed through).
        file: stream to draw on; standard error by default.
        unit, unit_scale, unit_divisor: ``unit_scale=True`` prints 1.5M instead
            of 1500000 (divisor 1000, or 1024 for bytes).
        initial: starting count (a resumed download starts at the bytes it had).
        leave: keep the finished bar on screen (True) or erase it (False).
        backend: None picks tqdm when importable, else ``'text'``; pass
            ``'tqdm'`` or ``'text'`` to force one.

    Returns:
        an object that is iterable (when ``iterable`` was given) and has
        ``update(n)``, ``set_postfix(**values)``, ``set_description(desc)`` and
        ``close()``, and works as a context manager.
    """
    if _disabled_by_env():
        disable = True
    if backend not in (None, 'tqdm', 'text'):
        raise ValueError(f"backend must be None, 'tqdm' or 'text', not {backend!r}")
    tqdm = _tqdm_class() if backend in (None, 'tqdm') else None
    if backend == 'tqdm' and tqdm is None:
        raise ImportError("progress(backend='tqdm') needs tqdm: pip install tqdm")
    if tqdm is not None:
        return tqdm(iterable, desc=desc, total=total, disable=disable, file=file,
                    unit=unit, unit_scale=unit_scale, unit_divisor=unit_divisor,
                    initial=initial, leave=leave)
    return TextProgress(iterable, desc=desc, total=total, disable=disable, file=file,
                        unit=unit, unit_scale=unit_scale, unit_divisor=unit_divisor,
                        initial=initial, leave=leave)


def _format_time(seconds):
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f'{hours}:{minutes:02d}:{secs:02d}'
    return f'{minutes:02d}:{secs:02d}'


def _format_count(n, scale, divisor):
    if not scale:
        return str(int(n)) if float(n).is_integer() else f'{n:.1f}'
    for suffix in ('', 'k', 'M', 'G', 'T'):
        if abs(n) < divisor:
            return f'{n:.0f}{suffix}' if suffix == '' else f'{n:.1f}{suffix}'
        n /= divisor
    return f'{n:.1f}P'


class TextProgress:
    """A dependency-free progress bar (the fallback when tqdm is missing).

    Draws ``desc:  42%|########            | 42/100 [00:03<00:04, 12.1it/s, loss=0.3]``.
    On a terminal the line is redrawn in place (at most every 0.1 s); on a
    file or a CI log (not a TTY) it writes a full line at most every 10 s and
    once at the end, so logs stay short.
    """

    bar_width = 20

    def __init__(self, iterable=None, desc=None, total=None, disable=False, file=None,
                 unit='it', unit_scale=False, unit_divisor=1000, initial=0, leave=True):
        if total is None and iterable is not None:
            try:
                total = len(iterable)
            except TypeError:  # generators and other sized-less iterables
                total = None
        self.iterable = iterable
        self.desc = desc
        self.total = total
        self.disable = disable
        self.file = file if file is not None else sys.stderr
        self.unit, self.unit_scale, self.unit_divisor = unit, unit_scale, unit_divisor
        self.leave = leave
        self.n = initial
        self._initial = initial
        self.postfix = ''
        self._start = time.monotonic()
        self._last_draw = None
        self._last_len = 0
        self._closed = False
        isatty = getattr(self.file, 'isatty', None)
        self._tty = bool(isatty and isatty())
        self._mininterval = 0.1 if self._tty else 10.0

    # -- iteration -------------------------------------------------------
    def __iter__(self):
        if self.iterable is None:
            raise TypeError('this progress bar was made without an iterable; call update()')
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            # Runs on normal exhaustion and on `break` (generator close), so
            # the last line is always written.
            self.close()

    def __len__(self):
        if self.total is None:
            raise TypeError('progress bar has no total')
        return self.total

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- public API (a subset of tqdm's) ------------------------------------
    def update(self, n=1):
        """Advance the counter by ``n`` and redraw when enough time has passed."""
        self.n += n
        if self.disable:
            return
        now = time.monotonic()
        if self._last_draw is None or now - self._last_draw >= self._mininterval:
            if self._tty or self._last_draw is not None:
                self._draw(final=False)
            self._last_draw = now

    def set_description(self, desc=None):
        """Replace the text before the bar (None: no text); shown at the next redraw."""
        self.desc = desc

    def set_postfix(self, ordered_dict=None, refresh=True, **values):
        """Show ``key=value`` pairs after the bar, e.g. ``set_postfix(loss=0.25)``.

        ``refresh`` is accepted as in tqdm (this bar redraws on its own schedule).
        """
        items = dict(ordered_dict or {}, **values)
        parts = []
        for key, value in items.items():
            if isinstance(value, float):
                value = f'{value:.4g}'
            parts.append(f'{key}={value}')
        self.postfix = ', '.join(parts)

    def set_postfix_str(self, text=''):
        """Show ``text`` as it is after the bar (``str(text)``)."""
        self.postfix = str(text)

    def close(self):
        """Finish the bar once: draw its final line (``leave=True``) or erase it; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        if self.disable:
            return
        if self.leave:
            self._draw(final=True)
        elif self._tty:
            self.file.write('\r' + ' ' * self._last_len + '\r')
            self.file.flush()

    # -- rendering -------------------------------------------------------
    def format(self):
        """Return the bar as one line of text (no newline)."""
        elapsed = time.monotonic() - self._start
        done = self.n - self._initial
        rate = done / elapsed if elapsed > 0 else 0.0
        count = _format_count(self.n, self.unit_scale, self.unit_divisor)
        rate_text = f'{_format_count(rate, self.unit_scale, self.unit_divisor)}{self.unit}/s'
        prefix = f'{self.desc}: ' if self.desc else ''
        extra = f', {self.postfix}' if self.postfix else ''
        if self.total:
            frac = min(max(self.n / self.total, 0.0), 1.0)
            filled = int(frac * self.bar_width)
            bar = '#' * filled + ' ' * (self.bar_width - filled)
            total = _format_count(self.total, self.unit_scale, self.unit_divisor)
            remaining = (self.total - self.n) / rate if rate > 0 else 0.0
            return (f'{prefix}{frac * 100:3.0f}%|{bar}| {count}/{total} '
                    f'[{_format_time(elapsed)}<{_format_time(remaining)}, {rate_text}{extra}]')
        return f'{prefix}{count}{self.unit} [{_format_time(elapsed)}, {rate_text}{extra}]'

    def _draw(self, final):
        line = self.format()
        if self._tty:
            pad = ' ' * max(self._last_len - len(line), 0)
            self.file.write('\r' + line + pad + ('\n' if final else ''))
        else:
            self.file.write(line + '\n')
        self._last_len = len(line)
        self.file.flush()
