"""Build check: import each module named in argv[1] (comma-separated), print its version, and fail when a
module the imports loaded from the image's venv has no bytecode next to it. The images run with
PYTHONDONTWRITEBYTECODE as an unprivileged user, so such a module would be compiled from source in every cell.

    python imports.py keras,jax,keras_hub
"""

import importlib
import importlib.util
import os
import sys

for name in filter(None, sys.argv[1].split(",")):
    print(name, getattr(importlib.import_module(name), "__version__", ""))
missing = sorted(f for f in (getattr(m, "__file__", None) for m in list(sys.modules.values()))
                 if f and f.endswith(".py") and f.startswith(sys.prefix)
                 and not os.path.exists(importlib.util.cache_from_source(f)))
if missing:
    sys.exit(f"{len(missing)} imported modules have no bytecode, e.g. {missing[:5]}")
