#@ file step 26
"""mydezero의 도우미 모음 (26단계부터). 처음에는 계산 그래프 그리기뿐이고, 단계마다
도우미가 늘어난다(python steps/mydezero_at.py --changes)."""
import os
import shutil
import subprocess
import sys

import numpy as np


# =============================================================================
# 계산 그래프를 DOT 텍스트로 (26단계)
# =============================================================================
def get_dot_graph(output, verbose=True):
    """output을 만든 계산 그래프의 DOT 텍스트.

    노드 번호는 처음 만난 순서로 1, 2, 3 ... (id()를 쓰면 실행할 때마다
    텍스트가 달라진다). 한 번 적은 변수는 다시 적지 않는다: 같은 변수를 두 번
    쓴 식에서도 노드 줄은 한 번이다.
    """
    numbers = {}  # id(변수나 함수) -> 노드 번호

    def node(obj):
        return numbers.setdefault(id(obj), len(numbers) + 1)

    def dot_var(v):
        label = v.name or ''
        if verbose and v.data is not None:
            label = (label + ': ' if label else '') + f'{v.shape} {v.dtype}'
        return f'{node(v)} [label="{label}", color=orange, style=filled]\n'

    def dot_func(f):
        text = (f'{node(f)} [label="{type(f).__name__}", color=lightblue, '
                'style=filled, shape=box]\n')
        for x in f.inputs:
            text += f'{node(x)} -> {node(f)}\n'
        for ref in f.outputs:  # outputs는 약한 참조: ref()가 변수다
            text += f'{node(f)} -> {node(ref())}\n'
        return text

    text, written = dot_var(output), {id(output)}
    funcs, seen = [], set()
    if output.creator is not None:
        funcs.append(output.creator)
        seen.add(output.creator)
    while funcs:
        f = funcs.pop()
        text += dot_func(f)
        for x in f.inputs:
            if id(x) not in written:
                text += dot_var(x)
                written.add(id(x))
            if x.creator is not None and x.creator not in seen:
                funcs.append(x.creator)
                seen.add(x.creator)
    return 'digraph g {\n' + text + '}'


def plot_dot_graph(output, verbose=True, to_file='graph.png'):
    """DOT 텍스트를 to_file과 같은 이름의 .dot으로 쓰고, Graphviz의 dot으로
    그림을 그린다.

    dot 프로그램이 없으면 .dot만 남기고 알린다. 그린 그림 파일의 경로를
    돌려준다 (없으면 None).
    """
    dot_graph = get_dot_graph(output, verbose)
    stem, extension = os.path.splitext(to_file)
    dot_file = stem + '.dot'
    with open(dot_file, 'w', encoding='utf-8') as f:
        f.write(dot_graph)

    dot = shutil.which('dot')
    if dot is None:
        print(f'dot 프로그램이 없어 {dot_file}만 썼습니다 '
              '(Graphviz를 설치하세요)', file=sys.stderr)
        return None
    subprocess.run([dot, dot_file, '-T', extension[1:], '-o', to_file],
                   check=True)
    return to_file
#@ step 30


# =============================================================================
# 수치 미분으로 역전파 검사 (30단계부터)
# =============================================================================
def numerical_grad(f, x, *args, **kwargs):
    """중앙 차분으로 sum(f(x))의 기울기. x(Variable 또는 ndarray)를 잠깐씩 바꿔
    가며 잰다."""
    from mydezero.core import Variable
    eps = 1e-4
    x = x.data if isinstance(x, Variable) else x
    grad = np.zeros_like(x)

    it = np.nditer(x, flags=['multi_index'], op_flags=['readwrite'])
    while not it.finished:
        idx = it.multi_index
        tmp_val = x[idx].copy()

        x[idx] = tmp_val + eps
        y1 = f(x, *args, **kwargs)
        y1 = y1.data.sum() if isinstance(y1, Variable) else y1.sum()

        x[idx] = tmp_val - eps
        y2 = f(x, *args, **kwargs)
        y2 = y2.data.sum() if isinstance(y2, Variable) else y2.sum()

        grad[idx] = (y1 - y2) / (2 * eps)
        x[idx] = tmp_val  # 원래 값으로
        it.iternext()
    return grad


def gradient_check(f, x, *args, rtol=1e-4, atol=1e-5, **kwargs):
    """역전파의 기울기와 numerical_grad가 가까우면 True. x는 float64로 바꿔서
    잰다."""
    from mydezero.core import Variable
    x = x if isinstance(x, Variable) else Variable(np.asarray(x))
    x.data = x.data.astype(np.float64)

    num_grad = numerical_grad(f, x, *args, **kwargs)
    y = f(x, *args, **kwargs)
    y.backward()
    bp_grad = x.grad.data

    assert bp_grad.shape == num_grad.shape
    res = np.allclose(num_grad, bp_grad, atol=atol, rtol=rtol)
    if not res:
        print('gradient_check: 역전파와 수치 미분이 다르다')
        print(f'  수치 미분 {num_grad.flatten()[:10]}')
        print(f'  역전파    {bp_grad.flatten()[:10]}')
    return res


def array_equal(a, b):
    from mydezero.core import Variable
    a = a.data if isinstance(a, Variable) else a
    b = b.data if isinstance(b, Variable) else b
    return np.array_equal(np.asarray(a), np.asarray(b))


def array_allclose(a, b, rtol=1e-4, atol=1e-5):
    from mydezero.core import Variable
    a = a.data if isinstance(a, Variable) else a
    b = b.data if isinstance(b, Variable) else b
    return np.allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=rtol)
#@ end
#@ step 39


# =============================================================================
# NumPy 도우미
# =============================================================================
def reshape_sum_backward(gy, x_shape, axis, keepdims):
    """sum(x, axis)의 기울기 gy를 x와 같은 차원 수로 되돌린다 (줄어든 축을 1로
    다시 끼운다)."""
    ndim = len(x_shape)
    tupled_axis = axis
    if axis is None:
        tupled_axis = None
    elif not isinstance(axis, tuple):
        tupled_axis = (axis,)

    if not (ndim == 0 or tupled_axis is None or keepdims):
        actual_axis = [a if a >= 0 else a + ndim for a in tupled_axis]
        shape = list(gy.shape)
        for a in sorted(actual_axis):
            shape.insert(a, 1)
    else:
        shape = gy.shape

    gy = gy.reshape(shape)
    return gy
#@ end
#@ step 40


def sum_to(x, shape):
    """x를 더해서 shape으로 만든다 (broadcast_to의 반대)."""
    ndim = len(shape)
    lead = x.ndim - ndim
    lead_axis = tuple(range(lead))  # 앞에 붙은 축

    # 1이던 축
    axis = tuple([i + lead for i, sx in enumerate(shape) if sx == 1])
    y = x.sum(lead_axis + axis, keepdims=True)
    if lead > 0:
        y = y.squeeze(lead_axis)
    return y
#@ end
#@ step 48


def logsumexp(x, axis=1):
    """log(sum(exp(x), axis)), 큰 값에서도 넘치지 않게 최댓값 m을 빼고
    계산한다."""
    m = x.max(axis=axis, keepdims=True)
    y = x - m
    np.exp(y, out=y)
    s = y.sum(axis=axis, keepdims=True)
    np.log(s, out=s)
    m += s
    return m
#@ end
#@ step 55


# =============================================================================
# 합성곱의 출력 크기와 max의 역전파 모양 (55단계)
# =============================================================================
def get_conv_outsize(input_size, kernel_size, stride, pad):
    return (input_size + pad * 2 - kernel_size) // stride + 1


def get_deconv_outsize(size, k, s, p):
    return s * (size - 1) + k - 2 * p


def max_backward_shape(x, axis):
    """max(x, axis)의 출력을 x와 같은 차원 수로 되돌릴 모양 (줄어든 축은 1)."""
    if axis is None:
        axis = range(x.ndim)
    elif isinstance(axis, int):
        axis = (axis,)
    shape = [s if ax not in axis else 1 for ax, s in enumerate(x.shape)]
    return shape


def pair(x):
    """3 -> (3, 3), (3, 4) -> (3, 4)."""
    if isinstance(x, int):
        return (x, x)
    elif isinstance(x, tuple):
        assert len(x) == 2
        return x
    else:
        raise ValueError(f'pair: int 또는 길이 2인 tuple이어야 한다: {x!r}')
#@ end
