"""The image recipes, read as text (no Docker): what every stack image must do at build time."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILES = [ROOT / "images" / "Dockerfile", ROOT / "images" / "collector" / "Dockerfile"]


def test_every_install_precompiles_bytecode():
    """The images run as an unprivileged user with PYTHONDONTWRITEBYTECODE: a module without bytecode from
    the build is compiled from source in every cell (it cost 5-7 s of each smoke cell, and modules first
    imported during the first epoch inflated first_epoch_s). The e2e test checks the built images."""
    assert sorted(ROOT.glob("images/**/Dockerfile")) == sorted(DOCKERFILES)  # one for every stack, the collector
    # pip (which installs uv itself) compiles by default; uv does not
    sync = [line for line in (ROOT / "images" / "install.sh").read_text().splitlines() if line.startswith("set -- ")]
    assert sync and all("--compile-bytecode" in line for line in sync)
    for dockerfile in DOCKERFILES:
        installs = [line for line in dockerfile.read_text().splitlines() if "uv pip install" in line]
        assert installs, dockerfile
        assert all("--compile-bytecode" in line for line in installs), dockerfile
