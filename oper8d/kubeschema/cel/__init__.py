"""CEL: a CRD's ``x-kubernetes-validations`` evaluated offline, as the apiserver does.

::

    cel = CelValidator()                         # keeps compiled rules; one per owner
    report = cel.check(schema, obj)              # create: transition rules skipped
    report = cel.check(schema, obj, old=live)    # update: oldSelf bound, ratcheting
    for path, message in report.errors: ...      # a rule broken
    for line in report.unchecked: ...            # a rule not evaluated, and why

``rules`` walks the schema and the object; ``values`` types a node's value as the
apiserver does; ``runtime`` holds the CEL environment (cel-expr-python, the CEL C++ core)
and says which outcomes are verdicts; ``library`` adds the Kubernetes library functions
the core lacks. See docs/kubernetes-schemas.md#cel-rules.
"""

from oper8d.kubeschema.cel.rules import CelReport, CelValidator, has_rules, uses_old_self

__all__ = ["CelReport", "CelValidator", "has_rules", "uses_old_self"]
