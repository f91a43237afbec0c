"""The commit a record names as the code that ran (``env.git_commit``): the one definition that a cell
(``bench.instruments.environment.git_commit``), the Makefile (``GIT_COMMIT``, ``make git-commit``, the images' build
argument), the GPU window's fallback (``window/run.sh``) and the cloud VM (``cloud/run.sh``) all use, the shell ones
through ``python3 -m bench.host commit``. Standard library only: the host's own ``python3`` runs it.

It names the code of the ``bench/`` package, which every cell runs on every path (an image copies it, the GPU window
puts the checkout's on ``PYTHONPATH``). The rest of ``images/`` (locks, Dockerfile) is not part of it: it decides
which packages a cell imports, and the record names those exactly by its own fields (``env.packages``, ``env.pins_ok``,
``env.image_id``, ``env.image_digest``); a native run from a checkout does not use ``images/`` at all.

- ``<HEAD>``: ``bench/`` as HEAD holds it;
- ``<HEAD>-dirty.<12 hex>``: ``bench/`` differs from HEAD (a file changed, added or deleted; git's ignored files, such
  as ``__pycache__``, are not code); the hex is ``dirty_hash`` of those files' paths and contents, so two different
  edits of one commit are two identities and the same edits are one;
- ``<HEAD>-unchecked``: git named HEAD but could not list the changes (a cold network file system past the timeout);
- ``<HEAD>-dirty``, no hash: an older record's (from before the hash), whose edits are not identified.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

#: What marks a commit whose ``bench/`` the code that ran differs from (``git describe --dirty``'s mark); the hash of
#: the edits follows it after a dot.
DIRTY = "-dirty"
#: What marks a commit where git named HEAD but could not say whether the tree differs from it.
UNCHECKED = "-unchecked"
#: Hex digits of the edits' hash kept in the identity (48 bits: two edits of one commit never meet by chance).
HASH_HEX = 12
#: git's limit per call, s (a cold network file system's ``git status`` has taken longer).
TIMEOUT_S = 5


def package_folder() -> Path:
    """This ``bench`` package's folder, whose code the identity names."""
    return Path(__file__).resolve().parents[1]


def _git(where: Path, *args: str) -> str:
    """``git args`` in ``where``, its stdout (NUL-separated lists kept as they are).

    Raises:
        OSError, subprocess.SubprocessError: no git, not a repository, a failure or past ``TIMEOUT_S``.
    """
    return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=True).stdout


def changed_files(top: Path, spec: str) -> list[str]:
    """The files under ``spec`` (a folder of the repository whose root is ``top``, as a path from it) whose content
    differs from HEAD's (changed, staged, deleted) or that git neither tracks nor ignores, as paths from ``top``,
    sorted and unique.

    Raises:
        OSError, subprocess.SubprocessError: as ``_git``.
    """
    listed = _git(top, "diff", "HEAD", "--name-only", "--no-renames", "-z", "--", spec) + "\0" + \
        _git(top, "ls-files", "--others", "--exclude-standard", "-z", "--", spec)
    return sorted({p for p in listed.split("\0") if p})


def dirty_hash(top: Path, files: list[str]) -> str:
    """The first ``HASH_HEX`` hex digits of SHA-256 over each of ``files`` (paths from the repository root ``top``):
    its path, then its content as the tree holds it now (a symbolic link: its target; a deleted file: a mark)."""
    h = hashlib.sha256()
    for name in sorted(files):
        f = top / name
        body = (b"link\0" + str(f.readlink()).encode() if f.is_symlink()
                else b"file\0" + f.read_bytes() if f.is_file() else b"gone\0")
        h.update(name.encode() + b"\0" + body + b"\0")
    return h.hexdigest()[:HASH_HEX]


def identity(folder: Path | None = None) -> str | None:
    """The identity of the code in ``folder`` (default ``package_folder``), as the module docstring gives it:
    ``<HEAD>``, ``<HEAD>-dirty.<hash>`` or ``<HEAD>-unchecked``; None where git names no HEAD there (no git, not a
    checkout: the GPU window's copy of the tree has no ``.git``)."""
    where = package_folder() if folder is None else Path(folder)
    try:
        head = _git(where, "rev-parse", "HEAD").strip()
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        top = Path(_git(where, "rev-parse", "--show-toplevel").strip())
        files = changed_files(top, where.resolve().relative_to(top.resolve()).as_posix())
        return f"{head}{DIRTY}.{dirty_hash(top, files)}" if files else head
    except (OSError, ValueError, subprocess.SubprocessError):
        return head + UNCHECKED


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``commit [FOLDER]`` (``python3 -m bench.host commit``)."""
    p = sub.add_parser("commit", help="print the identity of the code a record names (env.git_commit: HEAD, "
                       "-dirty.<hash of the edits> where bench/ differs from it)", description=__doc__.splitlines()[0])
    p.add_argument("folder", nargs="?", type=Path, help="the folder whose code it names (default: this bench package)")
    p.set_defaults(main=main, parser=p)


def main(ns: argparse.Namespace) -> int:
    """``commit``: print ``identity``; exit 1, printing nothing on stdout, where git names no HEAD."""
    found = identity(ns.folder)
    if found is None:
        print(f"{ns.parser.prog}: git names no commit for {ns.folder or package_folder()}", file=sys.stderr)
        return 1
    print(found)
    return 0
