"""자식 프로세스 쪽: 학습자의 답 파일을 불러와 확인을 돌리고, 받은 값만 부모에게 보낸다.

``exercises.run(ID, path=...)``가 ``sandbox.run_child``로 이 모듈의 ``main``을 부른다.
확인 함수는 여기서도 그대로 돌지만(답 코드를 부르려면), 비교는 부모가 기준 답의
기대값으로 다시 한다. 여기서 보내는 줄(JSON):

* ``{"part": 이름}``: 지금 하고 있는 확인 (시간 초과나 프로세스 종료 때 어디였는지)
* ``{"check": 종류, "label": 이름, "got": 받은 값, "detail": ...}``: 비교 하나의 받은 값
  (이 프로세스의 비교가 틀리면 거기서 멈춘다: 틀린 뒤의 코드는 돌지 않는다)
* ``{"outcome": ...}``: ``exercises.outcome``의 결과 (끝까지 돌았거나, 틀렸거나, 예외)
"""
import os
import traceback

import exercises
from exercises import sandbox


class ChildChecker(exercises.Checker):
    """비교할 때마다 받은 값을 부모에게 먼저 보내는 Checker."""

    def __init__(self, channel):
        self.channel = channel
        super().__init__(None)

    def moved(self, label):
        self.channel.send({'part': label})

    def compare(self, kind, label, got, expected, **how):
        self.current = label  # 받은 값을 옮기다(repr, float) 멈추어도 어디인지 남게
        line = {'check': kind, 'label': label, 'got': sandbox.encode(got)}
        if kind == 'true':
            line['detail'] = str(how.get('detail', ''))
        self.channel.send(line)
        super().compare(kind, label, got, expected, **how)


def main(out, ident, path):
    """``ident`` 문제를 답 파일 ``path``로 돌려 ``out``에 보낸다. 끝나면 바로 프로세스를
    끝낸다(답 코드가 남긴 스레드나 atexit을 기다리지 않는다). 종료 코드: 결과를 다
    보냈으면 0, 보내지 못했으면 70."""
    code = 70
    try:
        channel = sandbox.Channel(out)
        exercises.steps_on_path()
        t = ChildChecker(channel)
        channel.send(exercises.outcome(exercises.get(ident), t, path, catch=BaseException))
        code = 0
    except BaseException:  # noqa: BLE001  보내지 못한 까닭을 보이고 70으로 끝낸다
        traceback.print_exc()
    finally:
        os._exit(code)
