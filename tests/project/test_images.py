"""The image recipes, read as text (no Docker): what every stack image must do at build time."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = [ROOT / "images" / "Dockerfile", ROOT / "images" / "collector" / "Dockerfile"]


def test_every_install_precompiles_bytecode():
    """The images run as an unprivileged user with PYTHONDONTWRITEBYTECODE: a module without bytecode from
    the build is compiled from source in every cell (it cost 5-7 s of each smoke cell, and modules first
    imported during the first epoch inflated first_epoch_s). Each build checks what it imports (images/imports.py)."""
    assert sorted(ROOT.glob("images/**/Dockerfile")) == sorted(DOCKERFILES)  # one for every stack, the collector
    # pip (which installs uv itself) compiles by default; uv does not
    sync = [line for line in (ROOT / "images" / "install.sh").read_text().splitlines() if line.startswith("set -- ")]
    assert sync and all("--compile-bytecode" in line for line in sync)
    for dockerfile in DOCKERFILES:
        installs = [line for line in dockerfile.read_text().splitlines() if "uv pip install" in line]
        assert installs, dockerfile
        assert all("--compile-bytecode" in line for line in installs), dockerfile


def test_image_build_fails_on_a_module_without_bytecode(tmp_path):
    """images/imports.py, the build's import check: a venv module imported from source fails the build."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    py = tmp_path / "venv" / "bin" / "python"
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "fresh_mod.py").write_text("__version__ = '1.0'\n")
    check = [py, "-B", str(ROOT / "images" / "imports.py"), "fresh_mod"]
    p = subprocess.run(check, capture_output=True, text=True)
    assert p.returncode != 0 and "1 imported modules have no bytecode" in p.stderr and "fresh_mod.py" in p.stderr
    subprocess.run([py, "-m", "compileall", "-q", str(site / "fresh_mod.py")], check=True)
    p = subprocess.run(check, capture_output=True, text=True)
    assert p.returncode == 0 and "fresh_mod 1.0" in p.stdout, p.stderr
