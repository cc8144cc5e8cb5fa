"""Every test process keeps oper8d's compile cache (``oper8d.bundle.cache``) in a folder of
its own, never in the user's ``~/.cache``; CLI subprocesses inherit it. Tests of the cache
itself point ``XDG_CACHE_HOME`` at their own ``tmp_path``."""

from __future__ import annotations

import os
import tempfile

os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="oper8d-test-cache-")
os.environ.pop("OPER8D_NO_CACHE", None)
