"""``oper8d trace``: a live CR's tree (components, objects, readiness, field managers,
what blocks a deletion), read with GET and LIST requests only. No click here: the CLI
(``cli/trace_cmd.py``) prints what :func:`trace_cr` returns."""

from oper8d.trace.build import trace_cr
from oper8d.trace.model import ComponentTrace, CrTrace, ObjectTrace, Trace
from oper8d.trace.reading import ReadOnly, UnknownKind, find_controller

__all__ = [
    "ComponentTrace",
    "CrTrace",
    "ObjectTrace",
    "ReadOnly",
    "Trace",
    "UnknownKind",
    "find_controller",
    "trace_cr",
]
