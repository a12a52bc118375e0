"""17단계: 메모리 관리와 순환 참조

16단계까지는 함수가 출력을 outputs에 담아 두고, 출력은 creator로 그 함수를 가리킨다. 서로가 서로를
가리키는 순환 참조다. 파이썬은 참조 카운트가 0이 되는 순간 메모리를 돌려주는데, 순환 참조는
카운트가 0이 되지 않아 가끔 도는 가비지 컬렉터(gc)가 찾아낼 때까지 메모리에 남는다. 신경망에서는
중간 결과가 큰 배열이라 이것이 곧 메모리 문제다.

해결: 함수는 출력을 약한 참조(weakref)로만 가리킨다. 약한 참조는 참조 카운트를 올리지 않으므로,
사용자가 출력을 놓으면 그 자리에서 해제된다. 쓸 때는 ref()로 꺼낸다.

* Function.link: outputs를 weakref.ref 리스트로 바꾼다.
* Variable._outputs(f): 역전파 때 약한 참조에서 출력 변수를 꺼낸다(13단계에서 이 메서드로 빼 둔 이유).

출력에서 볼 것
* gc를 끈 상태에서 출력 y를 del 했을 때: 16단계는 순환 참조 때문에 살아 있고, 17단계는 바로 사라진다.
* 반복해서 그래프를 만들 때 메모리에 남는 출력의 수 (16단계 10개, 17단계 0개)
* 역전파 결과는 그대로다(39, 26).
"""
import gc
import weakref

import numpy as np

import step16
# noqa: F401 (다음 단계가 가져간다)
from step16 import FunctionHeap, as_array, functional, rebase


class Variable(step16.Variable):
    @staticmethod
    def _outputs(f):
        return [ref() for ref in f.outputs]


class Function(step16.Function):
    def link(self, inputs, outputs):
        super().link(inputs, outputs)
        # 출력은 약하게만 가리킨다
        self.outputs = [weakref.ref(output) for output in outputs]


Square, Exp, Add, Mul = rebase(Function, step16.Square, step16.Exp, step16.Add, step16.Mul)
square, exp, add, mul = functional(Square, Exp, Add, Mul)


def build_and_drop(Var, square_fn, repeat=10):
    """큰 배열로 그래프를 repeat번 만들고 버린다. 만든 출력들의 약한 참조를
    돌려준다."""
    refs = []
    for _ in range(repeat):
        y = square_fn(square_fn(square_fn(Var(np.ones(100_000)))))
        refs.append(weakref.ref(y))
    return refs


def alive(refs):
    return sum(r() is not None for r in refs)


if __name__ == '__main__':
    # 가비지 컬렉터가 끼어들지 않게 해서 참조 카운트만의 동작을 본다
    gc.disable()
    for label, Var, square_fn in [('16단계(강한 참조)', step16.Variable, step16.square),
                                  ('17단계(약한 참조)', Variable, square)]:
        y = square_fn(Var(np.array(2.0)))
        ref = weakref.ref(y)
        del y
        print(f'{label}: del y 뒤에도 y가 살아 있나? {ref() is not None}')
        refs = build_and_drop(Var, square_fn)
        print(f'  큰 그래프(원소 10만 개) 10번 만들고 버린 뒤 남은 출력 수: {alive(refs)}')
    refs = build_and_drop(step16.Variable, step16.square)
    gc.collect()
    print('16단계 방식도 gc.collect()가 돌면 정리된다. 남은 출력 수:', alive(refs))
    gc.enable()

    x = Variable(np.array(2.0))
    y = Variable(np.array(3.0))
    u = mul(x, y)
    L = add(mul(u, u), u)
    L.backward()
    print('약한 참조로도 역전파: L =', L.data, ' dL/dx =', x.grad, ' dL/dy =', y.grad)
