"""Registry tags named by what an image is built from, so that a stale image is never reused by mistake.

An image's tag is ``<flavor>-<12 hex>``: a SHA-256 over every input of its build (the Dockerfile, the
install script and uv's own lock, the C-toolchain script, the stack's lock for the flavor and its shared
layer's and sublayer's locks, the build arguments from ``bench/core/stacks.py``, and the bench package itself).
A changed lock, Dockerfile or harness is a new tag; the same inputs always give the same tag, on any machine and
in any checkout.

``python3 -m bench.host imagetag STACK|collector FLAVOR`` prints the tag (the Makefile's ``push`` and
``images``).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from bench.core.stacks import get_stack

ROOT = Path(__file__).resolve().parents[2]
COMMON = ("images/install.sh", "images/uv.lock.txt", "pyproject.toml")
#: The collector's one image flavor (the Makefile's ``for_images``).
COLLECTOR_FLAVOR = "latest"


def inputs(image: str, flavor: str, root: Path = ROOT) -> list[Path]:
    """The files the build of ``image`` (a stack id, or ``collector``) at ``flavor`` reads, sorted.

    Raises:
        KeyError: an unknown stack, or a flavor it has none of (``Stack.flavors``; the collector's: ``latest``).
        FileNotFoundError: a missing input (e.g. no lock for the flavor).
    """
    if image == "collector":
        if flavor != COLLECTOR_FLAVOR:
            raise KeyError(f"the collector's flavor is {COLLECTOR_FLAVOR!r}, not {flavor!r}")
        own = ["images/collector/Dockerfile", "images/collector/requirements.lock"]
    else:
        stack = get_stack(image)  # KeyError for an unknown stack
        if flavor not in stack.flavors:
            raise KeyError(f"{image} has no flavor {flavor!r}; its flavors: {', '.join(stack.flavors)}")
        own = ["images/Dockerfile", "images/c-toolchain.sh", "images/imports.py",
               f"images/{image}/requirements-{flavor}.lock"]
        own += [f"images/layers/{layer}-{flavor}.lock" for layer in (stack.layer, stack.sublayer) if layer]
    # every file the image copies from bench/: code and its package data (the FLOP table MFU reads, the sweep grids)
    package = [f for f in (root / "bench").rglob("*") if f.is_file() and "__pycache__" not in f.parts]
    files = [root / p for p in (*COMMON, *own)] + sorted(package)
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"{f.relative_to(root)} (an input of {image}:{flavor}) does not exist")
    return sorted(files)


def tag(image: str, flavor: str, root: Path = ROOT) -> str:
    """``<flavor>-<first 12 hex of SHA-256>`` over the inputs' paths and contents and the build arguments.

    Raises:
        as ``inputs``.
    """
    h = hashlib.sha256()
    args = {} if image == "collector" else get_stack(image).build_args()
    h.update(repr(sorted(args.items())).encode())
    for f in inputs(image, flavor, root):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return f"{flavor}-{h.hexdigest()[:12]}"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``imagetag STACK|collector FLAVOR`` (``python3 -m bench.host imagetag``)."""
    p = sub.add_parser("imagetag", help="print an image's registry tag, named by its build inputs (make push, "
                       "make images)", description=__doc__.splitlines()[0])
    p.add_argument("image", metavar="STACK|collector")
    p.add_argument("flavor", metavar="FLAVOR", help="cpu or gpu (the collector's: latest)")
    p.set_defaults(main=main, parser=p)


def main(args: argparse.Namespace) -> int:
    """``imagetag``: print the tag; exit 2 for an unknown stack or flavor, 1 for a missing input."""
    try:
        print(tag(args.image, args.flavor))
    except KeyError as e:
        args.parser.error(str(e.args[0]))
    except FileNotFoundError as e:
        print(f"{args.parser.prog}: {e}", file=sys.stderr)
        return 1
    return 0
