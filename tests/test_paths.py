"""paths.display_path: saved files are shown relative to the current folder when inside it."""
import os
import pathlib

import pytest

from dezero_kr.graph import RenderedGraph
from dezero_kr.paths import display_path


def test_inside_the_current_folder_is_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert display_path(str(tmp_path / 'goldstein.png')) == 'goldstein.png'
    assert display_path(tmp_path / 'plots' / 'a.png') == os.path.join('plots', 'a.png')
    assert display_path('plots/../b.png') == 'b.png'
    assert display_path(RenderedGraph(str(tmp_path / 'g.svg'))) == 'g.svg'
    assert display_path(tmp_path) == '.'


def test_outside_the_current_folder_is_absolute(tmp_path, monkeypatch):
    (tmp_path / 'here').mkdir()
    monkeypatch.chdir(tmp_path / 'here')
    assert display_path(tmp_path / 'elsewhere' / 'x.npz') == str(tmp_path / 'elsewhere' / 'x.npz')
    assert display_path('../x.npz') == str(tmp_path / 'x.npz')
    # a sibling whose name starts with the current folder's name is not inside it
    assert display_path(tmp_path / 'here2' / 'y.png') == str(tmp_path / 'here2' / 'y.png')


@pytest.mark.parametrize('bad', [None, 3, b'a.png', ['a.png']])
def test_non_paths_are_a_type_error(bad):
    with pytest.raises(TypeError, match=r'display_path: expected a str or path-like object, got'):
        display_path(bad)


def test_path_objects_are_accepted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert display_path(pathlib.PurePosixPath('a') / 'b.png') == os.path.join('a', 'b.png')
