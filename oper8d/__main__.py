"""``python -m oper8d``: the ``oper8d`` command (``oper8d.cli.process`` runs it).

No cyclic garbage collection from the first import: imports build many long-lived objects
and no garbage, and the collector's passes over them cost a short command such as
``render`` a few ms. The command group turns it back on for every command but the bounded
ones (``validate``, ``render``, ``graph``), whose process ends without it (``cli/process.py``).
"""

import gc

gc.disable()

from oper8d.cli.process import run  # noqa: E402

run()
