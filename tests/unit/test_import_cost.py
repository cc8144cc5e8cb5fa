"""What oper8d's modules cost when imported: every ``oper8d render`` pays it before any work.

A dataclass without a docstring gets one made from its signature at import
(``inspect.signature``, ~30 µs a class on CPython 3.11): each class a render imports says
why it exists.
"""

from __future__ import annotations

import subprocess
import sys

#: the modules an ``oper8d render`` imports, and a report of the dataclasses among them
#: whose docstring ``dataclasses`` made (run in a fresh interpreter: only what they import)
_UNDOCUMENTED = """
import dataclasses, sys
import oper8d.cli.main, oper8d.cli.schemas, oper8d.offline, oper8d.render_output
for module in [m for name, m in sys.modules.items() if name.startswith("oper8d")]:
    for name, value in vars(module).items():
        if isinstance(value, type) and value.__module__ == module.__name__:
            made = (value.__doc__ or "").startswith(value.__name__ + "(")
            if dataclasses.is_dataclass(value) and made:
                print(module.__name__, name)
"""


def test_every_dataclass_a_render_imports_has_its_own_docstring() -> None:
    command = [sys.executable, "-c", _UNDOCUMENTED]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == []
