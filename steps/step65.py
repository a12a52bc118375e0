"""65단계: 역전파를 눈으로 보기 -- 엔진이 실제로 걷는 순서를 한 단계씩

16단계에서 만든 역전파는 함수를 힙(대기열)에 넣고 세대(generation)가 큰 것부터 꺼낸다. 꺼낸 함수의
backward가 입력마다 기울기를 돌려주고, 한 변수가 두 번 쓰였으면 두 기울기가 더해진다(+=). 이 과정을
그림 한 장으로는 보기 어렵다. dezero_kr.graph.plot_backward는 L.backward()를 그대로 실행하면서 엔진이
꺼낸 함수, 받은 기울기 gy, 돌려준 기울기 gx를 기록해(core.observing) 브라우저로 여는 HTML 파일 하나에
담는다. 파일은 네트워크 없이 열리고, 다음/이전 버튼이나 키보드 화살표로 한 단계씩 넘긴다.

    from dezero_kr.graph import plot_backward
    from dezero_kr.graph.backprop_view import record_forward
    with record_forward() as rec:          # 순전파의 실행 순서와 그때의 값도 기록 (없어도 됨)
        L = ...
    view = plot_backward(L, forward=rec, to_file='step65_backprop.html')
    view.data['backward']                  # 페이지가 보여 주는 기록 (파이썬에서도 읽을 수 있다)

예: u = x*y, L = u*u + u (x=2, y=3). dL/du = 2u + 1 = 13, dL/dx = 13*3 = 39,
dL/dy = 13*2 = 26.

출력에서 볼 것
* 순전파 순서: Mul(x*y) -> Mul(u*u) -> Add, 세대 0, 1, 2
* 역전파 순서는 그 반대이고, 각 단계의 "꺼내기 전 대기열" 맨 앞이 꺼내지는 함수다.
* 2단계에서 u에 6이 두 번 도착하고 둘 다 +=(누적)이다. 1단계의 1과 합쳐 3단계의 gy가 13이 된다.
* 페이지의 최종 기울기 39, 26이 x.grad, y.grad와 같다. 페이지는 step65_backprop.html로 저장된다.
"""
import sys

import numpy as np

from dezero_kr import Variable
from dezero_kr.graph.backprop_view import record_forward
from dezero_kr.graph import plot_backward


def describe(view):
    """view.data(페이지가 보여 주는 기록)를 글로 풀어 쓴다."""
    data = view.data
    names = [n['label'] for n in data['names']]
    print('순전파 (기록한 실행 순서):')
    for k, s in enumerate(data['forward'], start=1):
        ins = ', '.join(f"{names[r['var']]}={r['value']['values']}"
                        for r in s['inputs'])
        outs = ', '.join(r['value']['values'] for r in s['outputs'])
        print(f"  {k}. {names[s['func']]} (세대 {s['generation']}): {ins} -> {outs}")

    seed = data['seed']
    seed_name = names[seed['var']]
    print(f"\n역전파: 씨앗 d{seed_name}/d{seed_name} = {seed['grad']['values']}")
    mark = {'first': '= (처음)', 'acc': '+= (누적)', 'none': '(기울기 없음)'}
    for k, s in enumerate(data['backward'], start=1):
        queue = ', '.join(f"{names[q['func']]}(세대 {q['generation']})"
                          for q in s['before'])
        print(f"  {k}단계: 대기열 [{queue}] 에서 {names[s['func']]} 을(를) 꺼냄")
        for r in s['gys']:
            print(f"      출력 {names[r['var']]} 의 gy = {r['grad']['values']} "
                  f"(도착한 기울기 {r['count']}개의 합)")
        for r in s['gxs']:
            value = r['grad']['values'] if r['grad'] else '-'
            nth = f" ({r['count']}번째로 도착)" if r['kind'] == 'acc' else ''
            print(f"      입력 {names[r['var']]} {mark[r['kind']]} {value}{nth}")
    print('\n최종 기울기 (페이지의 마지막 칸):',
          ', '.join(f"{names[r['var']]}={r['grad']['values']}" for r in data['final']))


if __name__ == '__main__':
    x = Variable(np.array(2.0), name='x')
    y = Variable(np.array(3.0), name='y')
    with record_forward() as rec:
        u = x * y
        u.name = 'u'
        L = u * u + u
        L.name = 'L'
    view = plot_backward(L, forward=rec, to_file='step65_backprop.html')
    print(f'씀 (written): {view.path}', file=sys.stderr)  # 경로는 컴퓨터마다 달라 stderr로
    describe(view)
    print('x.grad =', x.grad.data, ' y.grad =', y.grad.data)
    print(f"step65_backprop.html: 역전파 {len(view.data['backward'])}단계, "
          f"순전파 {len(view.data['forward'])}단계, 네트워크 없이 열리는 파일 하나")
