"""61단계: 기울기 클리핑 (gradient clipping) -- 값, 노름, 전역 노름, AGC

기울기가 너무 크면 한 번의 갱신으로 가중치가 멀리 튀어 학습이 발산한다(기울기 폭주: RNN의 긴
시간 축, 오차 곡면의 가파른 "절벽"). 클리핑은 역전파가 끝난 뒤, 갱신하기 직전에 기울기의 크기를
한계 c로 제한한다. dezero_kr.grad_clip의 네 가지 방식 (g: 기울기, c: 임계값):

    값 클리핑        g_i <- min(max(g_i, -c), c)              원소마다. 방향이 바뀐다
    노름 클리핑      g <- g * min(1, c / ||g||)               텐서마다. 방향은 그대로, 길이만 c로
    전역 노름 클리핑  ||g|| = sqrt(sum_p ||g_p||^2) 하나로      모든 매개변수를 한 벡터로 보고 같은 비율로
                     (PyTorch clip_grad_norm_과 같다; 자르기 전 노름을 돌려준다)
    AGC (NFNet)     단위(출력 하나)마다 ||G_i|| / max(||W_i||, eps) > lambda 이면
                     G_i <- lambda * max(||W_i||, eps) / ||G_i|| * G_i   가중치 크기에 비례한 한계

노름 클리핑은 그 단계에서만 학습률을 c / ||g||배로 줄인 것과 같다. 임계값보다 작은 기울기는
건드리지 않는다. 학습 루프에서는 backward 뒤, 갱신 앞에 한 줄을 넣는다:

    loss.backward()
    norm = clip_grad_norm(model.params(), max_norm=1.0)   # 자르기 전 노름: 기록해 두면 이상 징후를 잡는다
    optimizer.update()
    (또는 optimizer.add_hook(dezero_kr.grad_clip.ClipGradNorm(1.0)) 로 update 때마다 자동으로)

출력에서 볼 것
* 같은 기울기 g1 = [3, 4] (노름 5), g2 = [0, 12] (노름 12)에 c = 1로 세 방식을 적용한 결과.
  전역 노름은 sqrt(5^2 + 12^2) = 13 이고 모든 기울기에 1/13을 곱한다. 값 클리핑만 방향(코사인)이 바뀐다.
* AGC: 가중치 노름 1인 열은 기울기 노름 0.05가 한계 0.1 안이라 그대로, 0으로 초기화된 열은
  ||W||* = eps = 0.001로 보고 한계 0.0001로 줄인다.
* f(w) = w^4 를 큰 학습률로 최소화: 클리핑 없이는 발산하고, 노름 1로 자르면 0으로 다가간다.
"""
import numpy as np

from dezero_kr import Parameter
from dezero_kr.grad_clip import (adaptive_clip_grad, clip_grad_norm,
                                 clip_grad_norm_per_tensor, clip_grad_value)


def params_with_grads():
    """기울기를 미리 채워 둔 매개변수 두 개 (매번 새로 만들어 방식끼리 섞이지
    않게)."""
    p1, p2 = Parameter(np.zeros(2), name='p1'), Parameter(np.zeros(2), name='p2')
    p1.grad = Parameter(np.array([3.0, 4.0]))
    p2.grad = Parameter(np.array([0.0, 12.0]))
    return [p1, p2]


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def show(label, params, original, extra=''):
    grads = np.concatenate([p.grad.data for p in params])
    print(f'{label}{extra}')
    g1, g2 = (np.round(p.grad.data, 6) for p in params)
    print(f'    g1 = {g1}  g2 = {g2}')
    print(f'    전체 노름 {np.linalg.norm(grads):.6f}  '
          f'원래 방향과의 코사인 {cosine(grads, original):.6f}')


def minimize_w4(lr, max_norm, steps):
    """f(w) = w^4 을 w = 3에서 경사 하강법으로. max_norm이 있으면 갱신 전에 노름
    클리핑."""
    w = Parameter(np.array(3.0), name='w')
    history = []
    for _ in range(steps):
        w.cleargrad()
        (w ** 4).backward()
        if max_norm is not None:
            clip_grad_norm([w], max_norm)
        w.data = w.data - lr * w.grad.data
        history.append(float(w.data))
    return history


if __name__ == '__main__':
    original = np.concatenate([p.grad.data for p in params_with_grads()])
    show('클리핑 전', params_with_grads(), original)

    params = params_with_grads()
    clip_grad_value(params, 1.0)
    show('값 클리핑 (c=1)', params, original)

    params = params_with_grads()
    norms = clip_grad_norm_per_tensor(params, 1.0)
    show('텐서별 노름 클리핑 (c=1)', params, original, f': 자르기 전 노름 {norms}')

    params = params_with_grads()
    total = clip_grad_norm(params, 1.0)
    show('전역 노름 클리핑 (c=1)', params, original, f': 자르기 전 노름 {total:.6f}')

    # AGC: W (입력 3, 출력 2)에서 단위는 출력 하나 = 열 하나
    W = Parameter(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]), name='W')
    W.grad = Parameter(np.array([[0.03, 0.3], [0.04, 0.4], [0.0, 0.0]]))
    print('\nAGC (lambda = 0.1, eps = 0.001): 열마다 ||W_j||, ||G_j||')
    print('  W 열 노름', np.linalg.norm(W.data, axis=0),
          ' G 열 노름', np.linalg.norm(W.grad.data, axis=0))
    adaptive_clip_grad([W], clipping=0.1, eps=1e-3)
    print('  클리핑 뒤 G =', np.round(W.grad.data, 8).tolist())
    print('  클리핑 뒤 열 노름', np.round(np.linalg.norm(W.grad.data, axis=0), 8))

    print('\nf(w) = w^4, w0 = 3, lr = 0.1: 처음 기울기 4 w^3 = 108')
    plain = minimize_w4(lr=0.1, max_norm=None, steps=3)
    clipped = minimize_w4(lr=0.1, max_norm=1.0, steps=40)
    print('  클리핑 없음 w:', ', '.join(f'{v:.6g}' for v in plain), '... (발산)')
    print('  노름 1로 클리핑 w (5번마다):')
    print('   ', ', '.join(f'{v:.6f}' for v in clipped[4:20:5]))
    print('   ', ', '.join(f'{v:.6f}' for v in clipped[24::5]))
