"""The ``oper8d`` process itself (``python -m oper8d``): what a short command can skip.

* No cyclic garbage collection while the commands' modules load: imports build many
  long-lived objects and no garbage (the command group turns the collector back on).
* oper8d's dataclasses and every regular expression are made from what an earlier
  process compiled (``cli/startup_code.py``).
* After ``validate``, ``render`` or ``graph`` (bounded work that leaves nothing to clean
  up: no threads, no temporary folders, every file it wrote closed) the process ends
  without the interpreter's teardown, which frees every module and object one by one
  (about a fifteenth of a warm ``render``): output flushed, then ``os._exit`` with the
  command's exit status. Any other command, an exit status that is not a number, or
  output that cannot be flushed (a closed pipe) ends the usual way.

Only the real process entry does this; commands run in-process (tests, ``CliRunner``)
return as usual.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import NoReturn

from oper8d.cachefiles import cache_dir
from oper8d.cli.startup_code import reused_startup_code

__all__ = ["BOUNDED_COMMANDS", "ProcessRun", "run"]

#: commands whose process may end without the interpreter's teardown
BOUNDED_COMMANDS = frozenset({"validate", "render", "graph"})


class ProcessRun:
    """Handed to the command group as its ``obj``: records the command it ran."""

    __slots__ = ("command",)

    def __init__(self) -> None:
        self.command: str | None = None


def run() -> NoReturn:
    """Run the command line in ``sys.argv`` and end the process."""
    gc.disable()
    process = ProcessRun()
    try:
        # the classes and regular expressions made while the command runs (most at the
        # imports below and at the command's own) come from stored code
        with reused_startup_code(cache_dir()):
            from oper8d.cli.main import main

            main(obj=process)
    except SystemExit as done:
        code = done.code
        if process.command not in BOUNDED_COMMANDS or not (code is None or isinstance(code, int)):
            raise
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            raise done from None
        os._exit(code or 0)
    sys.exit(0)  # (click's standalone mode ends with SystemExit)
