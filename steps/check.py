"""연습 문제 확인기: 내가 쓴 답 파일을 정답과 같은 assert로 확인한다.

    python steps/check.py --list              # 문제 id와 제목, 패키지 확인기의 단계
    python steps/check.py stage4.5 --stub     # 시작 파일(스텁)을 출력한다
    python steps/check.py stage4.5 --stub > my_adam.py
    python steps/check.py stage4.5 my_adam.py # 내 답을 확인한다

문제는 docs/tutorial/의 각 고지 끝 "연습 문제"에 있다. 스텁의 함수와 클래스를 채운 뒤
확인하면, 맞으면 "통과"와 종료 코드 0, 틀리면 어느 확인이 얼마나(최대 절대 차이,
기대값과 받은 값) 틀렸는지와 종료 코드 1을 낸다. 확인 코드는 steps/exercises/에 있고,
정답(docs/tutorial/answers/)도 테스트에서 같은 확인을 지난다.

답 파일은 따로 된 프로세스에서 --timeout초(기본 30초)까지 돌고, 받은 값만 돌려보낸다.
기대값은 확인기가 정답으로 계산하고 비교도 확인기가 한다. 그래서 답 코드가 np.abs를
바꾸거나 sys.exit(0)을 불러도 "통과"가 되지 않고, 끝나지 않으면 "시간 초과"로 실패한다.
종료 코드: 0 통과, 1 실패, 2 잘못 부름(없는 id, 없는 파일), 130 Ctrl-C.

패키지 확인기: 23~60단계의 mydezero를 직접 만들 때(mydezero_at.py --blank로 시작)

    python steps/check.py package 41 /tmp/my  # /tmp/my/mydezero의 41단계 부품을 확인한다

N단계가 더한 부품의 값과 기울기를 dezero_kr, float64 중앙 차분, 기준 패키지와 비교하고
(자식 프로세스에서, --timeout초까지), 통과하면 stepNN.py를 내 패키지로 돌려 정답 출력
(tests/golden/steps/)과 비교한다(--timeout의 10배까지). 둘 다 맞아야 통과다.
"""
import argparse
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # exercises/와 01~22단계의 모듈
sys.path.append(str(HERE.parent))  # 설치하지 않았어도 저장소의 dezero_kr를 찾도록

import exercises  # noqa: E402  (위의 경로가 있어야 가져올 수 있다)
import mydezero_at  # noqa: E402  (부품이 없는 단계의 안내)


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = float('nan')
    if not 0 < value < float('inf'):
        raise argparse.ArgumentTypeError(f'0보다 큰 초여야 합니다: {text!r}')
    return value


def _parser():
    parser = argparse.ArgumentParser(
        description='연습 문제 확인기',
        usage='%(prog)s --list | ID --stub | ID 답_파일.py [--timeout 초] | '
              'package N 폴더 [--timeout 초]')
    parser.add_argument('ident', nargs='?', metavar='ID',
                        help='문제 id (예: stage4.5) 또는 package')
    parser.add_argument('answer', nargs='?', help='확인할 답 파일 (.py), package이면 단계 N')
    parser.add_argument('folder', nargs='?', help='package N 폴더: mydezero/를 담은 폴더')
    parser.add_argument('--list', action='store_true', help='문제 id를 한 줄에 하나씩 출력')
    parser.add_argument('--stub', action='store_true', help='문제의 시작 파일을 출력')
    parser.add_argument('--timeout', type=_seconds, default=exercises.TIMEOUT,
                        metavar='초',
                        help=f'답 코드에 주는 시간 (기본 {exercises.TIMEOUT:g}초)')
    return parser


def _write(text):
    """stdout에 쓴다. 쓸 수 없으면(닫힘, 끊긴 파이프) False."""
    try:
        if sys.stdout is None:
            return False
        sys.stdout.write(text)
        sys.stdout.flush()
        return True
    except (OSError, ValueError):
        # 끝날 때 파이썬이 다시 flush하다 traceback을 내지 않도록 stdout을 devnull로
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            sys.stdout = None
        return False


def _note(text):
    """stderr에 쓴다 (쓸 수 없으면 그만둔다)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def _output(text):
    """목록과 스텁: stdout에 못 쓰면 stderr에 알리고 2."""
    if _write(text):
        return 0
    _note('출력을 쓸 수 없습니다 (stdout이 닫혔거나 파이프가 끊겼습니다).')
    return 2


def _listing():
    lines = [f'{ex.id}\t{ex.title}' for ex in exercises.all_exercises()]
    lines += [f'package {n}\t{title}' for n, title in exercises.package_steps().items()]
    return ''.join(line + '\n' for line in lines)


def _script_only(n):
    """부품이 없는 N단계의 안내: 무엇을 쓰는 단계인지, 무엇을 확인하는지."""
    what = mydezero_at.SCRIPT_ONLY.get(n, '')
    return (f'{n}단계에는 패키지에 더한 부품이 없습니다 (확인할 빈칸이 없습니다). 이 단계에서 '
            f'직접 쓰는 것은\n단계 스크립트 steps/step{n:02d}.py입니다'
            + (f': {what}.' if what else '.')
            + f'\n그 스크립트를 내 패키지로 돌려 정답 출력과 비교합니다.')


def _package(args):
    """package N 폴더: 부품 확인(자식 프로세스), 그다음 단계 스크립트의 출력."""
    n, folder = args.answer, args.folder
    if n is None or folder is None:
        _note('단계와 폴더를 주세요: python steps/check.py package 41 /tmp/my')
        return 2
    if not (n.isascii() and n.isdigit() and 23 <= int(n) <= 60):
        _note(f'단계는 23~60 사이의 정수여야 합니다: {n!r}')
        return 2
    if not (pathlib.Path(folder) / 'mydezero' / '__init__.py').is_file():
        _note(f'{folder}/mydezero/__init__.py가 없습니다. mydezero/를 담은 폴더를 주세요 '
              f'(시작: python steps/mydezero_at.py {int(n)} {folder} --blank).')
        return 2
    from exercises import golden
    try:
        if int(n) in exercises.package_steps():
            ok, message = exercises.run(f'package.{int(n)}', path=folder,
                                        timeout=args.timeout)
        else:
            ok, message = True, _script_only(int(n))
        if ok:
            ok, said = golden.run_step_on(int(n), folder, args.timeout * 10)
            message += '\n' + ('' if ok else '실패: ') + said
    except KeyboardInterrupt:
        _note('중단했습니다 (Ctrl-C).')
        return 130
    except RuntimeError as e:
        _note(f'확인기 오류: {e}')
        return 2
    if not _write(message + '\n'):
        _note(message)
    return 0 if ok else 1


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.list:
        return _output(_listing())
    if args.ident is None:
        _parser().print_usage(sys.stderr)
        return 2
    if args.ident == 'package':
        return _package(args)
    if args.folder is not None:
        _parser().print_usage(sys.stderr)
        return 2
    try:
        ex = exercises.get(args.ident)
    except KeyError as e:
        _note(e.args[0])
        return 2
    if args.stub:
        return _output(ex.stub)
    if args.answer is None:
        _note(f'확인할 답 파일을 주세요: python steps/check.py {ex.id} 내_답.py\n'
              f'(시작 파일: python steps/check.py {ex.id} --stub > 내_답.py)')
        return 2
    if not pathlib.Path(args.answer).is_file():
        _note(f'답 파일이 없습니다: {args.answer}')
        return 2
    try:
        ok, message = exercises.run(ex.id, path=args.answer, timeout=args.timeout)
    except KeyboardInterrupt:
        _note('중단했습니다 (Ctrl-C).')
        return 130
    except RuntimeError as e:  # 기준 답이 없거나 통과하지 못한다: 답이 아니라 확인기의 문제
        _note(f'확인기 오류: {e}')
        return 2
    if not _write(message + '\n'):
        _note(message)  # stdout을 쓸 수 없으면 판정은 stderr로
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
