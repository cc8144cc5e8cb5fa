"""``TemplateEngine``: the one sandboxed Jinja environment of a loaded bundle.

``bundle.compile`` creates one engine per bundle load and compiles every expression,
inline object and text template through it; the results (``Expr``, ``TreeTemplate``,
``TextTemplate``) live in the bundle model and are rendered by the engine on every
reconcile without being parsed again.

The environment is ``LimitedSandbox`` (``sandbox.py``): Jinja's
``ImmutableSandboxedEnvironment`` (no attribute starting with ``_``, no unsafe callables,
``range`` capped at 100,000 items, and no changes to the context's lists and dicts, so one
template cannot alter what the next one reads) plus the time, loop and size limits of the
bundle's :class:`~oper8d.limits.Limits`, with
``StrictUndefined`` (a missing name or attribute is an error, never an empty string),
autoescape off (the output is YAML, not HTML) and ``keep_trailing_newline``. Text templates
compile in an overlay of it whose printed values become scalars, never YAML structure
(``slots.py``: a CR value cannot add an object, a key or a document). It has no
loader: ``include``, ``import`` and ``extends`` are rejected at load time. A template nested
deeper than ``nestingDepth`` is rejected at load time too.

Bundles repeat the same template strings many times (``{{ scoped_name('app') }}``,
``{{ spec.replicas }}`` in every component), so an engine compiles each distinct source
once and shares the Jinja template between its occurrences; each occurrence still gets
its own ``CompiledString`` carrying its own position for error messages. Given a
``CodeCache`` (``bundle.cache``), the engine also reuses the module code an earlier process
generated for the same source (and file name), skipping Jinja's parse and code generation;
only sources that compiled without error are kept, so every problem is still found here.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Mapping
from types import CodeType
from typing import Any, Protocol, TypeVar

from jinja2 import Environment, StrictUndefined, Template, nodes
from jinja2.exceptions import TemplateSyntaxError
from jinja2.lexer import describe_token
from jinja2.parser import Parser

from oper8d.clock import Clock, SystemClock
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.limits import LimitExceeded, Limits
from oper8d.template.compiled import CompiledString, Expr, TextTemplate
from oper8d.template.failures import compile_problem, syntax_problem
from oper8d.template.filters import template_filters
from oper8d.template.names import truncate_name
from oper8d.template.sandbox import Budget, LimitedSandbox, guard_loops
from oper8d.template.slots import finalize, new_nonce
from oper8d.template.textcode import (
    concat,
    refused_statements,
    template_text,
    text_code_generator,
    text_filters,
    text_tests,
)
from oper8d.template.tree import Path, TreeTemplate, is_templated

_T = TypeVar("_T")

#: what compiling one source gives: whether it keeps its value's type (a lone expression),
#: the internal names its ``live()`` calls read, and the module code Jinja generated
CodeEntry = tuple[bool, frozenset[str], CodeType]


class CodeCache(Protocol):
    """Compiled code kept between processes (``bundle.cache``), looked up by source."""

    def get(self, key: str) -> CodeEntry | None: ...

    def put(self, key: str, entry: CodeEntry) -> None: ...


_FILE_STATEMENTS: tuple[tuple[type[nodes.Node], str], ...] = (
    (nodes.Include, "include"),
    (nodes.Import, "import"),
    (nodes.FromImport, "from ... import"),
    (nodes.Extends, "extends"),
)


class TemplateEngine:
    """Compiles a bundle's templates. One per bundle load; compiles, never renders."""

    def __init__(
        self,
        limits: Limits | None = None,
        clock: Clock | None = None,
        code_cache: CodeCache | None = None,
    ) -> None:
        """``limits`` default to ``Limits()``; ``clock`` (for ``templateSeconds``) to the
        system clock. ``code_cache``: code compiled by an earlier process for the same
        sources, limits and versions (only sources that compiled without error are kept)."""
        self.limits = limits if limits is not None else Limits()
        self._code_cache = code_cache
        env = LimitedSandbox(
            self.limits,
            clock if clock is not None else SystemClock(),
            undefined=StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
        )
        env.finalize = env.bounded_output
        env.filters.update(template_filters())  # our `indent` replaces Jinja's (Helm's rule)
        env.guard_filters()
        env.globals["truncate_name"] = truncate_name
        self._env = env
        # text templates print values as tokens and template text as text (``slots``,
        # ``textcode``)
        text_env = env.overlay(finalize=finalize)
        text_env.filters = text_filters(env.filters, env.check_string_size)
        text_env.tests = text_tests(env.tests)  # type: ignore[assignment, arg-type]
        text_env.code_generator_class = text_code_generator(env.code_generator_class)
        text_env.oper8d_template_text = template_text  # type: ignore[attr-defined]
        text_env.oper8d_concat = functools.partial(  # type: ignore[attr-defined]
            concat,
            bound=env.bound,
            check=lambda text: env.check_string_size(len(text), "joining with ~"),
        )
        self._text_env = text_env
        self._nonce = new_nonce()
        # the tags of the plain scalars its text templates' rendered texts hold (``slots``)
        self._scalar_tags: dict[str, str] = {}
        # source -> its first occurrence, of what compiled without error (``at`` places the
        # others); a source that fails is compiled again at each occurrence, to report each
        # position
        self._strings: dict[str, CompiledString] = {}
        self._bare_expressions: dict[str, tuple[frozenset[str], Template]] = {}

    # -- public API ---------------------------------------------------------------------

    def budget(self) -> contextlib.AbstractContextManager[Budget]:
        """One time and loop budget (``templateSeconds``, ``loopIterations``) for every
        render in the block, e.g. all of one component's; outside one, each render has its
        own."""
        return self._env.budget()

    def expression(self, source: str | bool | int | float, pos: SourcePos) -> Expr:
        """Compile an expression, bare (``spec.replicas > 1``) or wrapped
        (``{{ spec.replicas > 1 }}``); a boolean or number is a constant.

        A source holding ``{{`` or ``{%`` is a template string: a lone ``{{ expr }}`` keeps
        the value's type, anything else (text around it, several ``{{ }}``) renders to a
        string. A bare source is parsed as ``Environment.compile_expression`` parses it.
        """
        if isinstance(source, bool | int | float):
            return Expr(json.dumps(source), pos, constant=source)
        if not isinstance(source, str):
            raise BundleError(
                Problem(
                    "an expression must be a string, a boolean or a number, "
                    f"got {type(source).__name__}",
                    pos,
                )
            )
        if is_templated(source):
            compiled = self._compile_string(source, pos)
        else:
            compiled = self._compile_bare_expression(source, pos)
        return Expr(source, pos, compiled.references, compiled=compiled, globals=self._env.globals)

    def template_string(self, source: Any, pos: SourcePos) -> Expr:
        """Compile a string that is text unless it holds ``{{ }}`` (``monitoring``, or
        ``{{ config.namespace }}``), unlike :meth:`expression`, where bare text is code."""
        if not isinstance(source, str):
            raise BundleError(Problem(f"expected a string, got {type(source).__name__}", pos))
        if not is_templated(source):
            return Expr(json.dumps(source), pos, constant=source)
        compiled = self._compile_string(source, pos)
        return Expr(source, pos, compiled.references, compiled=compiled, globals=self._env.globals)

    def tree(
        self,
        value: Any,
        pos: SourcePos,
        positions: Mapping[Path, SourcePos] | None = None,
        *,
        general: bool = False,
    ) -> TreeTemplate:
        """Compile an inline object: every string holding ``{{`` or ``{%`` (keys included).
        ``positions`` maps paths inside ``value`` to where the loader found them.
        ``general``: plan it mapping by mapping, as an object with templated keys is (tests
        hold the faster plan to it)."""
        return TreeTemplate(
            value, pos, positions, self._compile_string, self._env.globals, general=general
        )

    def text(self, source: str, file: str) -> TextTemplate:
        """Compile a Helm-style text template; ``file`` is its bundle-relative path."""
        key = f"text\0{file}\0{source}"  # the file names the code's traceback frames
        hit = self._cached(key, self._text_env)
        if hit is not None:
            _native, references, template = hit
        else:

            def problem(exc: TemplateSyntaxError) -> Problem:
                return syntax_problem(exc, SourcePos(file, exc.lineno or 0), None)

            ast = self._parse(
                lambda: self._text_env.parse(source, name=file, filename=file),
                problem,
                SourcePos(file),
            )
            self._reject_file_statements(ast, lambda node: SourcePos(file, node.lineno))
            refused = refused_statements(ast)
            if refused:
                raise BundleError(
                    [Problem(why, SourcePos(file, node.lineno)) for node, why in refused]
                )
            references = live_references(ast)
            code = self._code(ast, problem, SourcePos(file), file, self._text_env)
            self._remember(key, (False, references, code))
            template = self._from_code(code, self._text_env)
        return TextTemplate(
            file, template, source, references, self._nonce, scalar_tags=self._scalar_tags
        )

    # -- compilation ----------------------------------------------------------------------

    def _compile_string(self, source: str, pos: SourcePos) -> CompiledString:
        """Compile a template string; a lone ``{{ expr }}`` keeps the expression's type."""
        known = self._strings.get(source)
        if known is None:
            compiled = self._strings[source] = self._compile_new_string(source, pos)
            return compiled
        return known.at(pos)

    def _compile_new_string(self, source: str, pos: SourcePos) -> CompiledString:
        key = f"string\0{source}"
        hit = self._cached(key, self._env)
        if hit is not None:
            native, references, template = hit
            return CompiledString(source, pos, references, native=native, template=template)

        def problem(exc: TemplateSyntaxError) -> Problem:
            return syntax_problem(exc, pos, source)

        ast = self._parse(lambda: self._env.parse(source), problem, pos)
        self._reject_file_statements(ast, lambda _node: pos)
        references = live_references(ast)
        expression = _lone_expression(ast)
        native = expression is not None
        if expression is not None:
            code = self._native_code(expression, problem, pos)
        else:
            code = self._code(ast, problem, pos)
        self._remember(key, (native, references, code))
        template = self._from_code(code, self._env)
        return CompiledString(source, pos, references, native=native, template=template)

    def _compile_bare_expression(self, source: str, pos: SourcePos) -> CompiledString:
        known = self._bare_expressions.get(source)
        if known is None:
            compiled = self._compile_new_bare_expression(source, pos)
            self._bare_expressions[source] = (compiled.references, compiled.template)
            return compiled
        references, template = known
        return CompiledString(source, pos, references, native=True, template=template)

    def _compile_new_bare_expression(self, source: str, pos: SourcePos) -> CompiledString:
        key = f"bare\0{source}"
        hit = self._cached(key, self._env)
        if hit is not None:
            _native, references, template = hit
            return CompiledString(source, pos, references, native=True, template=template)

        # the parsing half of Environment.compile_expression, with a clearer error; the
        # lexer reads the first token in Parser(), so that is inside the try too
        def parse() -> nodes.Expr:
            parser = Parser(self._env, source, state="variable")
            expression = parser.parse_expression()
            if not parser.stream.eos:
                token = parser.stream.current
                raise TemplateSyntaxError(
                    f"unexpected {describe_token(token)} after the expression",
                    token.lineno,
                )
            return expression

        def problem(exc: TemplateSyntaxError) -> Problem:
            return syntax_problem(exc, pos, source)

        expression = self._parse(parse, problem, pos)
        expression.set_environment(self._env)
        references = live_references(expression)
        code = self._native_code(expression, problem, pos)
        self._remember(key, (True, references, code))
        template = self._from_code(code, self._env)
        return CompiledString(source, pos, references, native=True, template=template)

    def _native_code(
        self,
        expression: nodes.Expr,
        problem: Callable[[TemplateSyntaxError], Problem],
        pos: SourcePos,
    ) -> CodeType:
        """Code that stores the expression's value in ``result`` instead of printing it
        (the template Environment.compile_expression builds)."""
        body = [nodes.Assign(nodes.Name("result", "store"), expression, lineno=1)]
        return self._code(nodes.Template(body, lineno=1), problem, pos)

    def _code(
        self,
        ast: nodes.Template,
        problem: Callable[[TemplateSyntaxError], Problem],
        pos: SourcePos,
        file: str | None = None,
        env: Environment | None = None,
    ) -> CodeType:
        """The module code of ``ast``; ``file`` names its traceback frames (see
        ``failures.template_line``). Code generation finds unknown filters and tests."""
        env = env or self._env
        guard_loops(ast)
        code: CodeType = self._parse(
            lambda: env.compile(ast, name=file, filename=file), problem, pos
        )
        return code

    def _from_code(self, code: CodeType, env: Environment) -> Template:
        # The environment's own globals dict rather than the ChainMap from_string builds:
        # a context is created per rendered string, and copying a ChainMap's keys into the
        # context doubled the cost of rendering an inline object.
        template = env.template_class.from_code(env, code, env.globals, None)
        return template

    def _cached(self, key: str, env: Environment) -> tuple[bool, frozenset[str], Template] | None:
        """The template an earlier process compiled from the same source, if kept."""
        entry = self._code_cache.get(key) if self._code_cache is not None else None
        if entry is None:
            return None
        native, references, code = entry
        try:
            return native, references, self._from_code(code, env)
        except Exception:  # not the code it should be: compile it again
            return None

    def _remember(self, key: str, entry: CodeEntry) -> None:
        if self._code_cache is not None:
            self._code_cache.put(key, entry)

    def _parse(
        self,
        step: Callable[[], _T],
        problem: Callable[[TemplateSyntaxError], Problem],
        pos: SourcePos,
    ) -> _T:
        """Run a parsing or compiling ``step``; every failure becomes a BundleError at ``pos``
        (never a traceback: the lexer raises ValueError for a 5,000-digit number, the parser
        RecursionError for deep nesting). A parsed tree deeper than ``nestingDepth`` fails."""
        try:
            result = step()
        except TemplateSyntaxError as exc:
            raise BundleError(problem(exc)) from exc
        except RecursionError as exc:
            raise BundleError(compile_problem(self._too_deep(), pos)) from exc
        except (LimitExceeded, ValueError, OverflowError, MemoryError) as exc:
            raise BundleError(compile_problem(exc, pos)) from exc
        if isinstance(result, nodes.Node) and _depth(result) > self.limits.nesting_depth:
            raise BundleError(compile_problem(self._too_deep(), pos))
        return result

    def _too_deep(self) -> LimitExceeded:
        return LimitExceeded(
            "nesting_depth",
            f"the template nests more than {self.limits.nesting_depth} levels deep",
        )

    @staticmethod
    def _reject_file_statements(
        ast: nodes.Template, position: Callable[[nodes.Node], SourcePos]
    ) -> None:
        problems = [
            Problem(
                f"templates cannot include files: {{% {name} %}} is not supported; "
                "each template must stand alone (define macros in the same template)",
                position(node),
            )
            for kind, name in _FILE_STATEMENTS
            for node in ast.find_all(kind)
        ]
        if problems:
            raise BundleError(problems)


def _depth(root: nodes.Node) -> int:
    """How deep the tree under ``root`` nests (iteratively: the tree may be deep)."""
    deepest = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.iter_child_nodes())
    return deepest


def _lone_expression(ast: nodes.Template) -> nodes.Expr | None:
    """The expression of a template that is exactly ``{{ expr }}``, whitespace around allowed."""
    if len(ast.body) != 1 or not isinstance(ast.body[0], nodes.Output):
        return None
    expressions = []
    for node in ast.body[0].nodes:
        if isinstance(node, nodes.TemplateData):
            if node.data.strip():
                return None
        else:
            expressions.append(node)
    return expressions[0] if len(expressions) == 1 else None


def live_references(node: nodes.Node) -> frozenset[str]:
    """Constant first arguments of ``live(...)`` calls: the internal names a template reads,
    from which the compiler infers dependency edges."""
    return frozenset(
        call.args[0].value
        for call in node.find_all(nodes.Call)
        if isinstance(call.node, nodes.Name)
        and call.node.name == "live"
        and call.args
        and isinstance(call.args[0], nodes.Const)
        and isinstance(call.args[0].value, str)
    )
