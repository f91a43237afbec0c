#!/usr/bin/env bash
# Builds a local Debian bookworm image with Python 3.11, for machines that reach no container
# registry: debootstrap from the Debian mirror, then `docker import`. Usage: base-image.sh [NAME:TAG]
set -euo pipefail
image=${1:-dlbench-base:bookworm}
docker=${DOCKER:-docker}
if $docker image inspect "$image" >/dev/null 2>&1; then
    echo "base image $image exists"
    exit 0
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$root" http://deb.debian.org/debian >/dev/null
tar -C "$root" -c . | $docker import - "$image"
echo "built base image $image"
