"""Scaffolding: ``oper8d init`` writes a new bundle that validates and passes its tests.

``create.scaffold`` does the work; ``templates`` holds the files as text. Used by
``cli/init_cmd.py``.
"""

from oper8d.scaffold.create import ScaffoldOptions, default_kind, scaffold

__all__ = ["ScaffoldOptions", "default_kind", "scaffold"]
