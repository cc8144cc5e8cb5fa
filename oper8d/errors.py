"""Every exception oper8d raises, in one tree.

The engine branches on these types, never on message text::

    Oper8dError
    ├── BundleError            the bundle cannot be loaded; carries every Problem found
    └── ReconcileError         raised while reconciling one CR
        ├── FatalError         the rollout stops; the CR needs a fix or the cluster is broken
        │   ├── ConfigError    bad CR spec, bad config, a template that fails to render
        │   ├── ClusterError   the API server refused or failed a request
        │   └── RolloutError   anything else that makes a rollout impossible
        └── ExpectedError      transient: the rollout waits and is retried
            ├── PreconditionError   something a component needs is not there yet
            └── VerificationError   a deployed component is not ready yet

Fatal errors mark a component *failed*; expected errors leave it *unverified*
(verify) or *waiting* (precondition). Messages say what went wrong, where
(``file:line:col`` or the CR field) and, when we know, what to do about it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class SourcePos:
    """A place in a bundle file, 1-based, printed as ``file:line:col``."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if not self.line:
            return self.file
        if not self.col:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a bundle or a CR."""

    message: str
    pos: SourcePos | None = None
    field: str | None = None  # CR field path, e.g. "spec.replicas"

    def __str__(self) -> str:
        where = str(self.pos) if self.pos else (self.field or "")
        return f"{where}: {self.message}" if where else self.message


class Oper8dError(Exception):
    """Base of every oper8d error."""


class BundleError(Oper8dError):
    """A bundle failed to load or validate. ``problems`` lists every error found."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class ReconcileError(Oper8dError):
    """Base of errors raised while reconciling a CR."""

    #: True: the component fails and the rollout stops; False (``ExpectedError``): it waits
    fatal: bool = True

    def __init__(self, message: str, *, pos: SourcePos | None = None, field: str | None = None):
        self.message = message
        self.pos = pos
        self.field = field
        super().__init__(str(Problem(message, pos, field)))


class FatalError(ReconcileError):
    """The rollout cannot proceed; the component that raised it is failed."""


class ConfigError(FatalError):
    """The CR or its config is invalid, or a template fails to render. Fix the input."""


class ObjectError(ConfigError):
    """A ConfigError about one place in a rendered object: ``path``, its keys and list
    indices (empty: the object as a whole), lets a text template's error be given the
    template's line of it."""

    def __init__(
        self, message: str, *, pos: SourcePos | None = None, path: tuple[str | int, ...] = ()
    ) -> None:
        super().__init__(message, pos=pos)
        self.path = path


class ClusterError(FatalError):
    """The cluster refused or failed a request (after retries). ``causes``: the
    ``(field, message)`` pairs of a refusal's Status details (``spec.selector``,
    ``Invalid value: ...: field is immutable``), when the server gave them."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        causes: tuple[tuple[str, str], ...] = (),
        **kw: object,
    ):
        self.status = status
        self.causes = causes
        super().__init__(message, **kw)  # type: ignore[arg-type]


class RolloutError(FatalError):
    """Any other fatal failure of a rollout."""


class ExpectedError(ReconcileError):
    """A transient condition: the rollout waits and is retried later."""

    fatal = False


class PreconditionError(ExpectedError):
    """A component cannot be deployed yet (``require()`` failed, a dependency edge's
    condition does not hold yet)."""


class VerificationError(ExpectedError):
    """A deployed component is not ready yet."""
