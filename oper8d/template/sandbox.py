"""The Jinja sandbox with resource limits: how long a template may run and how much it may build.

Jinja's ``ImmutableSandboxedEnvironment`` keeps templates away from Python internals but does
not bound time or memory, and its optimizer even evaluates constant expressions while
*compiling* (``'a' * 10**9`` allocated a gigabyte in ``oper8d validate``). ``LimitedSandbox``
adds, from one :class:`~oper8d.limits.Limits`:

- **arithmetic and repetition**: ``*``, ``**``, ``%`` and ``+`` are intercepted binary
  operators (which also stops Jinja from folding them at compile time); a power, a product or
  a repetition whose result would exceed ``intBits`` / ``stringBytes`` / ``sequenceItems`` is
  refused *before* it is computed. ``~`` joins, string methods (``ljust``, ``center``,
  ``zfill``, ``replace``, ``format``, ``expandtabs``, ``join``) and the filters that take a
  width or build text (``format``, ``center``, ``indent``, ``replace``, ``join``, ``slice``)
  are checked the same way, and so are ``lipsum``'s counts;
- **time and loops**: every ``{% for %}`` iterable is wrapped so each iteration counts
  against ``loopIterations``; loop iterations, calls and operators check the render's
  deadline (``templateSeconds``), read from the injected clock.

A render (one expression, one inline object, one text template) runs inside
:meth:`LimitedSandbox.budget`; nested renders share the outer budget, so a caller can wrap a
whole component. Without a budget (compile time) only the size limits apply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment

from oper8d.clock import Clock
from oper8d.limits import LimitExceeded, Limits, check_expanded
from oper8d.template.deadline import Watchdog
from oper8d.template.sizes import CONTAINERS, SizeChecks, checked_filter, checked_lipsum
from oper8d.template.slots import Placed, TemplateText, as_value, as_values

__all__ = ["Budget", "LimitedSandbox", "guard_loops", "plain_callable"]

#: how many hook calls pass between two reads of the clock
_CLOCK_EVERY = 64


class Budget:
    """What one render has used so far: loop iterations and time."""

    __slots__ = ("_calls", "_clock", "_deadline", "_limits", "iterations")

    def __init__(self, limits: Limits, clock: Clock) -> None:
        self._limits = limits
        self._clock = clock
        self._deadline = clock.monotonic() + limits.template_seconds
        self._calls = 0
        self.iterations = 0

    def tick(self) -> None:
        """One unit of work; reads the clock every few calls."""
        self._calls += 1
        if self._calls % _CLOCK_EVERY == 0:
            self.check_time()

    def check_time(self) -> None:
        if self._clock.monotonic() > self._deadline:
            raise LimitExceeded(
                "template_seconds",
                f"the template ran longer than {self._limits.template_seconds:g} s",
            )

    def iterate(self) -> None:
        self.iterations += 1
        if self.iterations > self._limits.loop_iterations:
            raise LimitExceeded(
                "loop_iterations",
                f"the template's loops ran more than {self._limits.loop_iterations} times",
            )
        self.tick()


def _is_guarded(node: nodes.Node) -> bool:
    return (
        isinstance(node, nodes.Call)
        and isinstance(node.node, nodes.EnvironmentAttribute)
        and node.node.name == "oper8d_loop"
    )


def guard_loops(ast: nodes.Template) -> nodes.Template:
    """Route the iterable of every ``{% for %}`` in ``ast`` through
    ``LimitedSandbox.oper8d_loop`` (in place), which counts the iterations."""
    for loop in ast.find_all(nodes.For):
        if not _is_guarded(loop.iter):
            guard = nodes.EnvironmentAttribute("oper8d_loop", lineno=loop.iter.lineno)
            loop.iter = nodes.Call(guard, [loop.iter], [], None, None, lineno=loop.iter.lineno)
    return ast


class _GuardedCodeGenerator(CodeGenerator):
    """Jinja's code generator, with ``~`` joins routed through the sandbox."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.oper8d_join((")
        for part in node.nodes:
            self.visit(part, frame)
            self.write(", ")
        self.write("))")


#: the attribute ``plain_callable`` sets
_PLAIN = "oper8d_plain_callable"
#: Jinja's message for a call that raised StopIteration (``Context.call``)
_STOPPED = "value was undefined because a callable raised a StopIteration exception"


def plain_callable(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``function``, one of oper8d's own for templates to call (``scoped_name``,
    ``live``, ...), as plainly callable: a Python function that is neither unsafe nor
    given Jinja's context or environment, and whose owner is no string. A template calls
    it without the sandbox's checks for other callables (a tenth of rendering a name)."""
    setattr(function, _PLAIN, True)
    return function


#: how long past ``templateSeconds`` the hard deadline (``template.deadline``) waits
HARD_DEADLINE_GRACE = 1.0

#: the binary operators whose result can be huge: bounded at render, never folded at compile
BOUNDED_BINOPS = frozenset({"*", "**", "%", "+"})


class ReadingEnvironment(ImmutableSandboxedEnvironment):
    """An environment only to read templates (parse them, find the names they use, keep
    the arguments that are constants): like :class:`LimitedSandbox` it does not fold the
    bounded operators into constants, so reading ``{{ 10 ** 10000000 }}`` computes nothing
    (Jinja's own environment spent minutes on it, then failed to print the number)."""

    intercepted_binops = BOUNDED_BINOPS


class LimitedSandbox(SizeChecks, ImmutableSandboxedEnvironment):
    """The immutable sandbox plus the limits described in the module docstring."""

    code_generator_class = _GuardedCodeGenerator
    intercepted_binops = BOUNDED_BINOPS

    def __init__(self, limits: Limits, clock: Clock, **options: Any) -> None:
        super().__init__(**options)
        self.limits = limits
        self.clock = clock
        # per environment (not per module): the budget of the render running in this thread
        self._budget: ContextVar[Budget | None] = ContextVar(f"budget-{id(self)}", default=None)
        lipsum = self.globals.get("lipsum")
        if callable(lipsum):
            self.globals["lipsum"] = checked_lipsum(self, lipsum)
        self.guard_filters()

    def guard_filters(self) -> None:
        """Check the arguments of every filter (the size a list or mapping expands to; the
        widths and counts of those that take one) and its result; call again after
        replacing filters (the engine replaces ``indent`` with Helm's)."""
        for name, original in list(self.filters.items()):
            if not getattr(original, "oper8d_checked", False):
                self.filters[name] = checked_filter(self, name, original)

    def bounded_output(self, value: Any) -> Any:
        """``finalize`` of inline objects and expressions: what ``{{ }}`` prints as text."""
        if type(value) in CONTAINERS:
            check_expanded(value, self.limits.rendered_bytes, "the printed value")
        return value

    def oper8d_join(self, parts: tuple[Any, ...]) -> str:
        """Called by generated code for every ``~``: the parts joined as Jinja joins them."""
        for part in parts:
            self.bound(part, "a value joined with ~")
        text = "".join(map(str, parts))
        return self.oper8d_text(text)

    # -- budgets ----------------------------------------------------------------------------

    def budget(self, shared: Any = None) -> BudgetScope:
        """The budget of the render in progress, or a new one for the code in the block.

        ``shared`` is an object several renders have in common (the Jinja context the
        strings of one inline object share): its budget, kept on it, is used by all of
        them, so an inline object has one deadline, not one per string."""
        return BudgetScope(self, shared)

    def _watchdog(self) -> Watchdog:
        watchdog = self.__dict__.get("oper8d_watchdog")
        if watchdog is None:
            watchdog = self.__dict__["oper8d_watchdog"] = Watchdog()
        return watchdog

    def in_budget(self) -> bool:
        """Whether a render of this thread runs inside a budget (``budget``) now."""
        return self._budget.get() is not None

    def _tick(self) -> None:
        budget = self._budget.get()
        if budget is not None:
            budget.tick()

    def oper8d_loop(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """Called by generated code for every ``{% for %}``: counts the iterations."""
        budget = self._budget.get()
        if budget is None:
            yield from iterable
            return
        for item in iterable:
            budget.iterate()
            yield item

    def oper8d_text(self, text: str) -> str:
        """Called by generated code with the result of every ``~`` join."""
        self.check_string_size(len(text), "joining strings with ~")
        self._tick()
        return text

    # -- sandbox hooks ----------------------------------------------------------------------

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        self._tick()
        left, right = as_value(left), as_value(right)
        self.bound(left, f"the operator {operator}")
        self.bound(right, f"the operator {operator}")
        if operator == "**":
            self._check_power(left, right)
        elif operator == "*":
            self._check_product(left, right)
        elif operator == "%" and isinstance(left, str):
            self._check_percent(left, right)
        result = self.binop_table[operator](left, right)
        self.check_result(result, f"the operator {operator}")
        return result

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        __self._tick()
        if not isinstance(__obj, Macro):  # a macro prints template text as structure
            args, kwargs = as_values(args, kwargs)
        for arg in (*args, *kwargs.values()):
            __self.bound(arg, "a call's argument")
        if getattr(__obj, _PLAIN, False) is True:
            # one of our own functions (``plain_callable``): what the general path below
            # does for it, without the checks that cannot apply to it
            kwargs.pop("_block_vars", None)
            kwargs.pop("_loop_vars", None)
            try:
                result = __obj(*args, **kwargs)
            except StopIteration:
                return __self.undefined(_STOPPED)
            __self.check_result(result, "a call")
            return result
        # str.format comes wrapped by the sandbox (its safe formatter): look through that
        method = getattr(__obj, "__wrapped__", __obj)
        owner = getattr(method, "__self__", None)
        if isinstance(owner, str):
            __self._check_str_method(owner, getattr(method, "__name__", ""), args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        __self.check_result(result, "a call")
        return result

    def getattr(self, obj: Any, attribute: str) -> Any:
        # a mapping's own keys before its methods: a CR field named ``items`` is the field
        if type(obj) is dict:
            try:
                return obj[attribute]
            except (KeyError, TypeError):
                pass
        elif type(obj) is TemplateText or type(obj) is Placed:
            obj = obj.value
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        return super().getitem(as_value(obj), as_value(argument))


class BudgetScope:
    """``LimitedSandbox.budget``'s block (a class: a render enters one, and a generator's
    context manager cost a third of rendering a short expression)."""

    __slots__ = ("_deadline", "_env", "_shared", "_token")

    def __init__(self, env: LimitedSandbox, shared: Any) -> None:
        self._env = env
        self._shared = shared
        self._token: Any = None
        self._deadline: Any = None

    def __enter__(self) -> Budget:
        env = self._env
        current = env._budget.get()
        if current is not None:
            return current
        shared = self._shared
        kept = getattr(shared, "oper8d_budget", None)
        new = kept if isinstance(kept, Budget) else Budget(env.limits, env.clock)
        if shared is not None and kept is None:
            shared.oper8d_budget = new
        # the budget is checked where templates run; the deadline ends code that never checks
        deadline = env._watchdog().deadline(env.limits.template_seconds + HARD_DEADLINE_GRACE)
        self._token = env._budget.set(new)
        try:
            deadline.__enter__()
        except BaseException:
            env._budget.reset(self._token)
            raise
        self._deadline = deadline
        return new

    def __exit__(self, *exc: Any) -> None:
        if self._token is None:
            return
        try:
            self._deadline.__exit__(*exc)
        finally:
            self._env._budget.reset(self._token)
