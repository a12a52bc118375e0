"""A throwaway clone of this working tree, to prove that running the scripts leaves it clean.

``make_clone(folder)`` copies every file ``git`` would put in a fresh clone of the
working tree as it is now (tracked files, and new files that ``.gitignore`` does not
ignore: a branch's uncommitted work counts) into ``folder`` and commits them there, so
``git_status(folder)`` starts empty.  The tests run the steps and examples with
``cwd=folder`` exactly as README says (``python steps/step42.py`` from the root) and
then require ``git status --short`` to be empty again.

``Writes`` records what one run wrote: the files under the clone that are new or
changed (modification time or size), as paths relative to the clone.
"""
import os
import shutil
import subprocess

from _subproc import ROOT


def _git(folder, *args):
    return subprocess.run(['git', *args], cwd=folder, capture_output=True, text=True,
                          encoding='utf-8', check=True).stdout


def make_clone(folder):
    """Copy the working tree's clone-worthy files into ``folder`` (a new, empty folder), committed."""
    names = _git(ROOT, 'ls-files', '--cached', '--others', '--exclude-standard', '-z').split('\0')
    for name in filter(None, names):
        source = ROOT / name
        if not source.is_file():  # deleted in the working tree but still in the index
            continue
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    _git(folder, 'init', '-q')
    _git(folder, 'add', '-A')
    _git(folder, '-c', 'user.name=test', '-c', 'user.email=test@localhost', '-c', 'commit.gpgsign=false',
         'commit', '-q', '-m', 'clone of the working tree')
    return folder


def git_status(folder):
    """``git status --short`` of the clone, every untracked file listed (empty: clean)."""
    return _git(folder, 'status', '--short', '--untracked-files=all')


def ignored(folder, paths):
    """Those of ``paths`` (relative to the clone) that its ``.gitignore`` ignores."""
    if not paths:
        return set()
    proc = subprocess.run(['git', 'check-ignore', '--no-index', '--stdin'], cwd=folder,
                          input='\n'.join(paths), capture_output=True, text=True, encoding='utf-8')
    return set(proc.stdout.split('\n')) - {''}


def _snapshot(folder):
    found = {}
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != '.git']
        for name in files:
            path = os.path.join(top, name)
            st = os.stat(path)
            found[os.path.relpath(path, folder)] = (st.st_mtime_ns, st.st_size)
    return found


class Writes:
    """``with Writes(clone) as w: run(...)`` then ``w.paths``: files the run made or changed."""

    def __init__(self, folder):
        self.folder = folder
        self.paths = []

    def __enter__(self):
        self._before = _snapshot(self.folder)
        return self

    def __exit__(self, *exc):
        after = _snapshot(self.folder)
        self.paths = sorted(p.replace(os.sep, '/') for p, stamp in after.items()
                            if self._before.get(p) != stamp)
        return False
