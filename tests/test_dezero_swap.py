"""DeZero code runs on dezero_kr after the import swap that README and the docs describe.

The rule (README, both languages; docs/dezero_differences.md): ``import dezero``
becomes ``import dezero_kr as dezero``, so that ``dezero.datasets.Spiral()``,
``dezero.functions`` and ``dezero.layers`` keep working; in ``from dezero...``
and ``import dezero.functions as F`` only the package name changes.  ``swap``
applies exactly that rule to a script written the way the book writes its steps
(48-50: spiral data, MLP, DataLoader, accuracy, no_grad), which then runs in a
subprocess and trains.  A plain ``import dezero_kr`` (the old wording) would
leave ``dezero`` undefined: checked too.
"""
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import dezero_kr as dezero
from _subproc import ROOT, python_env
from dezero_kr.models import Model

DEZERO_STYLE = '''
import numpy as np
import dezero
from dezero import optimizers
from dezero.models import MLP
import dezero.functions as F
import dezero.layers as L

np.random.seed(0)
train_set = dezero.datasets.Spiral(train=True)
test_set = dezero.datasets.Spiral(train=False)
train_loader = dezero.DataLoader(train_set, batch_size=30)
test_loader = dezero.DataLoader(test_set, batch_size=30, shuffle=False)
model = MLP((10, 3))
optimizer = optimizers.SGD(lr=1.0).setup(model)
assert isinstance(model.layers[0], L.Linear)

for epoch in range(100):
    for x, t in train_loader:
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()

with dezero.no_grad():
    right = sum(float(F.accuracy(model(x), t).data) * len(t) for x, t in test_loader)
x = dezero.Variable(np.array(2.0))
y = dezero.functions.tanh(x)
print(f'accuracy {right / len(test_set):.4f} tanh {float(y.data):.6f}')
'''


def swap(source):
    """The documented import swap, line by line."""
    source = re.sub(r'^(\s*)import dezero[ \t]*$', r'\1import dezero_kr as dezero', source, flags=re.M)
    source = re.sub(r'^(\s*)from dezero([. ])', r'\1from dezero_kr\2', source, flags=re.M)
    return re.sub(r'^(\s*)import dezero\.', r'\1import dezero_kr.', source, flags=re.M)


def run(code, tmp_path):
    return subprocess.run([sys.executable, '-c', code], cwd=tmp_path, capture_output=True, text=True,
                          encoding='utf-8', timeout=300, env=python_env(PYTHONIOENCODING='utf-8'))


def test_dezero_style_code_runs_after_the_documented_swap(tmp_path):
    code = swap(DEZERO_STYLE)
    assert 'import dezero_kr as dezero\n' in code and 'from dezero_kr.models import MLP' in code
    assert 'import dezero_kr.functions as F' in code and 'dezero.datasets.Spiral(' in code
    proc = run(code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    accuracy, tanh = re.fullmatch(r'accuracy (\S+) tanh (\S+)\n', proc.stdout).groups()
    assert float(accuracy) > 0.8  # it learned the spiral
    assert tanh == '0.964028'  # tanh(2)
    assert 'Warning' not in proc.stderr


def test_the_old_wording_breaks_such_code(tmp_path):
    code = swap(DEZERO_STYLE).replace('import dezero_kr as dezero\n', 'import dezero_kr\n')
    proc = run(code, tmp_path)
    assert proc.returncode != 0 and "NameError: name 'dezero' is not defined" in proc.stderr


def test_readme_and_docs_describe_this_swap():
    readme = (ROOT / 'README.md').read_text(encoding='utf-8')
    korean, english = readme.split('# dezero_kr (English)')
    for text in (korean, english):
        assert '`import dezero_kr as dezero`' in text
    differences = (ROOT / 'docs' / 'dezero_differences.md').read_text(encoding='utf-8')
    assert '`import dezero_kr as dezero`' in differences
    for text in (readme, differences):
        assert not re.search(r'`import dezero`(를|을)? `import dezero_kr`로', text)
        assert 'replace `import dezero` by `import dezero_kr` ' not in text


def test_the_book_step59_line_fails_on_numpy_2_and_the_documented_fix_works():
    # docs/dezero_differences.md, 11절: `pred_list.append(float(y.data))` on a (1, 1) array
    model = Model()
    model.l1 = dezero.layers.Linear(1)
    y = model.l1(np.array([[0.5]]))
    assert y.shape == (1, 1)
    if tuple(int(p) for p in np.__version__.split('.')[:2]) >= (1, 25):  # deprecated, then an error
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            with pytest.raises((TypeError, DeprecationWarning), match='0-dimensional arrays'):
                float(y.data)
    assert y.data.item() == float(y.data[0, 0])
    text = (ROOT / 'docs' / 'dezero_differences.md').read_text(encoding='utf-8')
    assert '`pred_list.append(float(y.data))`' in text and '`pred_list.append(y.data.item())`' in text
