"""Generate ``tests/dezero_api_table.json`` from the DeZero API inventory (``dezero_api.md``).

The inventory is a Markdown file kept outside the repository (``../shared/dezero_api.md``
relative to the clone); CI does not have it, so the table generated here is committed and
``tests/test_dezero_compat.py`` reads only the table.  Regenerate after the inventory changes::

    python tests/make_dezero_api_table.py ../shared/dezero_api.md
    python tests/make_dezero_api_table.py ../shared/dezero_api.md --check /tmp/dezero013

``--check DIR`` (optional, needs DeZero's source, e.g. ``pip install --no-deps --target
/tmp/dezero013 dezero==0.0.13``) reads DeZero's modules with ``ast`` (nothing is imported)
and prints every parsed name that DeZero does not define, and every public module-level
name of DeZero that the inventory does not mention.

How the inventory is read (Markdown, one ``## N. module.py`` section per module; the
table lists module-level names and class members, not instance attributes):

* An *item* is a bullet with its indented continuation lines, a table row, or a paragraph.
* A code span is a list of names when every token (split at commas, or at spaces when all
  are one kind: ``Sin Cos Tanh``) is ``name(params)`` with a Python parameter list (a name
  with a signature), ``name = value`` or a lone identifier; anything else (``np.isscalar(x)``,
  ``x.dot(W)``, ``creator = func; ...``) is prose and skipped.  ``Name(Base)`` (one
  capitalised parameter, no default) is a class and its base, not a signature; in a table
  row ``| `Name` | `(params)` |`` the second cell is the signature.
* A capitalised lone name (``* `Optimizer()`: ...``) owns the lowercase call forms that follow
  up to the end of its sentence (``Optimizer.setup``), except its own function
  (``Conv2d`` ... ``conv2d(...)``); lowercase lone words there are instance attributes and
  skipped.  ``Class.attr`` is taken as written.  Under ``### Variable`` every lowercase name
  is a member of Variable, under ``### Function`` every lowercase call form.
* A span in a clause that starts with "no", "not", "Not defined" or "Absent" (up to ``;``,
  ``. `` or the closing bracket) names something DeZero lacks.  Slash lists (``a/b/c``) are
  read only there.
* ``### core_simple.py differences`` says what core_simple lacks: core_simple gets core's
  names minus the ones negated there, with the signatures stated there (``as_array(x)``).
* Builtins (``getattr``, ``TypeError``), one-letter names and private ``_names`` are not
  names; ``IGNORE`` lists the remaining tokens the rules would misread, each with its reason,
  and ``PROSE_SIGNATURE`` the call forms whose arguments are an example, not the signature.
"""
import argparse
import ast
import builtins
import json
import keyword
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / 'dezero_api_table.json'

SECTION = re.compile(r'^## \d+\. (\w+)\.py\b|^## 0\. ')
SPAN = re.compile(r'`([^`]+)`')
IDENT = r'[A-Za-z_]\w*'
CALL = re.compile(rf'^({IDENT}(?:\.{IDENT})?)\((.*)\)$', re.S)
ASSIGN = re.compile(rf'^({IDENT}) = (.+)$')
NEGATION = re.compile(r'(?:no|No|not|Not defined|Absent)\b')

# Tokens that the rules above read as names but that are not part of DeZero's public API.
IGNORE = {
    'core.Variable.setup_variable': "'Installed by `setup_variable()`': a function of core, not a method",
    'cuda.DataLoader': "'GPU paths exist in: ... `DataLoader(gpu=True)`': a call, not a signature",
    'cuda.GetItemGrad': "'GPU paths exist in: ... `GetItemGrad`': a class of functions",
    'cuda.xp': "'all `xp = cuda.get_array_module(...)` call sites': a local name",
    'layers.PYTHONHASHSEED': 'an environment variable',
    'core.getattr': "'`getattr(Config, name)` first': Python's",
    'core.Variable.len': "'`__len__` -> `len(data)`': Python's",
    'core.Variable.gys': "'`gys = [o().grad for o in f.outputs]`': a local name in backward",
    'functions.len': "'MSE divides by `len(diff)`': Python's",
    'optimizers.id': "'State dicts keyed by `id(param)`': Python's",
    'utils.id': "'Node ids are `id()` values': Python's",
    'datasets.ImageNet.__init__': "'`__init__` does nothing'",
    'optimizers.FreezeParam.update': "'`FreezeParam` breaks `update()`': Optimizer.update",
}

# Call forms quoted in prose whose arguments are not the function's parameters.
PROSE_SIGNATURE = {
    'functions.as_variable': "'reshape returns `as_variable(x)`': the function is core's as_variable(obj)",
}


def split_top(text, seps=','):
    """Split ``text`` at ``seps`` that are outside brackets and quotes."""
    parts, depth, quote, cur = [], 0, None, ''
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in '\'"':
            quote = ch
        elif ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch in seps and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_params(text):
    """``'x, axis=None, *args'`` -> ``[[name, default_source_or_None, kind], ...]``; None if not params."""
    params = []
    for part in split_top(text):
        m = re.fullmatch(rf'(\*{{0,2}})({IDENT})(?:\s*=\s*(.+))?', part, re.S)
        if not m or m.group(2) in ('None', 'True', 'False'):
            return None  # "Parameter(None, name='W')": a call with values, not a signature
        stars, name, default = m.groups()
        kind = 'self' if part == 'self' else \
            {'': 'positional', '*': 'var_positional', '**': 'var_keyword'}[stars]
        params.append([name, default.strip() if default else None, kind])
    return params


def items_of(lines):
    """Group lines into items: a bullet with its continuation lines, a table row, a paragraph."""
    item = None
    for line in lines:
        stripped = line.strip()
        starts = not stripped or stripped.startswith(('* ', '|'))
        if starts and not (item and item.count('`') % 2):  # never split an open code span
            if item:
                yield item
            item = stripped or None
        else:
            item = f'{item} {stripped}' if item else stripped
    if item:
        yield item


def prose_chars(text):
    """``(index, char, bracket depth)`` for every character of ``text`` outside code spans."""
    depth, in_code = 0, False
    for i, ch in enumerate(text):
        if ch == '`':
            in_code = not in_code
        elif not in_code:
            if ch == '(':
                depth += 1
            elif ch == ')':
                depth = max(depth - 1, 0)
            yield i, ch, depth


def ends_clause(text, i, ch):
    return ch == ';' or (ch == '.' and text[i + 1:i + 2] in (' ', ''))


def negated(prefix):
    """True if the text before a span puts it in a "no ..." clause.

    A negation word holds until ``;`` or ``. `` at its own bracket depth, or
    until its bracket closes: in "(accepts Variable; numpy when no CuPy),
    `as_numpy(x)`" the span is not negated.
    """
    flags = [False]  # one per open bracket
    for i, ch, depth in prose_chars(prefix):
        del flags[depth + 1:]
        flags.extend([False] * (depth + 1 - len(flags)))
        if ends_clause(prefix, i, ch):
            flags[depth] = False
        elif (i == 0 or not prefix[i - 1].isalnum()) and NEGATION.match(prefix, i):
            flags[depth] = True
    return any(flags)


def sentence_start(prefix):
    """Index after the last ``. `` outside code spans and brackets (0 if none)."""
    starts = [i + 1 for i, ch, depth in prose_chars(prefix)
              if depth == 0 and ch == '.' and prefix[i + 1:i + 2] == ' ']
    return starts[-1] if starts else 0


def tokens_of(span):
    """``(kind, [(name, params_or_None, form)])`` for a span that lists names, else None (prose).

    kind: 'slash' for ``a/b/c`` lists (used only to read what core_simple lacks), else 'list'.
    form: 'call' (``name(params)``), 'assign' (``name = value``), 'word'.
    """
    span = span[len('class '):] if span.startswith('class ') else span
    m = ASSIGN.match(span)
    if m:
        return ('list', [(m.group(1), None, 'assign')]) if ';' not in span else None
    spaced = ' ' in span and ',' not in span and '(' not in span
    slash = '/' in span and '(' not in span and ' ' not in span
    parts = span.split() if spaced else span.split('/') if slash else split_top(span)
    out = []
    for tok in parts:
        m = CALL.match(tok)
        if m:
            name, inner = m.groups()
            if '...' in inner:
                out.append((name, None, 'call'))
                continue
            params = parse_params(inner)
            if params is None:
                return None
            if (len(params) == 1 and params[0][1] is None and params[0][2] == 'positional'
                    and params[0][0][0].isupper() and name[0].isupper()):
                params = None  # ``Name(Base)``: a class and its base, not a signature
            out.append((name, params, 'call'))
        elif re.fullmatch(rf'{IDENT}(?:\.{IDENT})?', tok) and not keyword.iskeyword(tok):
            out.append((tok, None, 'word'))
        else:
            return None
    if spaced:  # "Sin Cos Tanh", "__add__ __radd__", "x2f x2i": one kind of name only
        kinds = {('dunder' if n.startswith('__') else 'upper' if n[0].isupper() else 'lower')
                 for n, _, _ in out}
        if len(kinds) > 1:
            return None
    return ('slash' if slash else 'list'), out


def is_class_name(name):
    """``Variable``, ``MNIST``, ``VGG16``; not ``W``, builtins (``TypeError``) or ``WEIGHTS_PATH``."""
    return name[0].isupper() and len(name) > 1 and name not in vars(builtins) and '_' not in name


class Table:
    """``entries[(module, qualname)] = params`` (None when the inventory states no signature)."""

    def __init__(self):
        self.entries = {}

    def add(self, module, name, params):
        last = name.split('.')[-1]
        if f'{module}.{name}' in IGNORE or (last.startswith('_') and not last.startswith('__')):
            return  # not public API (IGNORE) or a private helper
        if self.entries.get((module, name)) is None:
            self.entries[(module, name)] = params  # the first signature stated wins


def parse(md_text):
    table = Table()
    parts, module, sub = [], None, None
    for line in md_text.splitlines():
        if line.startswith('## '):
            m = SECTION.match(line)
            module = None if not m else (m.group(1) or 'dezero')
            sub = None
            parts.append((module, sub, []))
        elif line.startswith('### '):
            title = line[4:].strip()
            sub = title if re.fullmatch(IDENT, title) else title.split()[0] + ' ...'
            parts.append((module, sub, []))
        elif parts:
            parts[-1][2].append(line)

    negated_names, simple_sigs = set(), {}
    for module, sub, lines in parts:
        if module is None:
            continue
        simple = sub == 'core_simple.py ...'
        # "### Variable", "### Function": a class whose section lists its members
        class_sub = sub if sub and is_class_name(sub) and any(
            f'`{sub}' in line or f'`class {sub}' in line for line in lines) else None
        if class_sub:
            table.add(module, class_sub, None)
        for item in items_of(lines):
            owner, owner_at = class_sub, None
            row_class = None
            is_row = item.startswith('|')
            for index, sm in enumerate(SPAN.finditer(item)):
                span = sm.group(1).strip()
                if is_row and row_class and span.startswith('(') and span.endswith(')'):
                    params = None if '...' in span else parse_params(span[1:-1])
                    if params is not None:
                        table.add(module, row_class, params)
                    row_class = None
                    continue
                parsed = tokens_of(span)
                if not parsed:
                    continue
                kind, toks = parsed
                negative = negated(item[:sm.start()])
                if owner_at is not None and sentence_start(item[:sm.start()]) > owner_at:
                    owner, owner_at = class_sub, None  # a class owns names up to the end of its sentence
                if kind == 'slash' and not negative:
                    continue  # "kernel_size/stride/pad accept int": prose
                lone = len(toks) == 1
                for name, params, form in toks:
                    if negative:  # "no `unchain/reshape`", "No `Parameter`, `test_mode`"
                        if simple:
                            negated_names.add(name)
                        continue
                    if f'{module}.{name}' in IGNORE or (name in vars(builtins) and (
                            name[0].isupper() or (lone and form == 'word' and not owner))):
                        continue  # TypeError, StopIteration; a lone builtin word in prose
                    if '.' in name:
                        head, attr = name.split('.')
                        if module == 'dezero' and head == 'dezero':
                            qual = attr
                        elif is_class_name(head) and head not in ('F', 'L'):
                            qual = name
                        else:
                            continue  # np.x, x.dot(W), F.sum_to: prose
                    elif is_class_name(name):
                        qual = name
                        if lone and not class_sub:
                            owner, owner_at = name, sm.start()  # the names that follow belong to it
                            row_class = name if is_row and index == 0 else None
                    elif name.startswith('__'):
                        if owner is None and form != 'assign':
                            continue
                        qual = f'{owner}.{name}' if owner else name  # __version__ = '0.0.13'
                    elif len(name) == 1 and class_sub != 'Variable':
                        continue  # W, T outside Variable: a math symbol
                    elif '_' in name and name.isupper():  # WEIGHTS_PATH: a class attribute
                        qual = f'{owner}.{name}' if owner else name
                    elif class_sub == 'Variable':  # its methods and properties
                        if form == 'assign':
                            continue  # "`creator = None`": what a method does
                        qual = f'{owner}.{name}'
                    elif class_sub:  # "### Function": only call forms are its methods
                        if form != 'call':
                            continue
                        qual = f'{owner}.{name}'
                    elif owner and form == 'call' and name.replace('_', '') != owner.lower():
                        qual = f'{owner}.{name}'  # a method: "`Optimizer()`: `setup(target)`"
                    elif owner:
                        if form != 'call':
                            continue  # "`RNN(...)`: `x2h`, `h2h`, `h`": instance attributes
                        qual = name  # "`Conv2d(...)` Function / `conv2d(...)`": its function
                    else:
                        if form == 'word' and lone and module != 'cuda':
                            continue  # a lone word in prose ("data", "train"); cuda's section
                            # lists its names that way: "`gpu_enable` (bool), `cp`/`cupy`"
                        qual = name
                    if simple:
                        simple_sigs[qual] = params
                    else:
                        table.add(module, qual, params)

    # core_simple: core's names minus what its section says it lacks, with its own signatures.
    def lacks(qual):
        return qual in negated_names or ('.' in qual and qual.split('.')[-1] in negated_names)
    for (module, qual), params in list(table.entries.items()):
        if module == 'core' and not lacks(qual):
            table.add('core_simple', qual, simple_sigs.get(qual) or params)
    for (module, qual) in list(table.entries):
        head = qual.split('.')[0]
        if '.' in qual and (module, head) not in table.entries:
            del table.entries[(module, qual)]  # "Config.train" quoted in functions: core's class
    for key in PROSE_SIGNATURE:
        if tuple(key.split('.', 1)) in table.entries:
            table.entries[tuple(key.split('.', 1))] = None
    return table


def dezero_names(src_dir):
    """Public module-level names and class members of each DeZero module, read with ``ast``."""
    names = {}
    pkg = Path(src_dir) / 'dezero'
    for path in sorted(pkg.glob('*.py')):
        mod = 'dezero' if path.stem == '__init__' else path.stem
        tree = ast.parse(path.read_text())
        found = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                found.add(node.name)
                if isinstance(node, ast.ClassDef):
                    for sub in node.body:
                        if isinstance(sub, ast.FunctionDef):
                            found.add(f'{node.name}.{sub.name}')
                        elif isinstance(sub, ast.Assign):
                            found.update(f'{node.name}.{t.id}' for t in sub.targets
                                         if isinstance(t, ast.Name))
            elif isinstance(node, ast.Assign):
                found.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update((a.asname or a.name).split('.')[0] for a in node.names)
            elif isinstance(node, (ast.Try, ast.If)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        found.update((a.asname or a.name).split('.')[0] for a in sub.names)
                    elif isinstance(sub, ast.Assign):
                        found.update(t.id for t in sub.targets if isinstance(t, ast.Name))
            for sub in ast.walk(node):  # setup_variable(): Variable.__add__ = add
                if isinstance(sub, ast.Assign):
                    found.update(f'{t.value.id}.{t.attr}' for t in sub.targets
                                 if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                 and t.value.id[0].isupper())
        names[mod] = found
    names['dezero'] |= {p.stem for p in pkg.glob('*.py')}
    return names


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('md', help='path of dezero_api.md (../shared/dezero_api.md from the clone)')
    ap.add_argument('--check', metavar='DIR', help='DeZero source folder to compare against')
    ap.add_argument('--out', default=str(OUT))
    args = ap.parse_args(argv)
    table = parse(Path(args.md).read_text(encoding='utf-8'))
    rows = [{'module': m, 'name': n, 'params': p} for (m, n), p in sorted(table.entries.items())]
    Path(args.out).write_text(json.dumps(
        {'source': 'dezero_api.md (DeZero master, __version__ 0.0.13)',
         'generated_by': 'python tests/make_dezero_api_table.py ../shared/dezero_api.md',
         'names': rows}, indent=1, ensure_ascii=False) + '\n', encoding='utf-8')
    print(f'{len(rows)} names written to {args.out}')
    if args.check:
        real = dezero_names(args.check)
        bad = [f"{r['module']}.{r['name']}" for r in rows
               if r['name'] not in real.get(r['module'], ())]
        print(f'parsed but not defined in DeZero ({len(bad)}):', ' '.join(bad))
        parsed = {(r['module'], r['name']) for r in rows}
        for mod, found in sorted(real.items()):
            miss = sorted(n for n in found if '.' not in n and not n.startswith('_')
                          and (mod, n) not in parsed)
            print(f'{mod}: defined in DeZero, not in the inventory ({len(miss)}):', ' '.join(miss))
    return 0


if __name__ == '__main__':
    sys.exit(main())
