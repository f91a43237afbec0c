#!/bin/sh
# Installs a locked, hashed requirements file into /opt/venv. Used by every image's Dockerfile.
#   install.sh LOCKFILE          the venv and uv (when missing), then LOCKFILE with uv (pip sync: exactly it)
#   install.sh --uv              the venv and uv only (/tmp/req/uv.lock.txt): a layer every stack image shares
#   install.sh --layer LOCKFILE  a shared layer's pins (images/layers/), added as they are (--no-deps: a
#                                subset of each member stack's lock, which its own install completes)
# Optional input:
#   /run/secrets/ca_bundle  a CA bundle (BuildKit secret `ca_bundle`) for TLS-intercepting proxies
set -eu
mode=sync
if [ "$1" = --layer ]; then
    mode=layer
    shift
fi
lock="$1"
if [ -s /run/secrets/ca_bundle ]; then
    export SSL_CERT_FILE=/run/secrets/ca_bundle PIP_CERT=/run/secrets/ca_bundle
fi
if [ ! -x /opt/venv/bin/uv ]; then
    python3 -m venv /opt/venv
    /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --require-hashes \
        -r /tmp/req/uv.lock.txt
fi
[ "$lock" = --uv ] && exit 0
# Bytecode now, not at run time: the images run with PYTHONDONTWRITEBYTECODE as an unprivileged user, so
# without it every cell compiled its ~3000 imported modules from source (5-7 s of each smoke cell, and
# modules imported lazily during the first epoch inflated first_epoch_s).
set -- --require-hashes --python /opt/venv/bin/python --no-cache --compile-bytecode
if [ "$mode" = layer ]; then
    exec /opt/venv/bin/uv pip install "$@" --no-deps -r "$lock"
fi
/opt/venv/bin/uv pip sync "$@" "$lock"

