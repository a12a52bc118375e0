"""Draw the explanatory pictures of the tutorial (docs/_static/figures/*.png) with matplotlib.

    python docs/make_figures.py             # write every picture into docs/_static/figures/
    python docs/make_figures.py --out DIR   # write somewhere else
    python docs/make_figures.py chain_rule  # only these pictures

Each picture is a function ``fig_<name>(fig)`` below that draws one idea the book explains
with a figure: the chain rule's forward and backward flow (steps 05-08), backward through a
function with two inputs (13), broadcasting and sum_to (40), the shapes of matmul's backward
(41), the convolution and pooling windows (55, 57), an unrolled RNN cut by
``unchain_backward`` (59), the LSTM cell (60), the causal attention mask (64), and the
vanishing-gradient / initialisation plots of docs/tutorial/theory.md.  The numbers written in
the pictures are computed here (with NumPy or dezero_kr), not typed.

The output is deterministic: fixed seeds, the Agg renderer, and PNG files without a
timestamp or software tag, so the same matplotlib writes the same bytes.  Korean labels
use NanumGothic (``apt-get install fonts-nanum``), Latin text and maths DejaVu Sans.  The
pictures are committed; tests/test_figures.py checks that every one the docs show is made
here and that two runs give identical files.
"""
import argparse
import os
import pathlib
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
DEFAULT_OUT = HERE / '_static' / 'figures'

VAR_COLOR, FUNC_COLOR = '#ffb347', '#add8e6'  # DeZero's orange and lightblue
BACK = '#d62728'  # gradients


# -----------------------------------------------------------------------------
# drawing helpers
# -----------------------------------------------------------------------------
def _var(ax, x, y, text, w=0.9, h=0.42, fontsize=10):
    from matplotlib.patches import Ellipse
    ax.add_patch(Ellipse((x, y), w, h, facecolor=VAR_COLOR, edgecolor='black', lw=0.8))
    ax.text(x, y, text, ha='center', va='center', fontsize=fontsize)


def _func(ax, x, y, text, w=0.9, h=0.42, fontsize=10, color=FUNC_COLOR):
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle='round,pad=0.02',
                                facecolor=color, edgecolor='black', lw=0.8))
    ax.text(x, y, text, ha='center', va='center', fontsize=fontsize)


def _arrow(ax, start, end, color='black', lw=1.2, style='-|>', ls='-'):
    ax.annotate('', xy=end, xytext=start,
                arrowprops=dict(arrowstyle=style, color=color, lw=lw, linestyle=ls,
                                shrinkA=0, shrinkB=0, mutation_scale=12))


def _grid(ax, x0, y0, values, color=None, fmt='{:g}', cell=0.5, fontsize=9, edge='black'):
    """Draw a 2-D array as cells whose top-left corner is (x0, y0); ``color[i][j]`` fills."""
    from matplotlib.patches import Rectangle
    values = np.atleast_2d(values)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            face = 'white' if color is None else color[i][j]
            ax.add_patch(Rectangle((x0 + j * cell, y0 - (i + 1) * cell), cell, cell,
                                   facecolor=face, edgecolor=edge, lw=0.7))
            if fmt is not None:
                ax.text(x0 + (j + 0.5) * cell, y0 - (i + 0.5) * cell, fmt.format(values[i, j]),
                        ha='center', va='center', fontsize=fontsize)


def _canvas(fig, xlim, ylim):
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect('equal')
    ax.set_axis_off()
    return ax


# -----------------------------------------------------------------------------
# the pictures
# -----------------------------------------------------------------------------
def chain_values(x=2.0):
    """Step 05's y = (e^(x^2))^2 at x: the forward values and the backward gradients."""
    a = x ** 2
    b = np.exp(a)
    y = b ** 2
    gy = 1.0
    gb = 2 * b * gy
    ga = np.exp(a) * gb
    gx = 2 * x * ga
    return dict(x=x, a=a, b=b, y=y, gy=gy, gb=gb, ga=ga, gx=gx)


def fig_chain_rule(fig):
    """Steps 05-08: forward left to right with values, backward right to left with gradients."""
    v = chain_values()
    fig.set_size_inches(8.6, 2.7)
    ax = _canvas(fig, (-1.2, 10.5), (-1.55, 1.6))
    xs = [0, 1.6, 3.2, 4.8, 6.4, 8.0, 9.6]
    names = ['x', 'Square', 'a', 'Exp', 'b', 'Square', 'y']
    for i, (px, name) in enumerate(zip(xs, names)):
        (_var if i % 2 == 0 else _func)(ax, px, 0.45, name)
        if i:
            _arrow(ax, (xs[i - 1] + 0.47, 0.45), (px - 0.47, 0.45))
    values = [f"x = {v['x']:g}", f"a = x² = {v['a']:g}", f"b = eᵃ = {v['b']:.4g}",
              f"y = b² = {v['y']:.6g}"]
    for px, text in zip(xs[::2], values):
        ax.text(px, 1.05, text, ha='center', fontsize=9)
    ax.text(-1.1, 1.55, '순전파: 값이 왼쪽에서 오른쪽으로', fontsize=10, va='top')
    grads = [f"dy/dx = {v['gx']:.6g}", f"dy/da = {v['ga']:.6g}", f"dy/db = {v['gb']:.6g}",
             'dy/dy = 1']
    for px, text in zip(xs[::2], grads):
        ax.text(px, -0.35, text, ha='center', fontsize=9, color=BACK)
    locals_ = ['× 2x', '× eᵃ', '× 2b']
    for k, text in enumerate(locals_):
        left, right = xs[2 * k], xs[2 * k + 2]
        _arrow(ax, (right - 0.55, -0.75), (left + 0.55, -0.75), color=BACK)
        ax.text((left + right) / 2, -1.05, text, ha='center', fontsize=9, color=BACK)
    ax.text(-1.1, -1.3, '역전파: 기울기가 오른쪽에서 왼쪽으로, 칸마다 국소 미분을 곱한다',
            fontsize=10, color=BACK, va='top')


def fig_multi_input(fig):
    """Step 13: z = x² + y²; Add sends its gradient to both inputs, each Square multiplies."""
    x, y = 2.0, 3.0
    fig.set_size_inches(7.6, 3.2)
    ax = _canvas(fig, (-0.7, 8.2), (-1.45, 2.0))
    _var(ax, 0, 1.0, 'x')
    _var(ax, 0, -0.6, 'y')
    _func(ax, 1.7, 1.0, 'Square')
    _func(ax, 1.7, -0.6, 'Square')
    _var(ax, 3.4, 1.0, 'a')
    _var(ax, 3.4, -0.6, 'b')
    _func(ax, 5.2, 0.2, 'Add')
    _var(ax, 7.0, 0.2, 'z')
    for (x0, y0), (x1, y1) in [((0.45, 1.0), (1.23, 1.0)), ((0.45, -0.6), (1.23, -0.6)),
                               ((2.17, 1.0), (2.95, 1.0)), ((2.17, -0.6), (2.95, -0.6)),
                               ((3.85, 0.95), (4.73, 0.3)), ((3.85, -0.55), (4.73, 0.1)),
                               ((5.67, 0.2), (6.55, 0.2))]:
        _arrow(ax, (x0, y0), (x1, y1))
    ax.text(0, 1.35, f'x = {x:g}', ha='center', fontsize=9)
    ax.text(0, -0.25, f'y = {y:g}', ha='center', fontsize=9)
    ax.text(3.4, 1.35, f'a = {x * x:g}', ha='center', fontsize=9)
    ax.text(3.4, -0.25, f'b = {y * y:g}', ha='center', fontsize=9)
    ax.text(7.0, 0.55, f'z = {x * x + y * y:g}', ha='center', fontsize=9)
    red = dict(ha='center', fontsize=9, color=BACK)
    ax.text(7.0, -0.25, 'gz = 1', **red)
    ax.text(5.2, -0.45, 'Add.backward:\n(gz, gz)', **red)
    ax.text(3.4, 0.55, 'ga = 1', **red)
    ax.text(3.4, -1.1, 'gb = 1', **red)
    ax.text(0, 0.55, f'gx = 2x·ga = {2 * x:g}', **red)
    ax.text(0, -1.1, f'gy = 2y·gb = {2 * y:g}', **red)
    ax.text(-0.65, 1.95, '입력이 둘: backward가 입력마다 기울기를 하나씩 돌려준다', fontsize=10,
            va='top')


def fig_broadcast(fig):
    """Step 40: broadcast_to copies forward; its backward sum_to adds the copies back."""
    x = np.array([1.0, 2.0, 3.0])
    bx = np.broadcast_to(x, (2, 3))
    gy = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    gx = gy.sum(axis=0)
    fig.set_size_inches(8.4, 2.6)
    ax = _canvas(fig, (-0.2, 10.0), (-1.45, 1.5))
    light = '#ffe0b2'
    ax.text(0, 1.35, '순전파: broadcast_to(x, (2, 3))', fontsize=10, va='top')
    _grid(ax, 0, 0.6, x[None], [[VAR_COLOR] * 3])
    ax.text(0.75, -0.1, 'x (3,)', ha='center', fontsize=9)
    _arrow(ax, (1.75, 0.35), (2.45, 0.1))
    _grid(ax, 2.6, 0.6, bx, [[VAR_COLOR] * 3, [light] * 3])
    ax.text(3.35, -0.6, '(2, 3): 행을 복사', ha='center', fontsize=9)
    ax.text(5.2, 1.35, '역전파: sum_to(gy, (3,))', fontsize=10, va='top', color=BACK)
    _grid(ax, 5.2, 0.6, gy)
    ax.text(5.95, -0.6, 'gy (2, 3)', ha='center', fontsize=9)
    _arrow(ax, (6.95, 0.1), (7.75, 0.35), color=BACK)
    _grid(ax, 7.9, 0.6, gx[None], [[VAR_COLOR] * 3])
    ax.text(8.65, -0.1, 'gx (3,): 열마다 더함', ha='center', fontsize=9, color=BACK)
    ax.text(-0.1, -1.1, '복사된 원소는 모두 같은 x에서 왔으므로, 그 기울기를 모두 더해 x로 돌려준다 '
            '(Sum과 BroadcastTo는 서로의 역전파)', fontsize=9, va='center')


def fig_matmul(fig):
    """Step 41: y = xW and the shapes of gx = gy Wᵀ, gW = xᵀ gy (N, D, H) = (3, 4, 2)."""
    from matplotlib.patches import Rectangle
    N, D, H = 3, 4, 2
    c = 0.28
    fig.set_size_inches(8.4, 4.4)
    ax = _canvas(fig, (-0.2, 10.0), (-4.9, 0.35))

    def mat(x0, top, rows, cols, label, face):
        for i in range(rows):
            for j in range(cols):
                ax.add_patch(Rectangle((x0 + j * c, top - (i + 1) * c), c, c, facecolor=face,
                                       edgecolor='black', lw=0.6))
        ax.text(x0 + cols * c / 2, top - rows * c - 0.22, label, ha='center', va='center',
                fontsize=9)
        return x0 + cols * c

    colors = {'x': VAR_COLOR, 'W': '#c5e1a5', 'y': '#fff59d', 'g': '#ef9a9a'}
    rows = [
        ('순전파', [('y', N, H, f'y ({N}, {H})', 'y'), '=', ('x', N, D, f'x ({N}, {D})', 'x'),
                    ('W', D, H, f'W ({D}, {H})', 'W')]),
        ('x의 기울기', [('gx', N, D, f'gx ({N}, {D})', 'g'), '=',
                       ('gy', N, H, f'gy ({N}, {H})', 'g'), ('Wt', H, D, f'Wᵀ ({H}, {D})', 'W')]),
        ('W의 기울기', [('gW', D, H, f'gW ({D}, {H})', 'g'), '=',
                       ('xt', D, N, f'xᵀ ({D}, {N})', 'x'), ('gy', N, H, f'gy ({N}, {H})', 'g')]),
    ]
    for row, (title, parts) in enumerate(rows):
        top = -1.75 * row
        ax.text(0.0, top - 0.5, title, fontsize=10, va='center', color=BACK if row else 'black')
        px = 1.6
        for part in parts:
            if part == '=':
                ax.text(px + 0.05, top - 0.5, '=', fontsize=12, va='center')
                px += 0.45
                continue
            _, r, cc, label, key = part
            px = mat(px, top, r, cc, label, colors[key]) + 0.3
    notes = ['모양으로 검산: 기울기는 자기 변수와 같은 모양이고,',
             '곱하는 두 행렬의 안쪽 길이가 같아야 한다.',
             f'gx = gy Wᵀ: ({N}, {H})({H}, {D}) = ({N}, {D})',
             f'gW = xᵀ gy: ({D}, {N})({N}, {H}) = ({D}, {H})',
             f'gW에서는 안쪽 길이 N = {N}이 사라진다:',
             f'배치의 샘플 {N}개의 몫을 더한 것.']
    for i, note in enumerate(notes):
        ax.text(5.6, -0.4 - 0.42 * i - (0.2 if i >= 2 else 0) - (0.2 if i >= 4 else 0), note,
                fontsize=9, color=BACK if i in (2, 3) else 'black')


def conv_outsize(size, kernel, stride, pad):
    return (size + 2 * pad - kernel) // stride + 1


def fig_conv_window(fig):
    """Steps 55-57: a 3x3 window on a 5x5 input padded by 1, stride 2 -> 3x3 output."""
    from matplotlib.patches import Rectangle
    H, K, S, P = 5, 3, 2, 1
    OH = conv_outsize(H, K, S, P)
    size = H + 2 * P
    fig.set_size_inches(7.6, 3.3)
    ax = _canvas(fig, (-0.3, 8.6), (-4.1, 0.6))
    cell = 0.5
    colors = [['#eeeeee' if (i < P or j < P or i >= P + H or j >= P + H) else 'white'
               for j in range(size)] for i in range(size)]
    _grid(ax, 0, 0, np.zeros((size, size)), colors, fmt=None, cell=cell)
    windows = [((0, 0), '#d62728'), ((0, 1), '#1f77b4'), ((2, 2), '#2ca02c')]
    for (oi, oj), color in windows:
        ax.add_patch(Rectangle((oj * S * cell + 0.03, -(oi * S + K) * cell + 0.03),
                               K * cell - 0.06, K * cell - 0.06, fill=False, edgecolor=color,
                               lw=2.2))
    ax.text(size * cell / 2, 0.3, f'입력 {H}x{H}, 패딩 P = {P} (회색)', ha='center', fontsize=10)
    ox = size * cell + 1.6
    ocolors = [['white'] * OH for _ in range(OH)]
    for (oi, oj), color in windows:
        ocolors[oi][oj] = color
    _grid(ax, ox, -0.5, np.zeros((OH, OH)), ocolors, fmt=None, cell=cell)
    ax.text(ox + OH * cell / 2, 0.3, f'출력 {OH}x{OH}', ha='center', fontsize=10)
    _arrow(ax, (size * cell + 0.2, -1.2), (ox - 0.2, -1.2))
    ax.text((size * cell + ox) / 2, -1.0, f'K = {K}, S = {S}', ha='center', fontsize=9)
    ax.text(ox - 0.3, -2.6, f'OH = (H + 2P − K) // S + 1\n   = ({H} + {2 * P} − {K}) // {S} + 1 '
            f'= {OH}', fontsize=10, va='top')
    ax.text(0, -3.85, '창(빨강, 파랑, 초록)마다 출력 한 칸. 스트라이드 2라 창이 두 칸씩 움직이고, '
            '이웃한 창은 한 열을 함께 본다.', fontsize=9)


POOL_X = np.array([[2.0, 7.0, 1.0, 0.0],
                   [5.0, 3.0, 4.0, 6.0],
                   [8.0, 1.0, 0.0, 2.0],
                   [3.0, 9.0, 5.0, 1.0]])


def pooled(x, k=2):
    """2x2 max pooling with stride 2 and the argmax mask (NumPy, for the picture)."""
    n = x.shape[0] // k
    y = x.reshape(n, k, n, k).max(axis=(1, 3))
    mask = x == np.kron(y, np.ones((k, k)))
    return y, mask


def fig_pooling_window(fig):
    """Step 57: 2x2 max pooling, stride 2; backward sends each gradient to its window's max."""
    y, mask = pooled(POOL_X)
    gy = np.array([[1.0, 2.0], [3.0, 4.0]])
    gx = np.kron(gy, np.ones((2, 2))) * mask
    fig.set_size_inches(8.4, 2.9)
    ax = _canvas(fig, (-0.2, 10.4), (-2.6, 0.75))
    tints = ['#ffcdd2', '#bbdefb', '#c8e6c9', '#fff9c4']
    colors = [[tints[(i // 2) * 2 + j // 2] for j in range(4)] for i in range(4)]
    _grid(ax, 0, 0, POOL_X, colors)
    for i, j in zip(*np.nonzero(mask)):
        ax.text((j + 0.5) * 0.5, -(i + 0.5) * 0.5, f'{POOL_X[i, j]:g}', ha='center', va='center',
                fontsize=9, fontweight='bold', bbox=dict(boxstyle='circle,pad=0.15', fc='none',
                                                         ec='black', lw=0.8))
    ax.text(1.0, 0.35, 'x (4, 4)', ha='center', fontsize=9)
    _arrow(ax, (2.15, -1.0), (2.85, -1.0))
    ax.text(2.5, -0.75, 'max', ha='center', fontsize=9)
    _grid(ax, 3.0, -0.5, y, [[tints[0], tints[1]], [tints[2], tints[3]]])
    ax.text(3.5, 0.35, 'y (2, 2)', ha='center', fontsize=9)
    _grid(ax, 5.0, -0.5, gy, [[tints[0], tints[1]], [tints[2], tints[3]]])
    ax.text(5.5, 0.35, '역전파: gy', ha='center', fontsize=9, color=BACK)
    _arrow(ax, (6.15, -1.0), (6.85, -1.0), color=BACK)
    _grid(ax, 7.0, 0, gx, colors)
    ax.text(8.0, 0.35, 'gx: 창의 최댓값 자리만 받는다', ha='center', fontsize=9, color=BACK)
    ax.text(0, -2.35, '2x2 창, 스트라이드 2: 창이 겹치지 않는다. 최댓값이 아닌 칸의 기울기는 0.',
            fontsize=9)


def fig_rnn_unrolled(fig):
    """Step 59: six time steps unrolled, cut after three by unchain_backward (Truncated BPTT)."""
    T, cut = 6, 3
    fig.set_size_inches(8.6, 3.1)
    ax = _canvas(fig, (-1.2, 11.4), (-2.15, 2.15))
    xs = [i * 1.8 for i in range(T)]
    for t, px in enumerate(xs, start=1):
        _func(ax, px, 0.2, 'RNN', w=1.0, h=0.5)
        _var(ax, px, -1.1, f'x{t}', w=0.7, h=0.36, fontsize=9)
        _var(ax, px, 1.5, f'loss{t}', w=1.0, h=0.36, fontsize=9)
        _arrow(ax, (px, -0.9), (px, -0.07))
        _arrow(ax, (px, 0.47), (px, 1.3))
        if t > 1:
            _arrow(ax, (xs[t - 2] + 0.52, 0.28), (px - 0.52, 0.28))
            label_x = (xs[t - 2] + px) / 2 + (0.25 if t == cut + 1 else 0.0)  # off the cut
            ax.text(label_x, 0.4, f'h{t - 1}', ha='center', fontsize=8)
        if t != cut + 1 and t > 1:
            _arrow(ax, (px - 0.52, 0.05), (xs[t - 2] + 0.52, 0.05), color=BACK)
    xcut = (xs[cut - 1] + xs[cut]) / 2
    ax.plot([xcut, xcut], [-1.55, 1.85], ls='--', color='black', lw=1.2)
    ax.text(xcut, 1.95, 'loss.unchain_backward()', ha='center', fontsize=9)
    ax.text(-1.15, -1.9, f'{cut}단계마다(59단계는 30단계마다) 역전파하고 연결을 끊는다: h{cut}의 값(검정)은 '
            '다음 구간으로 이어지지만, 기울기(빨강)는 끊은 곳을 넘지 않는다.', fontsize=8.5)


def fig_lstm_cell(fig):
    """Step 60: the LSTM cell; the path c_(t-1) -> c_t only multiplies by f (and adds)."""
    from matplotlib.patches import Circle
    fig.set_size_inches(7.8, 3.9)
    ax = _canvas(fig, (-1.4, 8.6), (-2.55, 2.3))

    def op(x, y, text):
        ax.add_patch(Circle((x, y), 0.22, facecolor='white', edgecolor='black', lw=0.9))
        ax.text(x, y, text, ha='center', va='center', fontsize=11)

    # the cell path on top
    _var(ax, -0.7, 1.6, 'c(t-1)', w=1.1)
    op(1.5, 1.6, '×')
    op(3.8, 1.6, '+')
    _var(ax, 7.6, 1.6, 'c(t)', w=0.9)
    _arrow(ax, (-0.15, 1.6), (1.28, 1.6), color=BACK, lw=2.0)
    _arrow(ax, (1.72, 1.6), (3.58, 1.6), color=BACK, lw=2.0)
    _arrow(ax, (4.02, 1.6), (7.15, 1.6), color=BACK, lw=2.0)
    ax.text(2.6, 1.85, '∂c(t)/∂c(t-1) = f', ha='center', fontsize=9, color=BACK)
    # gates
    gates = [('f', 'σ', 1.5), ('i', 'σ', 3.0), ('u', 'tanh', 4.4), ('o', 'σ', 5.8)]
    for name, act, gx in gates:
        _func(ax, gx, -0.6, f'{name} = {act}', w=1.1, h=0.42, fontsize=9)
    op(3.7, 0.5, '×')
    _arrow(ax, (1.5, -0.38), (1.5, 1.38))
    _arrow(ax, (3.0, -0.38), (3.58, 0.38))
    _arrow(ax, (4.4, -0.38), (3.84, 0.33))
    _arrow(ax, (3.7, 0.72), (3.8, 1.38))
    # output
    _func(ax, 6.3, 1.0, 'tanh', w=0.8, h=0.36, fontsize=9)
    op(6.9, 0.2, '×')
    _arrow(ax, (6.3, 1.6), (6.3, 1.18))
    _arrow(ax, (6.45, 0.82), (6.78, 0.38))
    _arrow(ax, (5.8, -0.38), (6.7, 0.09))
    _var(ax, 7.6, -0.6, 'h(t)', w=0.9)
    _arrow(ax, (7.05, 0.04), (7.45, -0.4))
    # inputs
    _var(ax, -0.7, -1.85, 'h(t-1)', w=1.1)
    _var(ax, 1.0, -1.85, 'x(t)', w=0.8)
    ax.plot([-0.7, 5.8], [-1.45, -1.45], color='black', lw=1.0)
    ax.plot([-0.7, -0.7], [-1.64, -1.45], color='black', lw=1.0)
    ax.plot([1.0, 1.0], [-1.64, -1.45], color='black', lw=1.0)
    for _, _, gx in gates:
        _arrow(ax, (gx, -1.45), (gx, -0.82))
    ax.text(2.2, -2.35, '게이트는 x(t), h(t-1)로만 정해진다. c의 경로(빨강)에는 W도 tanh′도 없이 f만 '
            '곱해진다.', fontsize=9)


def causal_weights(T=6, seed=0):
    """Softmax attention weights of random scores with the causal mask (row t sees s <= t)."""
    scores = np.random.default_rng(seed).standard_normal((T, T))
    masked = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    w = np.exp(masked - masked.max(axis=1, keepdims=True))
    return w / w.sum(axis=1, keepdims=True)


def fig_causal_mask(fig):
    """Step 64: causal self-attention; position t attends to keys s <= t only."""
    T = 6
    w = causal_weights(T)
    fig.set_size_inches(6.8, 3.6)
    ax = _canvas(fig, (-1.6, 8.8), (-4.0, 1.2))
    cell = 0.55
    cmap = __import__('matplotlib').colormaps['Blues']
    colors = [[cmap(0.15 + 0.8 * w[i, j]) if j <= i else '#dddddd' for j in range(T)]
              for i in range(T)]
    _grid(ax, 0, 0, w, colors, fmt=None, cell=cell)
    for i in range(T):
        for j in range(T):
            text = f'{w[i, j]:.2f}' if j <= i else '0'
            ax.text((j + 0.5) * cell, -(i + 0.5) * cell, text, ha='center', va='center',
                    fontsize=7, color='white' if w[i, j] > 0.6 else 'black')
        ax.text(-0.15, -(i + 0.5) * cell, f'{i}', ha='right', va='center', fontsize=8)
        ax.text((i + 0.5) * cell, 0.12, f'{i}', ha='center', va='bottom', fontsize=8)
    ax.text(T * cell / 2, 0.6, '키 위치 s', ha='center', fontsize=9)
    ax.text(-1.0, -T * cell / 2, '쿼리\n위치 t', ha='center', va='center', fontsize=9)
    ax.text(4.0, -0.3, '점수 행렬의 s > t 칸(회색)을 −∞로 바꾼 뒤\nsoftmax: 그 칸의 가중치는 정확히 0,\n'
            '각 행의 합은 1.', fontsize=9, va='top')
    ax.text(4.0, -1.8, '그래서 위치 t의 출력은 t 이후의 글자를\n보지 못한다: 다음 글자를 맞히는 학습이\n'
            '답을 미리 보지 않는다.', fontsize=9, va='top')


def vanishing_curves(depth=10):
    """sigmoid'(z) on a grid, and |dh_k/dh_0| = (w/4)^k for w = 1, 4, 6 (theory.md section 1)."""
    z = np.linspace(-6, 6, 601)
    s = 1 / (1 + np.exp(-z))
    k = np.arange(depth + 1)
    return z, s * (1 - s), k, {w: (w * 0.25) ** k for w in (1.0, 4.0, 6.0)}


def fig_theory_vanishing(fig):
    """theory.md 1: sigmoid' peaks at 1/4; ten layers multiply it: (w/4)^k."""
    z, slope, k, products = vanishing_curves()
    fig.set_size_inches(8.0, 3.0)
    left, right = fig.subplots(1, 2)
    left.plot(z, slope, color='#1f77b4')
    left.axhline(0.25, color='gray', ls=':', lw=1)
    left.set_title("σ′(z) = σ(z)(1 − σ(z)), 최대 1/4", fontsize=10)
    left.set_xlabel('z')
    for w, values in products.items():
        right.semilogy(k, values, marker='o', ms=3, label=f'W = {w:g}: (W/4)^k')
    right.set_title('층 k개를 지난 기울기의 배율 (z = 0)', fontsize=10)
    right.set_xlabel('층 수 k')
    right.legend(fontsize=8)
    fig.set_layout_engine('constrained')


def init_spread(depth=10, n=256, batch=1000):
    """Std of the activations after each of ``depth`` ReLU layers (width n) for three weight
    scales; the same draws as docs/tutorial/answers/theory_check.py (seed 0 per scale)."""
    stds = {}
    for label, scale in (('0.01', 0.01), ('Xavier sqrt(1/n)', np.sqrt(1 / n)),
                         ('He sqrt(2/n)', np.sqrt(2 / n))):
        rng = np.random.default_rng(0)
        h = rng.standard_normal((batch, n))
        row = [h.std()]
        for _ in range(depth):
            W = rng.standard_normal((n, n)) * scale
            h = np.maximum(h @ W, 0)
            row.append(h.std())
        stds[label] = np.array(row)
    return stds


def fig_theory_init(fig):
    """theory.md 2: activation spread through ten ReLU layers for three initial scales."""
    stds = init_spread()
    fig.set_size_inches(6.4, 3.2)
    ax = fig.subplots()
    for label, row in stds.items():
        ax.semilogy(np.arange(len(row)), row, marker='o', ms=3, label=label)
    ax.set_xlabel('층')
    ax.set_ylabel('활성값의 표준편차')
    ax.set_title('ReLU 10층(폭 256)을 지나는 신호의 크기', fontsize=10)
    ax.legend(fontsize=8)
    fig.set_layout_engine('constrained')


FIGURES = {name[4:]: f for name, f in sorted(globals().items()) if name.startswith('fig_')}


def draw(name, path):
    """Draw picture ``name`` into ``path`` (PNG, no timestamp, 100 dpi)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    with matplotlib.rc_context({'font.family': ['DejaVu Sans', 'NanumGothic'],
                                'svg.hashsalt': 'dezero_kr', 'axes.unicode_minus': True}):
        fig = Figure()
        FigureCanvasAgg(fig)
        FIGURES[name](fig)
        fig.savefig(path, dpi=100, metadata={'Software': None})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('names', nargs='*', help=f'pictures (default: all of {sorted(FIGURES)})')
    parser.add_argument('--out', default=str(DEFAULT_OUT), help='output folder')
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(FIGURES))
    if unknown:
        parser.error(f'unknown pictures {unknown}; known: {sorted(FIGURES)}')
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:  # write all, then move into place
        for name in args.names or sorted(FIGURES):
            draw(name, os.path.join(tmp, f'{name}.png'))
        for name in sorted(os.listdir(tmp)):
            os.replace(os.path.join(tmp, name), out / name)
            print(out / name)
    return 0


if __name__ == '__main__':
    sys.exit(main())
