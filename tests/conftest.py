"""Settings for every test.

Hypothesis: no per-example deadline. Its default (200 ms) fails a correct program on a busy
machine (CI runs the suite on 2 shared cores), and a property must not be able to fail on a
correct program; time limits of our own code are tested where they are a feature.

Every test process keeps oper8d's compile cache (``oper8d.bundle.cache``) in a folder of
its own, never in the user's ``~/.cache``; CLI subprocesses inherit it. Tests of the cache
itself point ``XDG_CACHE_HOME`` at their own ``tmp_path``.
"""

from __future__ import annotations

import os
import tempfile

from hypothesis import settings

settings.register_profile("oper8d", deadline=None)
settings.load_profile("oper8d")

os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="oper8d-test-cache-")
os.environ.pop("OPER8D_NO_CACHE", None)
