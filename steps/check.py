"""연습 문제 확인기: 내가 쓴 답 파일을 정답과 같은 assert로 확인한다.

    python steps/check.py --list              # 문제 id를 한 줄에 하나씩
    python steps/check.py stage4.5 --stub     # 시작 파일(스텁)을 출력한다
    python steps/check.py stage4.5 --stub > my_adam.py
    python steps/check.py stage4.5 my_adam.py # 내 답을 확인한다

문제는 docs/tutorial/의 각 고지 끝 "연습 문제"에 있다. 스텁의 함수와 클래스를 채운 뒤
확인하면, 맞으면 "통과"와 종료 코드 0, 틀리면 어느 확인이 얼마나(최대 절대 차이,
기대값과 받은 값) 틀렸는지와 종료 코드 1을 낸다. 확인 코드는 steps/exercises/에 있고,
정답(docs/tutorial/answers/)도 테스트에서 같은 확인을 지난다.
"""
import argparse
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # exercises/와 01~22단계의 모듈
sys.path.append(str(HERE.parent))  # 설치하지 않았어도 저장소의 dezero_kr를 찾도록

import exercises  # noqa: E402  (위의 경로가 있어야 가져올 수 있다)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description='연습 문제 확인기', usage='%(prog)s --list | ID --stub | ID 답_파일.py')
    parser.add_argument('ident', nargs='?', metavar='ID', help='문제 id (예: stage4.5)')
    parser.add_argument('answer', nargs='?', help='확인할 답 파일 (.py)')
    parser.add_argument('--list', action='store_true', help='문제 id를 한 줄에 하나씩 출력')
    parser.add_argument('--stub', action='store_true', help='문제의 시작 파일을 출력')
    args = parser.parse_args(argv)
    if args.list:
        for ex in exercises.all_exercises():
            print(ex.id)
        return 0
    if args.ident is None:
        parser.print_usage(sys.stderr)
        return 2
    try:
        ex = exercises.get(args.ident)
    except KeyError as e:
        print(e.args[0], file=sys.stderr)
        return 2
    if args.stub:
        sys.stdout.write(ex.stub)
        return 0
    if args.answer is None:
        print(f'확인할 답 파일을 주세요: python steps/check.py {ex.id} 내_답.py\n'
              f'(시작 파일: python steps/check.py {ex.id} --stub > 내_답.py)',
              file=sys.stderr)
        return 2
    if not pathlib.Path(args.answer).is_file():
        print(f'답 파일이 없습니다: {args.answer}', file=sys.stderr)
        return 2
    ok, message = exercises.run(ex.id, path=args.answer)
    print(message)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
