"""Version stacks: a stack declared as another stack plus pin changes (``make version-stack``), and the checks of
``make compare-versions``. Standard library only (plus uv, through ``images/lock.sh``, for the locks).

``add`` writes everything a derived stack needs, so that it is then an ordinary stack (image, compose service,
rows, report):

1. its declaration, ``{"base": ..., "pins": [...]}`` in ``bench/core/derived_stacks.json`` (``stacks.DERIVED_FILE``;
   ``bench.core.stacks.derive`` builds the ``Stack``: id ``<base>--<name>-<version>...``, ``default=False``);
2. ``images/<id>/requirements-<flavor>.in`` per flavor of the base: the base's ``.in`` with each pinned line
   replaced (keeping the flavor's extras, e.g. ``jax[cuda12]`` in gpu). A pinned package that the ``.in`` names
   only through a shared ``-r`` file gets that file inlined; one the base's lock has only as a dependency is added
   as a line. A package the base's lock lacks, or a pin equal to the base's, is an error;
3. its hashed locks: ``images/lock.sh <id>`` (the ``uv pip compile`` of ``make lock``), starting from a copy of the
   base's lock, which uv keeps as its preference: only what the pins force moves. ``lock.sh`` then runs
   ``make stacks``' writer (compose.yaml, compose.gpu.yaml, images/stacks.mk).

Running ``add`` again with the same input rewrites the same files (idempotent). ``refresh`` (run by ``make lock``)
rewrites every derived stack's ``.in`` from its base's current one.

``python3 -m bench.host versions add --base keras3-jax --pins "keras==3.14.1 keras-hub==0.29.1"``,
``python3 -m bench.host versions refresh``, ``python3 -m bench.host versions pair BASE CANDIDATE`` (the line
``make compare-versions`` prints), ``python3 -m bench.host versions rounds`` (its default rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.core.stacks import DERIVED_FILE, STACKS, Stack, derive, normalize, parse_pin
from bench.host.stackfiles import lock_pins

ROOT = Path(__file__).resolve().parents[2]
#: A requirement line of a ``.in`` file: name, extras, the rest (specifier, marker, comment).
REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?(.*)")
INCLUDE = re.compile(r"\s*(?:-r|--requirement)[\s=]+(\S+)")
#: ``make compare-versions``' rounds unless REPEATS says otherwise: 4 per stack. The exact two-sided Mann-Whitney U
#: test of 4 vs 4 repeats can reach p = 2/70 = 0.029 < 0.05 (full separation); 3 vs 3 cannot go below 2/20 = 0.1.
COMPARE_ROUNDS = 4


class VersionError(ValueError):
    """Bad input for a version stack (the message is the one line the user sees)."""


class LockError(VersionError):
    """uv could not lock a derived stack (its own message is printed above this one)."""


@dataclass(frozen=True)
class Derived:
    """What ``add`` writes: the ``stack`` and, per flavor, the text of its ``.in`` file."""

    stack: Stack
    inputs: dict[str, str]


def _base_lock(base: Stack, flavor: str, root: Path) -> dict[str, str]:
    """Normalised name -> version pinned in the base's lock of ``flavor`` (empty when it has none yet)."""
    path = root / "images" / base.id / f"requirements-{flavor}.lock"
    if not path.is_file():
        return {}
    return {n: text.split("==", 1)[1].split()[0] for n, text in lock_pins(path.read_text()).items()}


def _names(path: Path) -> set[str]:
    """Normalised names of the requirements in a ``.in`` file and the files it includes."""
    out: set[str] = set()
    for line in path.read_text().splitlines():
        inc = INCLUDE.match(line)
        if inc:
            out |= _names((path.parent / inc.group(1)).resolve())
        elif (m := REQUIREMENT.match(line)) and not line.lstrip().startswith(("#", "-")):
            out.add(normalize(m.group(1)))
    return out


def _rewrite(path: Path, pins: dict[str, str], dest: Path, done: set[str]) -> list[str]:
    """The lines of ``.in`` file ``path`` for a file in folder ``dest``: each line naming a pinned package
    replaced (its extras and marker kept), an include holding one inlined, other includes re-pointed."""
    lines = []
    for line in path.read_text().splitlines():
        inc = INCLUDE.match(line)
        if inc:
            target = (path.parent / inc.group(1)).resolve()
            if _names(target) & set(pins):
                lines += [f"# {line.strip()}, inlined: it names a pinned package"]
                lines += _rewrite(target, pins, dest, done)
            else:
                lines.append(f"-r {os.path.relpath(target, dest)}")
            continue
        m = REQUIREMENT.match(line)
        if m and not line.lstrip().startswith(("#", "-")) and normalize(m.group(1)) in pins:
            name = normalize(m.group(1))
            marker = m.group(3).split(";", 1)[1].split("#")[0].strip() if ";" in m.group(3) else ""
            new = f"{m.group(1)}{m.group(2) or ''}=={pins[name]}" + (f" ; {marker}" if marker else "")
            lines.append(f"{new}  # version stack; base: {line.strip()}")
            done.add(name)
        else:
            lines.append(line)
    return lines


def derived_inputs(base: Stack, pins: Sequence[str], root: Path = ROOT) -> Derived:
    """The derived stack of ``base`` with ``pins`` and its ``.in`` text per flavor (nothing is written).

    Raises:
        VersionError: unknown or derived base, a bad pin, a package the base's requirements and lock lack, or a
            pin equal to what the base's lock has.
    """
    try:
        stack = derive(base, tuple(pins))
    except ValueError as e:
        raise VersionError(str(e)) from None
    want = dict(parse_pin(p) for p in stack.pins)
    texts = {}
    for v in base.flavors:
        src = root / "images" / base.id / f"requirements-{v}.in"
        if not src.is_file():
            raise VersionError(f"{base.id} has no {src.relative_to(root)}")
        locked = _base_lock(base, v, root)
        for name, version in want.items():
            if locked.get(name) == version:
                raise VersionError(f"{name}=={version} is what {base.id}'s {v} lock has already: nothing to change")
        dest = root / "images" / stack.id
        done: set[str] = set()
        lines = [f"# {stack.id}: {base.id}'s requirements-{v}.in with {', '.join(stack.pins)}.",
                 "# Written by `make version-stack` (bench/host/versions.py); `make lock` rewrites it from the base's.",
                 *_rewrite(src, want, dest, done)]
        for name in sorted(set(want) - done):
            if name not in locked:
                raise VersionError(f"{base.id} has no package {name!r} (not in its requirements-{v}.in nor its lock)")
            lines.append(f"{name}=={want[name]}  # version stack; base's lock: {name}=={locked[name]}")
        texts[v] = "\n".join(lines) + "\n"
    return Derived(stack, texts)


def declarations(path: Path) -> list[dict]:
    """The entries of a derived-stacks file (``stacks.DERIVED_FILE``); empty when it does not exist."""
    return json.loads(path.read_text()) if path.is_file() else []


def write_declaration(path: Path, stack: Stack) -> bool:
    """Add ``stack``'s ``{"base", "pins"}`` entry to ``path`` unless there; entries sorted by base and pins.
    Returns whether the file changed."""
    entries = declarations(path)
    entry = {"base": stack.base, "pins": list(stack.pins)}
    if entry in entries:
        return False
    entries = sorted([*entries, entry], key=lambda e: (e["base"], e["pins"]))
    path.write_text(json.dumps(entries, indent=2) + "\n")
    return True


def remove_declaration(path: Path, stack: Stack) -> None:
    """Drop ``stack``'s entry from ``path`` (undoing ``write_declaration`` when its locks fail)."""
    entries = [e for e in declarations(path) if e != {"base": stack.base, "pins": list(stack.pins)}]
    path.write_text(json.dumps(entries, indent=2) + "\n")


def write_inputs(d: Derived, root: Path) -> None:
    """Write ``d``'s ``.in`` files; seed each missing lock with the base's (uv's preference: a minimal move)."""
    folder = root / "images" / d.stack.id
    folder.mkdir(parents=True, exist_ok=True)
    for v, text in d.inputs.items():
        (folder / f"requirements-{v}.in").write_text(text)
        lock, base_lock = folder / f"requirements-{v}.lock", root / "images" / str(d.stack.base) / lock_name(v)
        if not lock.exists() and base_lock.is_file():
            shutil.copyfile(base_lock, lock)


def lock_name(flavor: str) -> str:
    """A stack's lock file name for ``flavor``."""
    return f"requirements-{flavor}.lock"


def add(base_id: str, pins: Sequence[str], root: Path = ROOT, run: Callable[..., int] = subprocess.call) -> Stack:
    """Declare, write and lock ``base_id`` + ``pins`` (module docstring); ``run`` runs ``images/lock.sh <id>``.

    Raises:
        VersionError: as ``derived_inputs``. LockError: uv could not lock it (then nothing new is left behind).
    """
    if base_id not in STACKS:
        raise VersionError(f"unknown base stack {base_id!r}; known: {', '.join(STACKS)}")
    d = derived_inputs(STACKS[base_id], pins, root)
    declared = root / DERIVED_FILE.relative_to(ROOT)
    folder = root / "images" / d.stack.id
    new_folder = not folder.exists()
    added = write_declaration(declared, d.stack)
    write_inputs(d, root)
    if run(["bash", str(root / "images" / "lock.sh"), d.stack.id]) != 0:
        if added:
            remove_declaration(declared, d.stack)
        if new_folder:
            shutil.rmtree(folder)
        raise LockError(f"uv could not lock {d.stack.id} (its message is above); nothing was kept")
    return d.stack


def refresh(root: Path = ROOT) -> list[str]:
    """Rewrite every derived stack's ``.in`` files from its base's current ones; returns the files that changed.

    Raises:
        VersionError: a pin no longer applies to its base (e.g. the base now has that version).
    """
    changed = []
    for s in STACKS.values():
        if s.base is None:
            continue
        d = derived_inputs(STACKS[s.base], s.pins, root)
        for v, text in d.inputs.items():
            path = root / "images" / s.id / f"requirements-{v}.in"
            if not path.is_file() or path.read_text() != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                changed.append(str(path.relative_to(root)))
    return changed


def pair(base_id: str, candidate_id: str) -> str:
    """The line ``make compare-versions`` prints about ``base_id`` vs ``candidate_id``: the candidate's pins when it
    is derived from the base, else a note that the two are not base and derived.

    Raises:
        VersionError: an unknown stack, or the same stack twice.
    """
    for sid in (base_id, candidate_id):
        if sid not in STACKS:
            raise VersionError(f"unknown stack {sid!r}; known: {', '.join(STACKS)}")
    if base_id == candidate_id:
        raise VersionError(f"BASE and CANDIDATE are both {base_id}")
    cand = STACKS[candidate_id]
    if cand.base == base_id:
        return f"compare-versions: {candidate_id} is {base_id} with {', '.join(cand.pins)}"
    return (f"compare-versions: note: {candidate_id} is not derived from {base_id} (its base: {cand.base or 'none'}): "
            "the comparison is of two stacks, not of one version change")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``versions add|refresh|pair|rounds`` (module docstring)."""
    p = sub.add_parser("versions", help="version stacks: add one (make version-stack), refresh, check a pair "
                       "(make compare-versions)", description=__doc__.splitlines()[0])
    cmd = p.add_subparsers(dest="cmd", required=True)
    a = cmd.add_parser("add", help="declare, write and lock a derived stack")
    a.add_argument("--base", required=True)
    a.add_argument("--pins", required=True, help='space-separated name==version, e.g. "keras==3.14.1"')
    cmd.add_parser("refresh", help="rewrite the derived stacks' .in files from their bases'")
    c = cmd.add_parser("pair", help="check BASE and CANDIDATE for make compare-versions")
    c.add_argument("base")
    c.add_argument("candidate")
    cmd.add_parser("rounds", help="print make compare-versions' default rounds (COMPARE_ROUNDS)")
    p.set_defaults(main=main, parser=p)


def main(args: argparse.Namespace) -> int:
    """``versions ...`` (module docstring). Bad input: one line on stderr, exit 2; a failed lock: exit 1."""
    try:
        if args.cmd == "add":
            s = add(args.base, args.pins.split())
            print(f"version-stack: {s.id} ({', '.join(s.pins)} on {s.base}): images/{s.id}/, "
                  f"{DERIVED_FILE.relative_to(ROOT)}; run it: make bench-{s.id}, or make compare-versions "
                  f"BASE={s.base} CANDIDATE={s.id}")
        elif args.cmd == "refresh":
            for f in refresh():
                print(f"wrote {f}")
        elif args.cmd == "rounds":
            print(COMPARE_ROUNDS)
        else:
            print(pair(args.base, args.candidate))
    except VersionError as e:
        print(f"{args.parser.prog} {args.cmd}: {e}", file=sys.stderr)
        return 1 if isinstance(e, LockError) else 2
    return 0
