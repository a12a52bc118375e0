"""README's house map names every module of the package and nothing else, in both languages.

A row's module cell lists files in backticks: ``core.py`` at the top of
``dezero_kr/``, or a package as ``autograd/``: ``reverse.py``, ... (the
package's front door ``__init__.py`` is implied by its name, and the files
after it are inside it).
"""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'dezero_kr'
README = (ROOT / 'README.md').read_text(encoding='utf-8')
SECTIONS = {'English': '## House map: where things live', 'Korean': '## 집 안내도: 무엇이 어디에 있나'}


def tree_modules():
    """Every ``.py`` file of the package, as its path inside ``dezero_kr/``."""
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob('*.py')}


def map_modules(heading):
    """The files the house map under ``heading`` names (its table's second column)."""
    section = README[README.index(heading):]
    section = section[:section.index('\n## ', 1)]
    named = []
    for line in section.splitlines():
        cells = line.split('|')
        if len(cells) < 4 or set(cells[2].strip()) <= set('-'):
            continue
        prefix = ''
        for token in re.findall(r'`([^`]+)`', cells[2]):
            if token.endswith('/') and token != 'dezero_kr/':
                prefix = token
                named.append(prefix + '__init__.py')
            elif token.endswith('.py'):
                named.append(prefix + token)
    return named


@pytest.mark.parametrize('language', sorted(SECTIONS))
def test_the_house_map_names_every_module_once_and_nothing_else(language):
    named = map_modules(SECTIONS[language])
    assert len(named) == len(set(named)), sorted(n for n in named if named.count(n) > 1)
    tree = tree_modules()
    assert {'missing from the map': sorted(tree - set(named)),
            'not in the tree': sorted(set(named) - tree)} == {'missing from the map': [],
                                                             'not in the tree': []}
