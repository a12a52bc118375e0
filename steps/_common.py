"""23단계 이후의 스크립트가 함께 쓰는 작은 도우미 (단계가 아니라 부품이다).
01~22단계는 이 파일을 쓰지 않는다(그 단계들은 파일 하나로 완결된다).

여기 있는 것은 "배울 내용"이 아니라 출력을 정리하고 결과를 확인하는 잔일이다. 각 단계는 이 파일 없이도
위에서 아래로 읽히도록, 여기서는 아래의 열 가지만 한다. 단계는 다른 단계를 import하지 않는다: 여러 단계가
함께 쓰는 것은 여기에 둔다.

* FAST: 테스트(tests/test_steps.py)는 DEZERO_KR_FAST=1로 단계를 실행한다. 학습하는 단계는 이
  값을 보고 반복 횟수를 줄인다. 직접 실행할 때는(변수가 없으면) 책과 같은 설정으로 돈다.
* graph_size(y): y를 만든 계산 그래프의 함수/변수 개수. 재귀 없이 목록 하나로 거슬러 올라간다.
* ljust(text, width): 한글처럼 화면에서 두 칸을 차지하는 글자를 두 칸으로 세어 왼쪽 정렬한다
  (표의 머리글을 맞추려고. 파이썬의 str.ljust는 글자 수로 센다).
* save_graph(y, 파일 이름): 그래프를 DOT 텍스트와 그림으로 현재 폴더에 쓴다. 그림을 그릴
  프로그램(Graphviz의 dot 또는 graphviz-pure)이 없어도 멈추지 않는다. 어떤 파일을 썼는지는
  표준 오류(stderr)로 알린다: 표준 출력은 어느 컴퓨터에서나 같아야 정답 파일과 비교할 수 있다.
* save_plot(그리기 함수, ..., to_file=...): dezero_kr.plot의 함수(학습 곡선, 결정 경계 ...)로 그림을
  현재 폴더에 쓴다. matplotlib이 없으면 알리고 넘어간다(설치: pip install matplotlib).
* save_lines(xs, {이름: ys, ...}, to_file): 같은 x축 위의 곡선 몇 개를 matplotlib으로 그린다.
* save_dot(dot_text, to_file): 손으로(또는 코드로) 적은 DOT 텍스트를 그림으로 쓴다. 패키지의
  Variable이 없는 그래프를 그릴 때 쓴다(렌더러를 찾는 일만 dezero_kr.graph에 맡긴다).
* gradient_check(f, x): 학습자의 함수 f(mydezero)의 역전파 기울기가 기준 패키지 dezero_kr의 중앙 차분과
  맞는지(True/False). dezero_kr.utils.gradient_check는 dezero_kr의 Variable만 받으므로 이것을 쓴다.
* check_against_package(mine, package, *arrays): 학습자의 함수(mydezero)를 기준 패키지의 같은 함수와
  순전파 값, 무작위 gy로 역전파한 기울기, 중앙 차분으로 비교한다(37단계에서 만들고 37~41단계가 쓴다).
  report(이름, mine, package, *arrays)와 report_header(제목)는 그 결과를 한 줄씩 알린다.
* save_figure(draw, to_file, ncols=1): matplotlib 그림 하나를 작은 PNG로 쓴다(한글 글꼴 포함). 칸(axes)이
  하나면 draw(ax), ncols개면 draw([ax, ...])로 그린다 (save_lines로 안 되는 그림: 산점도 + 맞춘 곡선 ...).

이 파일을 import하면 작은 모델을 위한 BLAS 스레드 정책(스레드 1개, dezero_kr.blas)이 적용된다.
작은 행렬에서는 스레드가 여럿이면 오히려 느리고, 바쁜 컴퓨터에서는 몇 배 느려진다.
DEZERO_KR_BLAS_THREADS=0이면 BLAS 기본값을 그대로 둔다. 저장한 파일의 경로는 예제와 같은 규칙
(dezero_kr.paths.display_path: 현재 폴더 안이면 상대 경로)으로 보여 준다.
"""
import os
import subprocess
import sys
import unicodedata

import numpy as np

from dezero_kr.blas import small_model_policy
from dezero_kr.graph import GraphRenderError, find_renderer, plot_dot_graph
from dezero_kr.paths import display_path

FAST = os.environ.get('DEZERO_KR_FAST') == '1'

small_model_policy()  # 학습하는 단계마다 한 줄을 쓰는 대신 여기서 한 번


def graph_size(*outputs):
    """outputs를 만든 그래프의 (함수 개수, 변수 개수). 잎 변수(입력)도 센다."""
    funcs, variables = set(), set()
    stack = list(outputs)
    while stack:
        v = stack.pop()
        if id(v) in variables:
            continue
        variables.add(id(v))
        f = v.creator
        if f is not None and id(f) not in funcs:
            funcs.add(id(f))
            stack.extend(f.inputs)
    return len(funcs), len(variables)


def ljust(text, width):
    """text 뒤에 공백을 붙여 화면 너비 width로 맞춘다 (한글 한 글자 = 두 칸)."""
    shown = sum(2 if unicodedata.east_asian_width(ch) in 'WF' else 1 for ch in text)
    return text + ' ' * max(width - shown, 0)


def save_graph(output, to_file, **options):
    """plot_dot_graph로 to_file(그림)과 같은 이름의 .dot을 쓴다. 그리기 실패는 알리고 넘어간다.

    output이 학습자의 패키지 mydezero의 Variable이면 DOT 텍스트는 mydezero.utils.get_dot_graph
    (26단계에서 직접 만든 것)가 쓰고, 그림은 save_dot이 그린다. to_file이 .dot이면 텍스트만 쓴다.
    """
    if type(output).__module__.startswith('mydezero.'):
        from mydezero.utils import get_dot_graph  # 학습자의 것 (26단계부터 있다)
        text = get_dot_graph(output, verbose=options.get('verbose', True))
        if to_file.endswith('.dot'):
            with open(to_file, 'w', encoding='utf-8') as f:
                f.write(text)
            print(f'[그림 저장] {display_path(to_file)}', file=sys.stderr)
        else:
            save_dot(text, to_file)
        return
    try:
        path = plot_dot_graph(output, to_file=to_file, **options)
        print(f'[그림 저장] {display_path(path)}', file=sys.stderr)
    except GraphRenderError as e:  # 렌더러가 없거나 실패: .dot 텍스트는 이미 써 두었다
        print(f'[그림 생략] {e}', file=sys.stderr)


def save_dot(dot_text, to_file):
    """DOT 텍스트를 to_file(.png/.svg)과 같은 이름의 .dot으로 쓴다. 렌더러가 없거나 실패하면 알리고 넘어간다."""
    dot_file = to_file.rsplit('.', 1)[0] + '.dot'
    with open(dot_file, 'w', encoding='utf-8') as f:
        f.write(dot_text)
    exe = find_renderer()
    if exe is None:
        print('[그림 생략] dot / graphviz-pure가 없습니다: pip install graphviz-pure',
              file=sys.stderr)
        return
    fmt = to_file.rsplit('.', 1)[1]
    proc = subprocess.run([exe, f'-T{fmt}', dot_file], capture_output=True, timeout=60)
    if proc.returncode != 0:
        print(f'[그림 생략] {exe} 실패: {proc.stderr.decode(errors="replace")[:300]}',
              file=sys.stderr)
        return
    with open(to_file, 'wb') as f:  # 다 그린 뒤에 한 번에 쓴다: 실패하면 반쪽 파일이 남지 않는다
        f.write(proc.stdout)
    print(f'[그림 저장] {to_file}', file=sys.stderr)


def save_plot(plot_function, *args, to_file, **kwargs):
    """dezero_kr.plot.<plot_function>(*args, to_file=to_file, **kwargs).
    matplotlib이 없으면 건너뛴다."""
    try:
        path = plot_function(*args, to_file=to_file, **kwargs)
        print(f'[그림 저장] {display_path(path)}', file=sys.stderr)
    except ImportError as e:
        print(f'[그림 생략] {e}', file=sys.stderr)


def save_lines(xs, curves, to_file):
    """curves = {'이름': ys, ...}를 x축 xs 위에 겹쳐 그려 to_file로. matplotlib이 없으면 건너뛴다."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        print('[그림 생략] matplotlib이 없습니다: pip install matplotlib', file=sys.stderr)
        return
    fig = Figure(figsize=(7, 4))
    FigureCanvasAgg(fig)  # 창을 띄우지 않고 파일로만 그린다
    ax = fig.add_subplot(1, 1, 1)
    for label, ys in curves.items():
        ax.plot(xs, ys, label=label)
    ax.set_xlabel('x')
    ax.legend(loc='lower right')
    fig.savefig(to_file)
    print(f'[그림 저장] {display_path(to_file)}', file=sys.stderr)


def save_figure(draw, to_file, ncols=1):
    """draw(ax) (ncols > 1이면 draw([ax, ...]))로 그린 그림을 to_file에 쓴다. matplotlib이 없으면 건너뛴다.

    라틴 문자와 수식은 DejaVu Sans로, 그 글꼴에 없는 한글은 나눔고딕으로 그린다(글자마다 대체).
    나눔고딕을 앞에 두면 로그 눈금의 빼기 기호(U+2212)가 네모로 깨진다.
    """
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        print('[그림 생략] matplotlib이 없습니다: pip install matplotlib', file=sys.stderr)
        return
    with matplotlib.rc_context({'font.family': ['DejaVu Sans', 'NanumGothic']}):
        fig = Figure(figsize=(max(6.0, 3.2 * ncols + 0.4), 4), layout='constrained')
        FigureCanvasAgg(fig)  # 창을 띄우지 않고 파일로만 그린다
        axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
        draw(axes[0] if ncols == 1 else axes)
        fig.savefig(to_file, dpi=100)
    print(f'[그림 저장] {display_path(to_file)}', file=sys.stderr)


def gradient_check(f, x, *args, rtol=1e-4, atol=1e-5, **kwargs):
    """학습자의 f(mydezero 함수)를 x에서 검사한다: 역전파 기울기 == 중앙 차분 (기준: dezero_kr).

    L = sum(f(x, *args, **kwargs))의 x에 대한 기울기를 float64 사본에서 두 가지로 구한다:
    dezero_kr.autograd.numerical.central_differences(eps=1e-4, 기준 패키지의 중앙 차분)와 mydezero의
    y.backward(). 모든 원소가 |num - bp| <= atol + rtol |bp|이면 True, 아니면 가장 큰 차이를 알리고
    False. x(ndarray 또는 Variable)는 바꾸지 않는다.
    """
    from dezero_kr.autograd.numerical import central_differences
    from mydezero import Variable  # 학습자의 Variable (30단계부터 core.py의 것)

    work = np.array(getattr(x, 'data', x), dtype=np.float64)

    def total():
        return np.float64(np.sum(f(Variable(work), *args, **kwargs).data))

    num = central_differences(total, work, 1e-4)
    x_var = Variable(work.copy())
    f(x_var, *args, **kwargs).backward()
    bp = x_var.grad.data
    ok = bool(np.allclose(num, bp, rtol=rtol, atol=atol))
    if not ok:
        print(f'gradient_check: 가장 큰 차이 {np.abs(num - bp).max():.3e}')
    return ok


def central_difference(f, arrays, i, gy, h=1e-6):
    """d/d(arrays[i]) sum(f(*arrays) * gy) 를 중앙 차분으로 (float64, 원소 하나씩 흔든다)."""
    from mydezero import Variable, no_grad  # 학습자의 것 (30단계부터 core.py)

    x = arrays[i]
    grad = np.zeros_like(x)
    with no_grad():
        for idx in np.ndindex(x.shape):
            old = x[idx]
            x[idx] = old + h
            plus = np.sum(f(*[Variable(a) for a in arrays]).data * gy)
            x[idx] = old - h
            minus = np.sum(f(*[Variable(a) for a in arrays]).data * gy)
            x[idx] = old  # 흔든 원소를 꼭 되돌린다
            grad[idx] = (plus - minus) / (2 * h)
    return grad


def check_against_package(mine, package, *arrays, seed=0):
    """mydezero로 만든 함수 mine을 기준 패키지 dezero_kr의 package와 비교한다.

    틀리면 AssertionError를 낸다.

    mine, package: Variable들(각각 mydezero, dezero_kr의 것)을 받아
    Variable 하나를 돌려주는 함수.
    arrays: 입력 ndarray들. 순전파 값, 무작위 gy로 역전파한 기울기, 중앙 차분을
    비교하고 출력의 모양을 돌려준다.
    """
    import dezero_kr
    from mydezero import Variable  # 학습자의 것 (30단계부터 core.py)

    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    runs = []
    for f, variable in ((mine, Variable), (package, dezero_kr.Variable)):
        xs = [variable(a.copy()) for a in arrays]
        runs.append((f(*xs), xs))
    (y_mine, xs_mine), (y_package, xs_package) = runs
    np.testing.assert_array_equal(y_mine.data, y_package.data)
    gy = np.asarray(np.random.default_rng(seed).standard_normal(y_mine.shape))
    for y, _ in runs:
        y.grad = type(y)(gy.copy())  # backward는 y.grad를 시작값으로 쓴다
        y.backward()
    for i, (a, b) in enumerate(zip(xs_mine, xs_package)):
        np.testing.assert_allclose(a.grad.data, b.grad.data, rtol=1e-12,
                                   atol=1e-12)
        numeric = central_difference(mine, arrays, i, gy)
        np.testing.assert_allclose(a.grad.data, numeric, rtol=1e-6, atol=1e-8)
    return y_mine.shape


def report_header(title):
    print(f'\n{title} (check_against_package)')
    print('  같다 = 값과 기울기가 dezero_kr와 같고, 기울기가 중앙 차분과 맞는다')


def report(name, mine, package, *arrays):
    """check_against_package를 부르고 한 줄로 알린다 ("같다" = 세 가지 확인을 모두 통과)."""
    shape = check_against_package(mine, package, *arrays)
    shapes = ', '.join(str(np.shape(a)) for a in arrays)
    print(f'  {name}: {shapes} -> {shape} 같다')
