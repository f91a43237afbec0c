"""A sandbox VM for cloud/setup.sh and cloud/run.sh: fake system tools on a PATH of their own, each logging
its argv to one file, and "installing" a package copies its fakes onto the PATH."""

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETUP, RUN = ROOT / "cloud" / "setup.sh", ROOT / "cloud" / "run.sh"
BASH = shutil.which("bash")
# The real tools the scripts may use beside the fakes; the PATH holds nothing else, so the host's own make,
# git, docker, curl... are never found (and never run).
REAL = ("sh", "env", "sed", "cat", "mkdir", "mktemp", "rm", "head", "tr", "cp", "chmod", "touch")
GPU = "NVIDIA H100 80GB HBM3"

FAKES = {
    # what sudo runs runs as "root": the fake docker answers other users only once they are in its group
    "sudo": 'export FAKE_ROOT=1\nexec "$@"',
    "apt-get": '[ "$1" = install ] || exit 0\nfor p in "$@"; do [ -d "$AVAIL/$p" ] && cp "$AVAIL/$p"/* "$BIN/"; done\n'
               'exit 0',
    "tee": 'cat > "$STATE/tee.in"',  # never the real tee: it would write to /etc
    "systemctl": "", "usermod": "",
    "id": 'case "$1" in -un) echo ubuntu;; -nG) echo "ubuntu adm$([ -e "$STATE/docker-group" ] && echo " docker")";; '
          'esac',
    "nvidia-smi": f'case "$*" in -L) echo "GPU 0: {GPU} (UUID: GPU-0)";; *query-gpu=name*) echo "{GPU}";; esac',
}
CURL = r"""for a in "$@"; do [ "$prev" = -o ] && out=$a; case $a in http*) url=$a;; esac; prev=$a; done
case $url in
  *get.docker.com) printf '%s\n' 'cp "$AVAIL"/docker/* "$BIN"/' > "$out";;
  *gpgkey) echo "-----BEGIN PGP PUBLIC KEY BLOCK-----" > "$out";;
  *.list) echo 'deb https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /' > "$out";;
esac"""
DOCKER = """case "$*" in
  "info --format {{json .Runtimes}}") [ -e "$STATE/nvidia-runtime" ] && echo '{"nvidia":{},"runc":{}}' ||
    echo '{"runc":{}}';;
  info) [ -n "$FAKE_ROOT" ] || [ -e "$STATE/docker-group" ];;
  --version) echo "Docker version 28.0.0";;
esac"""
# what ``python3 -m bench.host commit`` prints (state/commit, else a clean HEAD; it fails where state/no-head is)
PYTHON3 = 'case "$*" in "-m bench.host commit") [ -e "$STATE/no-head" ] && exit 1; cat "$STATE/commit" 2>/dev/null ||' \
    ' echo 0123abc;; esac'
INSTALLABLE = {  # what installing a package puts on the PATH (Docker: what get.docker.com's script installs)
    "make": {"make": ""}, "git": {"git": ""}, "python3": {"python3": PYTHON3}, "curl": {"curl": CURL},
    "gnupg": {"gpg": ""}, "nvidia-container-toolkit": {"nvidia-ctk": 'touch "$STATE/nvidia-runtime"'},
    "docker": {"docker": DOCKER},
}


class VM:
    """A sandbox: bin/ (the PATH), avail/ (what each install adds), state/, tmp/ (TMPDIR), the log of calls."""

    def __init__(self, tmp: Path, installed: tuple[str, ...] = (), state: tuple[str, ...] = ()):
        self.bin, self.avail, self.state, self.tmp = (tmp / d for d in ("bin", "avail", "state", "tmp"))
        self.log = tmp / "calls.log"
        for d in (self.bin, self.avail, self.state, self.tmp):
            d.mkdir()
        for name in REAL:
            (self.bin / name).symlink_to(shutil.which(name))
        for name, body in FAKES.items():
            self._fake(self.bin, name, body)
        for pkg, fakes in INSTALLABLE.items():
            (self.avail / pkg).mkdir()
            for name, body in fakes.items():
                self._fake(self.avail / pkg, name, body)
                if pkg in installed:
                    self._fake(self.bin, name, body)
        for flag in state:
            (self.state / flag).touch()

    def _fake(self, where: Path, name: str, body: str) -> None:
        f = where / name
        f.write_text(f'#!/bin/sh\necho "{name} $*" >> "{self.log}"\n{body}\n')
        f.chmod(0o755)

    def run(self, script: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
        e = {"PATH": str(self.bin), "HOME": str(self.state), "TMPDIR": str(self.tmp), "AVAIL": str(self.avail),
             "BIN": str(self.bin), "STATE": str(self.state), **env}
        return subprocess.run([BASH, str(script), *args], cwd=ROOT, env=e, capture_output=True, text=True,
                              timeout=60)

    def calls(self) -> list[str]:
        """The logged argv, in order, the script's temporary folder written ``<tmp>``."""
        if not self.log.exists():
            return []
        return [re.sub(re.escape(str(self.tmp)) + r"/tmp\.\w+", "<tmp>", c) for c in self.log.read_text().splitlines()]
