#!/usr/bin/env bash
# The SkyPilot task's setup (cloud/dlbench.sky.yaml), on the VM itself: what `make doctor` and `make bench-all`
# need there, each installed only where missing: on an image that has everything it installs nothing, and it is
# safe to rerun (a managed job reruns it on every new VM).
#   - make, git, python3 >= 3.10 (the host preflight), curl and gpg (the installs below): apt-get
#   - Docker Engine with the Compose plugin: Docker's convenience script (https://docs.docker.com/engine/install/ubuntu/)
#   - the NVIDIA Container Toolkit: NVIDIA's apt repository and key, then `nvidia-ctk runtime configure` for
#     Docker (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html)
# The NVIDIA driver comes with the VM image (the clouds' GPU images have one); without it this stops.
# Docker's Compose is left to `make doctor`, which checks it (get.docker.com installs the plugin).
set -euo pipefail

KEYRING=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
NVIDIA_REPO=https://nvidia.github.io/libnvidia-container

say() { echo "dlbench setup: $*"; }
die() { echo "dlbench setup: $*" >&2; exit 1; }
apt_install() {
  sudo apt-get update -qq
  sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

if [ -n "${KUBERNETES_SERVICE_HOST:-}" ]; then
  # A SkyPilot cluster on Kubernetes is a pod: Docker inside it needs a privileged pod and gets no GPU.
  die "this is a Kubernetes pod: run the Kubernetes Job instead (make cloud-k8s, README \"Run on the cloud\")"
fi
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null; }; then
  die "no NVIDIA driver on this VM (nvidia-smi -L fails): use a GPU image that has one"
fi

tools=()
for pair in make:make git:git python3:python3 curl:curl gpg:gnupg; do
  command -v "${pair%%:*}" >/dev/null || tools+=("${pair#*:}")
done
if [ ${#tools[@]} -gt 0 ]; then
  say "installing ${tools[*]}"
  apt_install "${tools[@]}"
fi
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "python3 is older than 3.10 (the preflight needs 3.10+)"

# Downloads go to files first: a failed download stops here, not halfway through a pipe.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v docker >/dev/null; then
  say "installing Docker Engine"
  curl -fsSL https://get.docker.com -o "$tmp/get-docker.sh"
  sudo sh "$tmp/get-docker.sh"
fi
sudo docker info >/dev/null 2>&1 || sudo systemctl start docker

if ! command -v nvidia-ctk >/dev/null; then
  say "installing the NVIDIA Container Toolkit"
  curl -fsSL "$NVIDIA_REPO/gpgkey" -o "$tmp/gpgkey"
  sudo gpg --dearmor --yes -o "$KEYRING" "$tmp/gpgkey"
  curl -fsSL "$NVIDIA_REPO/stable/deb/nvidia-container-toolkit.list" -o "$tmp/toolkit.list"
  sed "s#deb https://#deb [signed-by=$KEYRING] https://#g" "$tmp/toolkit.list" |
    sudo tee /etc/apt/sources.list.d/nvidia-container-toolkit.list >/dev/null
  apt_install nvidia-container-toolkit
fi
runtimes=$(sudo docker info --format '{{json .Runtimes}}' 2>/dev/null || true)
case $runtimes in
  *'"nvidia"'*) ;;
  *) say "configuring Docker's nvidia runtime"
     sudo nvidia-ctk runtime configure --runtime=docker
     sudo systemctl restart docker;;
esac

# Later logins may use Docker without sudo; cloud/run.sh uses sudo while this session's groups lack it.
me=$(id -un)
case " $(id -nG "$me") " in
  *" docker "*) ;;
  *) sudo usermod -aG docker "$me";;
esac
say "ready: $(sudo docker --version)"
