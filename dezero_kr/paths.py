"""How a saved file's path is shown to the user: one rule for the examples, the steps and the demo.

Scripts write where the user runs them (the current folder, as DeZero does) or
into a folder the user named.  Printing those paths sometimes absolute
(``/home/me/dezero_kr/goldstein.png``) and sometimes relative (``goldstein.png``)
made the same file look different from script to script, so every script
prints ``display_path(path)``: relative to the current folder when the file is
inside it, absolute otherwise (a ``../../tmp/x`` path says less than ``/tmp/x``).
"""
import os

__all__ = ['display_path']


def display_path(path):
    """``path`` relative to the current folder if it lies inside it, else absolute.

    ``path`` is a ``str`` (a ``RenderedGraph`` is one) or a path-like object such
    as ``pathlib.Path``; the file need not exist.  Separators are the platform's.

    Raises:
        TypeError: ``path`` is not a str or path-like object (e.g. None, 3, bytes).
    """
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f'display_path: expected a str or path-like object, got {type(path).__name__} '
                        f'{path!r}')
    full = os.path.abspath(os.fspath(path))
    here = os.getcwd()
    try:
        inside = os.path.commonpath([full, here]) == here
    except ValueError:  # another drive on Windows
        inside = False
    return os.path.relpath(full, here) if inside else full
