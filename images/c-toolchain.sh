#!/bin/sh
# Installs what torch.compile needs at run time on a GPU: Triton builds a small C launcher for every
# kernel with a C compiler against Python's headers (slim Python bases ship neither compiler nor,
# on Debian's own python3, the headers). No C++ compiler: on CPU, inductor's C++ kernels stay
# unsupported (bench.models.engines.toolchain.torch_compile_blocker), which keeps CPU smoke cells cheap.
set -eu
apt-get update -qq
apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null
include=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
if [ ! -f "$include/Python.h" ]; then
    apt-get install -y -qq --no-install-recommends libpython3-dev >/dev/null
fi
test -f "$include/Python.h"
rm -rf /var/lib/apt/lists/*
cc --version | head -n 1
