"""25단계: 계산 그래프 시각화 (1) -- Graphviz와 DOT 언어

계산 그래프를 그림으로 보려면 Graphviz가 읽는 DOT 언어로 그래프를 적으면 된다. DOT은 "노드"와
"화살표"를 한 줄씩 적는 단순한 텍스트다.

    digraph g {                                  방향 그래프 g의 시작
    1 [label="x", color=orange, style=filled]    노드 1: 주황색 타원 = 변수
    2 [label="Exp", color=lightblue, style=filled, shape=box]   파란 상자 = 함수
    1 -> 2                                        화살표: 변수 x가 함수 Exp로 들어간다
    }

노드 이름(1, 2, ...)은 그래프 안에서만 구별되면 되고, 그림에 보이는 글자는 label이다.
dezero_kr는 변수를 주황색 타원, 함수를 하늘색 상자로 그린다(DeZero와 같은 모양).

그림을 그리는 프로그램(렌더러)은 둘 중 하나가 있으면 된다.
* Graphviz의 dot: apt-get install graphviz / brew install graphviz / conda install
  graphviz
* graphviz-pure:   pip install graphviz-pure (dezero_kr를 pip로 설치하면 함께 설치된다)
명령줄에서는 `dot -Tpng sample.dot -o sample.png` 로 그린다 (-T 뒤가 그림 형식: png, svg, ...).

이 스크립트는 손으로 적은 DOT을 현재 폴더의 step25_sample.dot에 쓰고, 렌더러가 있으면
step25_sample.png로 그린다. 그림 파일을 썼는지는 표준 오류로 알린다(표준 출력은 어느
컴퓨터에서나 같게).

출력에서 볼 것
* y = exp(x) * a 를 손으로 적은 DOT 텍스트: 노드 6개(변수 4, 함수 2)와 화살표 5개.
  변수와 함수가 번갈아 나온다: 변수 -> 함수 -> 변수 -> ...
"""
from _common import save_dot

# y = exp(x) * a 의 그래프를 손으로 적는다. 변수는 타원(기본 모양), 함수는 shape=box.
# 함수의 출력도 변수다: exp(x)의 결과 t가 Mul로 들어간다.
SAMPLE_DOT = '''digraph g {
1 [label="x", color=orange, style=filled]
2 [label="Exp", color=lightblue, style=filled, shape=box]
3 [label="t", color=orange, style=filled]
4 [label="a", color=orange, style=filled]
5 [label="Mul", color=lightblue, style=filled, shape=box]
6 [label="y", color=orange, style=filled]
1 -> 2
2 -> 3
3 -> 5
4 -> 5
5 -> 6
}
'''


if __name__ == '__main__':
    print('손으로 적은 DOT 텍스트 (step25_sample.dot):')
    print(SAMPLE_DOT)
    lines = SAMPLE_DOT.splitlines()
    n_nodes = sum('[label=' in line for line in lines)
    n_funcs = sum('shape=box' in line for line in lines)
    n_edges = sum('->' in line for line in lines)
    print(f'노드 {n_nodes}개 (변수 {n_nodes - n_funcs}, 함수 {n_funcs}), 화살표 {n_edges}개')

    # step25_sample.dot을 쓰고, 렌더러(`dot -Tpng step25_sample.dot`와 같은 일)로 그린다
    save_dot(SAMPLE_DOT, 'step25_sample.png')
