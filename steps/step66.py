"""66단계: Define-and-Run -- 학습 스텝을 한 번 기록하고, 그 다음부터는 기록한 코드를 실행한다

지금까지의 dezero_kr는 Define-by-Run이다. 계산을 실행하는 순간 그래프(Variable과 Function 객체)를
만들고, backward는 그 그래프를 힙에서 세대순으로 꺼내며 걷는다. 편하지만, 스텝마다 같은 그래프를
새로 만들고 새로 걷는 비용이 든다. 노드가 작을수록(작은 모델) 그 비용의 비중이 크다.

Define-and-Run(책의 칼럼, Chainer의 static_graph)은 반대로 한다. 스텝을 한 번 실행하면서 무엇을
했는지 기록하고(trace), 다음 호출부터는 기록에서 만든 일직선 파이썬 코드를 실행한다(replay).

    @dezero_kr.static_graph
    def train_step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads(); loss.backward(); optimizer.update()
        return loss

    train_step(x, t)      # 첫 호출: 평소대로(eager) 실행하며 기록한다
    train_step.code       # 기록에서 만든 코드: 한 줄에 연산 하나, 매개변수 경로 이름(l0_W ...)
    train_step.stats      # traces(기록 횟수), replays(재실행), eager(그냥 실행), evictions

재실행은 각 Function의 forward/backward 메서드를 같은 순서로 부르므로 손실, 매개변수, 옵티마이저
상태가 eager와 비트 단위까지 같다. 기록이 틀려지는 경우(값에 따라 갈라지는 파이썬 코드, 연산 밖의
NumPy로 만든 배열, 연산 밖의 난수)는 기록하면서 찾아내고, 그 줄을 밝힌 경고와 함께 eager로 실행한다.

출력에서 볼 것
* eager와 static의 손실이 스텝마다 같다(equal True). 드롭아웃 마스크도 매번 새로 뽑힌다.
* stats: traces 2, 나머지는 재실행. 첫 호출이 기록하면서 가중치도 만들었으므로(입력 크기를
  첫 호출에서 정하는 지연 초기화), 그 난수가 다른 난수를 가리지 않았는지 둘째 호출에서 한 번 더
  기록해 확인한다. 가중치가 이미 있는 모델이면 traces 1.
* 생성된 코드: 연산마다 그 연산의 forward/backward를 부르는 한 줄(Linear.forward,
  Tanh.backward_arrays: backward와 같은 식을 Variable 없이 배열로 받고 돌려주는 입구).
  규칙을 NumPy 식으로 다시 쓰지 않으므로 규칙은 연산 클래스 한 곳에만 있다. 역전파는 엔진이 실행한
  순서 그대로, 기울기 저장 뒤 마지막 줄은 Optimizer_update(sgd).
* if loss.data > 1 처럼 값으로 갈라지는 스텝은 경고(이 파일의 줄 번호)와 함께 eager로 돈다.
* 걸린 시간(eager와 static)은 기계마다 다르므로 표준 오류(stderr)로만 찍는다.
"""
import os
import sys
import time
import warnings

import numpy as np

import dezero_kr
import dezero_kr.functions as F
from dezero_kr.models import MLP
from dezero_kr.optimizers import SGD
from dezero_kr.define_and_run import StaticGraphWarning


def make_model():
    """같은 시드에서 같은 모델과 옵티마이저 (입력 크기는 첫 호출에서 정해진다)."""
    np.random.seed(0)
    model = MLP((8, 3), activation=F.tanh)
    return model, SGD(0.1).setup(model)


def make_step(model, optimizer, dropout=0.3):
    def train_step(x, t):
        h = F.dropout(model(x), dropout)  # 난수를 쓰는 연산: 재실행 때마다 새로 뽑는다
        loss = F.softmax_cross_entropy(h, t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        return loss
    return train_step


def batches(n, size=4):
    rng = np.random.RandomState(1)
    return [(rng.randn(size, 2).astype(np.float32), rng.randint(0, 3, size))
            for _ in range(n)]


def compare(n_steps=5):
    """같은 데이터, 같은 시드로 eager와 static을 나란히: 손실과 매개변수가 비트 단위로 같은가."""
    eager_model, eager_opt = make_model()
    static_model, static_opt = make_model()
    eager_step = make_step(eager_model, eager_opt)
    static_step = dezero_kr.static_graph(make_step(static_model, static_opt))
    data = batches(n_steps)
    np.random.seed(42)
    eager_losses = [float(eager_step(x, t).data) for x, t in data]
    np.random.seed(42)
    static_losses = [float(static_step(x, t).data) for x, t in data]
    for i, (a, b) in enumerate(zip(eager_losses, static_losses), start=1):
        print(f'step {i}: eager {a:.10f}  static {b:.10f}  equal {a == b}')
    pairs = zip(eager_model.params(), static_model.params())
    same = all(np.array_equal(p.data, q.data) for p, q in pairs)
    print(f'매개변수가 비트 단위로 같다 (parameters equal bit for bit): {same}')
    print(f'stats: {static_step.stats}')
    return static_step


def show_code(step):
    print('\n생성된 코드 (train_step.code):')
    print(step.code)


def value_dependent():
    """값에 따라 갈라지는 스텝: 기록을 믿을 수 없으니 경고 한 번, 그 뒤로는 eager."""
    model, optimizer = make_model()

    @dezero_kr.static_graph
    def train_step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        if loss.data > 1:  # 값에 따라 갈라진다: 재실행하면 기록한 쪽 가지만 돌 것이다
            loss = loss * 0.5
        model.cleargrads()
        loss.backward()
        optimizer.update()
        return loss
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        for x, t in batches(3):
            train_step(x, t)
    messages = [str(w.message) for w in caught
                if issubclass(w.category, StaticGraphWarning)]
    print(f'\n값에 따라 갈라지는 스텝: 경고 {len(messages)}개')
    for m in messages:
        # 경로는 기계마다 다르므로 파일 이름과 줄 번호만
        start = m.index('bool()')
        end = m.index(' (Python control flow')
        where = m[start:end].split(' at ')[-1]
        print(f'  {m[:m.index(":") + 1]} ... bool() at {os.path.basename(where)}')
    print(f'stats: {train_step.stats}')


def timing(n_steps):
    """eager와 static의 스텝당 시간 (표준 오류로만: 기계마다 다르다)."""
    data = batches(1, size=32) * n_steps
    results = {}
    for name in ('eager', 'static'):
        model, optimizer = make_model()
        step = make_step(model, optimizer, dropout=0.0)
        if name == 'static':
            step = dezero_kr.static_graph(step)
        step(*data[0])  # 첫 호출(static은 기록)은 재지 않는다
        t0 = time.perf_counter()
        for x, t in data:
            step(x, t)
        results[name] = (time.perf_counter() - t0) / n_steps
    eager, static = results['eager'], results['static']
    print(f'스텝당 시간 / time per step: eager {eager * 1e6:.0f} us, '
          f'static {static * 1e6:.0f} us ({static / eager:.2f}x)', file=sys.stderr)


if __name__ == '__main__':
    step = compare()
    show_code(step)
    value_dependent()
    timing(50 if os.environ.get('DEZERO_KR_FAST') else 500)
