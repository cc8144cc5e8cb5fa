"""``python -m oper8d``: the ``oper8d`` command.

No cyclic garbage collection while the command's modules load: imports build many
long-lived objects and no garbage, and the collector's passes over them cost about a tenth
of a short command such as ``render``. The command group turns it back on before any
command runs (``oper8d.cli.main``).
"""

import gc

gc.disable()

from oper8d.cli.main import main  # noqa: E402

main()
