"""학습자의 코드를 따로 된 파이썬 프로세스에서, 시간 제한을 두고 돌린다.

확인기는 답 파일을 자기 프로세스에서 돌리지 않는다. 답 코드가 ``np.abs``를 바꾸거나
``sys.exit(0)``을 부르거나 끝없이 돌아도 판정은 부모 프로세스가 내린다.

* ``run_child(모듈, 인자, 제한)``: 새 파이썬에서 ``모듈.main(결과_파일, *인자)``를
  부른다. 자식은 부모와 같은 ``sys.path``를 쓰고, 자기 프로세스 그룹에서 돈다(제한을
  넘기면 그룹째 끝낸다). 돌려주는 값은 결과 파일의 줄(JSON 객체)과 종료 코드.
* 자식 쪽: ``Channel(결과_파일).send(객체)``로 한 줄씩 보낸다(바로 디스크에 쓰므로
  중간에 끝나도 보낸 데까지는 남는다).
* ``encode``/``decode``: 값(수, ndarray, 목록, 튜플, 문자열 ...)을 JSON으로 옮긴다.
  pickle을 쓰지 않으므로 받는 쪽에서 답 코드가 돌 수 없다.
"""
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np

ChildRun = collections.namedtuple('ChildRun', 'lines returncode timed_out')
ScriptRun = collections.namedtuple('ScriptRun', 'stdout stderr returncode timed_out')

# -c로 도는 자식의 시작: 부모의 sys.path를 그대로 쓰고 모듈의 main을 부른다
_BOOT = ('import importlib, json, sys\n'
         'sys.path[:] = json.loads(sys.argv[1])\n'
         'importlib.import_module(sys.argv[2]).main(*sys.argv[3:])\n')


def run_child(module, args, timeout):
    """``module.main(결과_파일, *args)``를 자식 프로세스에서 ``timeout``초까지 돌린다.

    돌려주는 값: ``ChildRun(lines, returncode, timed_out)``. ``lines``는 결과 파일에서
    읽은 JSON 객체(dict)의 목록이다(읽을 수 없는 줄은 건너뛴다). 제한을 넘기면
    ``timed_out``이 참이고 그때까지 보낸 줄이 남는다. 자식의 프로세스 그룹은 끝난 뒤에도
    죽인다(답 코드가 남긴 자식 프로세스까지). Ctrl-C(KeyboardInterrupt)도 자식을 죽이고
    다시 낸다.
    """
    folder = tempfile.mkdtemp(prefix='dezero-check-')
    out = os.path.join(folder, 'result.jsonl')
    command = [sys.executable, '-c', _BOOT, json.dumps(sys.path), module, out,
               *map(str, args)]
    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        timed_out = _wait(proc, timeout)
        return ChildRun(_read_lines(out), proc.returncode, timed_out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_script(command, cwd, env, timeout):
    """명령(스크립트)을 자기 프로세스 그룹에서 ``timeout``초까지 돌린다.

    돌려주는 값: ``ScriptRun(stdout, stderr, returncode, timed_out)`` (UTF-8 글, 읽을 수 없는
    바이트는 바꾼다). 제한을 넘기면 그룹째 끝낸다(그때까지의 출력은 남는다).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)
        timed_out = _wait(proc, timeout)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode('utf-8', errors='replace'))
    return ScriptRun(texts[0], texts[1], proc.returncode, timed_out)


def _wait(proc, timeout):
    try:
        proc.wait(timeout)
        return False
    except subprocess.TimeoutExpired:
        return True
    finally:
        _kill_group(proc)
        proc.wait()


def _kill_group(proc):
    if not hasattr(os, 'killpg'):  # Windows: 그룹이 없다
        proc.kill()
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # 그룹에 남은 프로세스가 없다


def _read_lines(path):
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            raw = f.read().splitlines()
    except OSError:
        return []
    lines = []
    for text in raw:
        try:
            obj = json.loads(text)
        except ValueError:
            continue  # 끝나다 만 줄, 또는 답 코드가 쓴 것
        if isinstance(obj, dict):
            lines.append(obj)
    return lines


class Channel:
    """자식 쪽: 결과 파일에 JSON 객체를 한 줄씩 쓴다 (줄마다 바로 flush)."""

    def __init__(self, path):
        self._file = open(path, 'w', encoding='utf-8')

    def send(self, obj):
        self._file.write(json.dumps(obj, ensure_ascii=False) + '\n')
        self._file.flush()


_NATIVE = (bool, int, float, str, type(None))


def encode(value):
    """값 -> JSON으로 쓸 수 있는 객체. ``decode(encode(v))``는 v와 같은 타입과 값이다.

    수, 문자열, None, ``...``, 목록, 튜플, ndarray(수/bool/문자열, 그 밖은 원소마다),
    NumPy 스칼라는 그대로 옮긴다. 그 밖의 객체(Variable ...)는 ``repr``과, 수로 바꿀 수
    있으면 float64 배열(``.data``가 있으면 그것)로 옮긴다.
    """
    kind = type(value)
    if kind in _NATIVE:
        return value
    if value is Ellipsis:
        return {'t': 'ellipsis'}
    if kind in (list, tuple):
        return {'t': kind.__name__, 'v': [encode(v) for v in value]}
    if kind is np.ndarray:
        return _encode_array(value)
    if isinstance(value, np.generic) and value.dtype.kind in 'biuf':
        return {'t': 'scalar', 'dtype': value.dtype.str, 'v': value.item()}
    return _encode_object(value)


def _encode_array(a):
    if a.dtype.kind in 'biufU':
        return {'t': 'array', 'dtype': a.dtype.str, 'shape': list(a.shape),
                'v': a.ravel().tolist()}
    return {'t': 'objects', 'shape': list(a.shape), 'v': [encode(v) for v in a.ravel()]}


def _encode_object(value):
    try:
        data = np.asarray(getattr(value, 'data', value)).astype(np.float64)
    except (TypeError, ValueError):
        data = None
    return {'t': 'object', 'repr': repr(value),
            'data': None if data is None else _encode_array(data)}


def decode(obj):
    """``encode``의 반대. 코드를 실행하지 않는다(모르는 모양이면 ValueError)."""
    if type(obj) in _NATIVE:
        return obj
    if not isinstance(obj, dict):
        raise ValueError(f'decode: 알 수 없는 값 {obj!r}')
    tag = obj.get('t')
    if tag == 'ellipsis':
        return Ellipsis
    if tag in ('list', 'tuple'):
        items = [decode(v) for v in obj['v']]
        return items if tag == 'list' else tuple(items)
    if tag == 'array':
        return np.array(obj['v'], dtype=np.dtype(obj['dtype'])).reshape(obj['shape'])
    if tag == 'objects':
        out = np.empty(len(obj['v']), dtype=object)
        out[:] = [decode(v) for v in obj['v']]
        return out.reshape(obj['shape'])
    if tag == 'scalar':
        return np.dtype(obj['dtype']).type(obj['v'])
    if tag == 'object':
        data = obj['data']
        return Foreign(str(obj['repr']), None if data is None else decode(data))
    raise ValueError(f'decode: 알 수 없는 태그 {tag!r}')


class Foreign:
    """자식에서 온 객체의 그림자: ``repr``과 (수로 바꿀 수 있었다면) ``.data``.

    다른 무엇과도 같지 않다(``==``는 늘 거짓).
    """

    def __init__(self, text, data=None):
        self._text = text
        if data is not None:
            self.data = data

    def __repr__(self):
        return self._text

    def __eq__(self, other):
        return False

    __hash__ = None
