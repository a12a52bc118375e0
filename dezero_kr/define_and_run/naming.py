"""Names for the generated code: identifiers, the namespace it runs in, and its compiled code."""
import builtins
import collections
import keyword
import unicodedata

import numpy as np

from dezero_kr import core
from dezero_kr.core import Variable, as_array


_identifiers = {}  # text -> identifier (a plan makes hundreds of names from a few hints)


def identifier(text):
    """``text`` as a valid Python identifier, as the parser reads it: NFKC-normalised first
    (``ﬁ`` is ``fi``, ``w²`` is ``w2``: two names the parser would make one are one here, and
    ``Names`` makes them unique), other characters ``_``, a keyword with ``_`` appended."""
    out = _identifiers.get(text)
    if out is None:
        out = ''.join(c if ('_' + c).isidentifier() else '_'
                      for c in unicodedata.normalize('NFKC', text)).strip('_') or 'v'
        out = out if out.isidentifier() else '_' + out  # a leading digit
        out = _identifiers[text] = out + '_' if keyword.iskeyword(out) else out
        if len(_identifiers) > 4096:
            _identifiers.clear()
    return out


def _plain_name(attr):
    """An attribute name the parser reads as it is (not a keyword, unchanged by NFKC)."""
    return attr.isidentifier() and not keyword.iskeyword(attr) and unicodedata.normalize('NFKC', attr) == attr


def attribute_source(obj, attr):
    """The source reading ``obj.attr`` (``getattr`` for a name the parser would change)."""
    return f'{obj}.{attr}' if _plain_name(attr) else f'getattr({obj}, {attr!r})'


def set_attribute_source(obj, attr, value):
    """The source setting ``obj.attr = value`` (``setattr`` for a name the parser would change)."""
    return f'{obj}.{attr} = {value}' if _plain_name(attr) else f'setattr({obj}, {attr!r}, {value})'


class Names:
    """Readable, unique names for the generated code, and the namespace they live in."""

    def __init__(self):
        self.ns = {'Variable': Variable, 'np': np, 'as_array': as_array, '_check_grad': core.check_grad}
        self.used = set(self.ns) | {'args', 'kwargs', 'self'} | set(dir(builtins))  # (getattr, ...)
        self.by_id = {}
        self.counters = {}  # base -> the next suffix to try (names are made in O(1), not O(n))

    def add(self, obj, hint):
        """The name of ``obj`` in the namespace: made from ``hint`` on first use, then the same."""
        if id(obj) in self.by_id:
            return self.by_id[id(obj)]
        name = self.local(hint)
        self.ns[name] = obj
        self.by_id[id(obj)] = name
        return name

    def local(self, hint, suffixes=()):
        """A new name from ``hint``; ``suffixes``: the names ``name + suffix`` the code makes
        from it (``g_loss_seed``, the statistics' temporaries) are free and taken too."""
        base = identifier(hint)
        name = base
        while name in self.used or any(name + s in self.used for s in suffixes):
            k = self.counters.get(base, 1)
            self.counters[base] = k + 1
            name = f'{base}_{k}'
        self.used.update([name] + [name + s for s in suffixes])
        return name


_code_cache = collections.OrderedDict()  # source -> code object: the confirming trace repeats it


def compiled(source, name):
    """``source`` compiled (its file name ``<static_graph name>``), cached by source: two plans
    with the same code (another batch size, the confirming trace) compile it once."""
    code = _code_cache.get(source)
    if code is None:
        code = _code_cache[source] = compile(source, f'<static_graph {name}>', 'exec')
        if len(_code_cache) > 64:
            _code_cache.popitem(last=False)
    return code
