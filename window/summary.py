"""The GPU window's summary (window/run.sh writes it to OUT/summary.md after every part): what it asked for and what
the records say they ran on; each part's exit status and seconds; every cell, one row per cell id, with its status,
ms/step, first epoch or step, process seconds, its profile (taken, or `no:` and why) and reason; the self-test's
counts and failed checks; each fidelity ratio; and where the host's own packages differ from
window/host-packages.txt, the list the rehearsal mirrors. Standard library only: it reads the JSON as written.

    python3 window/summary.py WORK DEVICE SIZE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown pipe table as lines: the header, its separator, one line per row, each cell as given (a text that
    may hold a line break or ``|`` goes through ``_line`` first). The summary's one table writer; not the report's
    ``md_table`` (tabulate, under bench.results): this script runs on the GPU host's python3 with the standard
    library alone, and the rehearsal's environment (window/host-packages.txt) holds no tabulate."""
    return ["| " + " | ".join(cells) + " |" for cells in (head, ["---"] * len(head), *rows)]


def parts(work: Path) -> list[str]:
    """Each part's line of WORK/parts.tsv (part, exit status, seconds: window/run.sh writes them) as a table."""
    lines = (work / "parts.tsv").read_text().splitlines() if (work / "parts.tsv").exists() else []
    return table(["part", "exit", "seconds"], [line.split("\t") for line in lines])


def records(work: Path) -> list[dict]:
    """Every cell's final record under WORK/results/runs (not a repeat's, not a cell's input file)."""
    found = []
    for path in sorted((work / "results" / "runs").rglob("*.json")):
        if path.name.endswith(".cell.json") or "repeats" in path.parts or ".work" in path.parts:
            continue
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and "cell_id" in rec:
            found.append(rec)
    return found


def ran_on(recs: list[dict]) -> str:
    """What the records say they ran on, each distinct (device, GPU, driver, frameworks' Python) once: the heading
    names what the window asked for, this what took place (a cell refused the GPU, a second GPU model)."""
    seen = []
    for r in recs:
        env = r.get("env") or {}
        gpu = env.get("gpu") or {}
        where = (f"{r.get('device')} ({gpu.get('name')}, driver {gpu.get('driver')})" if gpu.get("name")
                 else f"{r.get('device')} (no GPU recorded)")
        where += f", Python {env.get('python')}" + (", native" if env.get("native") else "")
        if where not in seen:
            seen.append(where)
    return "Ran on, as the records say: " + ("; ".join(seen) if seen else "no record")


def _num(value: object, fmt: str = "{:.3g}") -> str:
    return fmt.format(value) if isinstance(value, (int, float)) else "-"


def cells(recs: list[dict]) -> list[str]:
    """Every record's line: cell id, status, mean ms/step, first epoch or step (s), process seconds, profile, reason."""
    rows = []
    for r in recs:
        m, p = r.get("metrics") or {}, r.get("process") or {}
        first = m.get("first_epoch_s", m.get("first_step_s"))
        rows.append([r["cell_id"], str(r.get("status")), _num(m.get("ms_per_step_mean")), _num(first),
                     _num(p.get("wall_s"), "{:.1f}"), profile(r), _line(r.get("reason"), 160)])
    return table(["cell", "status", "ms/step", "first epoch/step s", "process s", "profile", "reason"], rows)


def profile(rec: dict) -> str:
    """A record's profile column: ``-`` without a ``profile`` block, ``yes`` for one taken, else ``no:`` and why
    (``profile.reason``: it failed, was not taken, or the process ended during it)."""
    block = rec.get("profile")
    if not isinstance(block, dict):
        return "-"
    return f"no: {_line(block['reason'], 80)}" if block.get("reason") else "yes"


def _line(text: object, width: int) -> str:
    """``text``'s first line, at most ``width`` characters, ``|`` written ``/`` (a table cell); '' for none."""
    return str(text).replace("|", "/").splitlines()[0][:width] if text else ""


def instruments(work: Path) -> list[str]:
    out: list[str] = []
    selftest = work / "results" / "selftest.json"
    if selftest.exists():
        s = json.loads(selftest.read_text())
        out.append(f"selftest on {s.get('device')} ({(s.get('gpu') or {}).get('name')}): {s.get('counts')}, "
                   f"{_num(s.get('elapsed_s'), '{:.0f}')} s")
        out += [f"- FAIL {c['check']} {c.get('framework')}: measured {_num(c.get('measured'))}, reference "
                f"{_num(c.get('reference'))}, ratio {_num(c.get('ratio'), '{:.4f}')}: {c.get('reason')}"
                for c in s.get("checks", []) if c.get("verdict") == "fail"]
    for path in sorted((work / "results").glob("fidelity-*.json")):
        f = json.loads(path.read_text())
        ratios = ", ".join(f"{k} {_num(c.get('ratio'), '{:.4f}')}" for k, c in (f.get("cadences") or {}).items())
        out.append(f"fidelity {f.get('stack')} {f.get('workload')}: free-running "
                   f"{_num(f.get('handloop_ms_per_step'))} ms/step; ratios {ratios}")
    return out


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    return pins


def host_packages(work: Path) -> list[str]:
    """Where the host's own list (logs/pip-freeze.txt) differs from window/host-packages.txt."""
    host, listed = _pins(work / "logs" / "pip-freeze.txt"), _pins(ROOT / "window" / "host-packages.txt")
    if not host:
        return ["(no logs/pip-freeze.txt)"]
    diff = [f"- {n}: listed {v}, host {host.get(n, 'absent')}" for n, v in sorted(listed.items()) if host.get(n) != v]
    return diff or ["- every listed package is at the host's version"]


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    work, device, size = Path(argv[0]), argv[1], argv[2]
    recs = records(work)
    lines = [f"# GPU window: asked for {device}, size {size}", "", ran_on(recs), "", *parts(work), "",
             f"## Cells ({sum(r.get('status') == 'ok' for r in recs)} ok of {len(recs)})", "", *cells(recs), "",
             "## Instruments", "", *instruments(work), "",
             "## Host packages against window/host-packages.txt", "", *host_packages(work)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
