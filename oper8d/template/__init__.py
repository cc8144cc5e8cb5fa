"""Sandboxed Jinja templates for bundles: expressions, inline objects, text templates.

``bundle.compile`` creates one :class:`TemplateEngine` per bundle load and compiles every
template through it; the engine renders the compiled results on every reconcile.
``names`` holds oper8's name rules, ``filters`` the filters templates get beside Jinja's;
``ReadingEnvironment`` is what the bundle compiler reads templates with.
"""

from __future__ import annotations

from oper8d.template.compiled import Expr, TextTemplate
from oper8d.template.environment import TemplateEngine
from oper8d.template.sandbox import ReadingEnvironment
from oper8d.template.tree import TreeTemplate

__all__ = ["Expr", "ReadingEnvironment", "TemplateEngine", "TextTemplate", "TreeTemplate"]
