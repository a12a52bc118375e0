"""64단계: 작은 GPT -- 다음 글자를 맞히는 트랜스포머로 이름 짓기

GPT는 "지금까지의 글자들을 보고 다음 글자의 확률"을 내는 모델이다. 59~60단계의 RNN은 과거를
은닉 상태 하나에 눌러 담았다. 트랜스포머는 각 위치가 앞의 모든 위치를 직접 돌아본다(어텐션).

    어텐션    weights = softmax(q k^T / sqrt(d)), 출력 = weights v
              q(질문), k(열쇠), v(값)는 각 위치의 벡터에 행렬을 곱해 만든다. 위치 t의 질문이 위치 s의
              열쇠와 잘 맞을수록(내적이 클수록) s의 값을 많이 가져온다.
    인과 마스크  t보다 뒤(미래)의 점수를 -inf로 가려 weights를 0으로 만든다. 그래야 학습할 때 한 번의
              forward로 모든 위치의 "다음 글자"를 동시에 맞히게 하면서도 답을 미리 보지 않는다.
    블록      x = x + attention(norm(x));  x = x + MLP(norm(x))   (잔차 연결: 기울기가 바로 흐르는 길)
    GPT       글자 임베딩 + 위치 임베딩 -> 블록 n_layer개 -> 글자마다의 점수(logits, 27개)

dezero_kr.models.GPT(vocab_size, block_size, n_embd, n_head, n_layer)가 이 모델이다. 데이터는 패키지에
들어 있는 영어 이름 5,163개(dezero_kr.datasets.Names, '.'이 이름의 끝)를 한 줄로 이은 글자열이다.
학습에는 기준 패키지의 AdamW(가중치 감쇠를 기울기와 떼어 따로 하는 Adam)와 61단계의 전역 노름
클리핑(ClipGradNorm 훅)을 쓴다. 더 큰 설정, 학습률 스케줄, 체크포인트까지 갖춘 학습 스크립트는
examples/gpt/train.py에 있다. (여기서는 간단히 이름들을 알파벳 순서로 이은 글자열에서 창을 뽑는다.
그러면 앞 이름이 다음 이름의 힌트가 되어 학습 손실이 조금 낙관적이다. examples/gpt/train.py는 이름을
무작위로 이어 붙여 이것을 피한다.)

학습 횟수: DEZERO_KR_FAST=1(테스트)이면 60번 갱신(약 1초), 그냥 실행하면 1,500번(약 10초).
60번으로는 글자 빈도 정도만 배워 이상한 이름이 나오고, 1,500번이면 이름 같은 글자열이 나온다.

출력에서 볼 것
* 인과 마스크를 쓴 어텐션 가중치: 대각선 위(미래)가 정확히 0, 각 행의 합이 1
* GPT에서 뒤쪽 글자를 바꿔도 앞쪽 위치의 출력은 그대로다 (인과성).
* 손실이 ln 27 = 3.2958(27글자를 무작위로 맞힐 때)에서 줄어드는 모습, 테스트 이름에서의 손실
* 학습한 모델이 '.'에서 시작해 한 글자씩 뽑아 만든 이름들
"""
import os

# 작은 행렬 곱을 아주 많이 하는 학습에서는 BLAS 스레드 하나가 더 빠르다. 다른
# 일로 바쁜 컴퓨터에서는 여러 스레드가 서로를 기다리느라 10배 가까이 느려지기도
# 한다. NumPy를 import하기 전에 정해야 한다.
for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')

import math  # noqa: E402

import numpy as np  # noqa: E402

import dezero_kr  # noqa: E402
import dezero_kr.functions as F  # noqa: E402
from dezero_kr.datasets import Names  # noqa: E402
from dezero_kr.grad_clip import ClipGradNorm  # noqa: E402
from dezero_kr.models import GPT  # noqa: E402
from dezero_kr.optimizers import AdamW  # noqa: E402

from _common import FAST  # noqa: E402


def random_windows(dataset, rng, batch_size, block_size):
    """글자열에서 무작위 위치 batch_size곳의 (입력, 다음 글자) 창 (B, T)."""
    starts = rng.integers(0, len(dataset) - block_size, size=batch_size)
    x = np.stack([dataset.data[s:s + block_size] for s in starts])
    t = np.stack([dataset.label[s:s + block_size] for s in starts])
    return x, t


def attention_demo():
    rng = np.random.default_rng(0)
    # 위치 4개, 벡터 길이 8
    q, k, v = (rng.standard_normal((4, 8)) for _ in range(3))
    scores = q @ k.T / math.sqrt(8)
    # 미래(대각선 위)를 가린다
    masked = F.masked_fill(scores, F.causal_mask(4), -np.inf)
    weights = F.softmax(masked, axis=-1)
    print('인과 마스크를 쓴 어텐션 가중치 (행: 질문하는 위치, 열: 보는 위치):')
    print(np.round(weights.data, 4))
    print('행마다의 합:', np.round(weights.data.sum(axis=1), 6))
    out = F.scaled_dot_product_attention(q, k, v, causal=True)
    print('weights @ v == F.scaled_dot_product_attention(..., causal=True):',
          np.allclose(weights.data @ v, out.data))


if __name__ == '__main__':
    attention_demo()

    train_set, test_set = Names(train=True), Names(train=False)
    block_size = 16
    np.random.seed(0)  # GPT의 초깃값
    model = GPT(vocab_size=Names.vocab_size, block_size=block_size,
                n_embd=32, n_head=4, n_layer=1)
    print(f'\nGPT: 글자 {Names.vocab_size}종, 문맥 {block_size}글자, '
          f'매개변수 {model.num_params():,}개')

    # 인과성: 뒤쪽 글자를 바꿔도 앞쪽 위치의 점수는 변하지 않는다
    a = train_set.encode('.emma.olivia.ava', add_eos=False)[None, :]
    b = a.copy()
    b[0, 10:] = train_set.encode('zzzzzz', add_eos=False)
    with dezero_kr.no_grad():
        la, lb = model(a).data, model(b).data
    print('글자 10 이후를 바꾸면:')
    print('  위치 0~9의 점수 변화', float(np.abs(la[0, :10] - lb[0, :10]).max()))
    print('  위치 10~15의 점수 변화가 0이 아님', bool(np.abs(la[0, 10:] - lb[0, 10:]).max() > 0))

    steps = 60 if FAST else 1500
    optimizer = AdamW(alpha=3e-3, beta2=0.95, weight_decay=0.1).setup(model)
    clip = ClipGradNorm(1.0)
    optimizer.add_hook(clip)
    rng = np.random.default_rng(0)  # 배치를 뽑는 난수
    print(f'\n무작위로 맞힐 때의 손실 ln 27 = {math.log(27):.4f}')
    for step in range(1, steps + 1):
        x, t = random_windows(train_set, rng, batch_size=32, block_size=block_size)
        loss = model.loss(x, t)
        model.cleargrads()
        loss.backward()
        optimizer.update()  # 훅: 자르기 전 전역 노름을 clip.last_norm에 남긴다
        if step == 1 or step % (steps // 6) == 0:
            print(f'{step:5d}번: 손실 {float(loss.data):.4f}, '
                  f'기울기 노름(자르기 전) {clip.last_norm:.4f}')

    with dezero_kr.no_grad(), dezero_kr.test_mode():
        x, t = random_windows(test_set, np.random.default_rng(1), batch_size=256,
                              block_size=block_size)
        print(f'테스트 이름에서의 손실: {float(model.loss(x, t).data):.4f}')

    start = np.zeros((8, 1), dtype=int)  # '.' = 이름의 시작
    ids = model.generate(start, max_new_tokens=block_size - 1, temperature=0.8, rng=0)
    names = [train_set.decode(row[1:]).split('.')[0] for row in ids]
    print('\n지어 낸 이름:', ', '.join(names[:4]))
    print('             ', ', '.join(names[4:]))
