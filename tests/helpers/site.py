"""The committed results the site tests build from, found without the site's code."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"


def committed_csvs() -> list[Path]:
    """The committed runs, found without the site's code: every CSV in results/ and its folders one level down."""
    return sorted([*RESULTS.glob("*.csv"), *(p for p in RESULTS.glob("*/*.csv") if p.parent.name != "site")])
