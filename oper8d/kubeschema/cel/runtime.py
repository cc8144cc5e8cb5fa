"""One CEL environment as a CRD's rules see it, and the verdict of one evaluation.

``Runtime`` compiles each rule once (a compile costs ~0.5 ms, an evaluation ~15 us) and
evaluates it with ``self`` (and ``oldSelf``) bound. The CEL core is imported by the first
rule compiled, so a process whose schemas have no rules never loads it.

Every outcome is one of three: passed, failed (with the runtime's error when the rule
raised one, as the apiserver reports an evaluation error as a failure), or unchecked
(with why): a rule that does not compile here (a Kubernetes library function not
implemented, ``library`` says which are), a runtime error that comes from a type this
environment cannot give the value (no matching overload), an input the library cannot
read as Go does, or the iteration budget of the CEL core (10,000 comprehension steps).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from oper8d.kubeschema.cel.library import UNSURE_MARK, declarations

#: runtime errors that say "this environment could not type the value", not "the rule
#: failed": the apiserver's type-checked environment would have evaluated the rule
_NOT_OURS = (
    "no matching overload",
    "No matching overloads",
    "Non-CEL value type",
    "Iteration budget exceeded",
    "Unimplemented type",
    UNSURE_MARK,
)


class Unchecked(Exception):
    """A rule this environment cannot evaluate: the message says why."""


@dataclass(frozen=True)
class Verdict:
    """``ok`` the rule held; ``error`` the runtime error that made it fail, if any."""

    ok: bool
    error: str | None = None


class Runtime:
    """Compiled rules, kept for the life of the owner (a ``CelValidator``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._env: Any = None
        self._cel: Any = None
        self._programs: dict[str, Any] = {}

    def _environment(self) -> tuple[Any, Any]:
        if self._env is None:
            try:
                from cel_expr_python import cel
                from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
            except ImportError as e:  # a platform without the CEL core's wheel
                raise Unchecked(f"the CEL runtime cannot be loaded ({e})") from None
            dyn = cel.Type.DYN
            variables = {"self": dyn, "oldSelf": dyn, "oper8dOldSelf": dyn}
            variables["oper8dHasOldSelf"] = cel.Type.BOOL  # (rules.py: optionalOldSelf)
            extensions = [
                ext_strings.ExtStrings(),
                ext_optional.ExtOptional(),
                ext_bindings.ExtBindings(),  # cel.bind: what rules.py makes of optionalOldSelf
            ]
            self._env = cel.NewEnv(
                variables=variables, extensions=extensions, functions=declarations(cel)
            )
            self._cel = cel
        return self._env, self._cel

    def program(self, rule: str) -> Any:
        """``rule`` compiled, or Unchecked naming the compiler's complaint."""
        with self._lock:
            found = self._programs.get(rule)
            if found is not None:
                return found
            env, _ = self._environment()
            try:
                program = env.compile(rule)
            except RuntimeError as e:
                program = Unchecked(f"does not compile here ({_first_line(e)})")
            self._programs[rule] = program
        return program

    def compiled(self, rule: str) -> Any:
        """``program(rule)``, raising its Unchecked."""
        program = self.program(rule)
        if isinstance(program, Unchecked):
            raise program
        return program

    def evaluate(self, rule: str, data: dict[str, Any]) -> Any:
        """The value of ``rule`` (a Python value); Unchecked, or ``Failed`` on a runtime
        error that the apiserver would report too."""
        program = self.compiled(rule)
        _, cel = self._environment()
        try:
            value = program.eval(data=data)
        except RuntimeError as e:  # the budget, or a value the core cannot hold
            raise _classified(_first_line(e)) from None
        if value.type() == cel.Type.ERROR:
            raise _classified(str(value.value()))
        return value.plain_value()

    def verdict(self, rule: str, data: dict[str, Any]) -> Verdict:
        """Whether ``rule`` holds for ``data``; Unchecked when this cannot tell."""
        try:
            value = self.evaluate(rule, data)
        except Failed as e:
            return Verdict(False, str(e))
        if not isinstance(value, bool):
            raise Unchecked(f"evaluates to {type(value).__name__}, not a boolean")
        return Verdict(value)


class Failed(Exception):
    """A runtime error the apiserver would meet as well (no such key, division by zero)."""


def _classified(message: str) -> Exception:
    for mark in _NOT_OURS:
        if mark in message:
            why = message.split(UNSURE_MARK, 1)[1].strip() if mark == UNSURE_MARK else message
            return Unchecked(f"cannot be evaluated here ({why})")
    return Failed(message)


def _first_line(e: Exception) -> str:
    """The core's message without its status code, position and container."""
    text = str(e).strip()
    for prefix in ("INVALID_ARGUMENT: ", "INTERNAL: "):
        text = text.removeprefix(prefix)
    line = text.splitlines()[0] if text else type(e).__name__
    line = re.sub(r"^ERROR: <input>:\d+:\d+: ", "", line)
    return line.replace(" (in container '')", "")
