"""Objects a CR may write: the ones created for it, never someone else's.

A CR author chooses the CR's name, and names of rendered objects are built from it (and
from other CR values): a tenant allowed to create CRs could otherwise name one so that it
renders the identity of an object an administrator made (a Secret ``payments-db``), or one
another CR renders, and the operator would overwrite it, make the CR its controlling owner
and delete it with the CR. So before a write the live object must carry this CR's
``oper8d.io/owner-uid`` label (every object oper8d creates does), or not exist. Handing an
object over is an explicit act: label it with the CR's uid.
"""

from __future__ import annotations

from oper8d.errors import ConfigError
from oper8d.kinds import ref_of
from oper8d.objects import OWNER_LABEL, ObjView

__all__ = ["refuse_foreign"]


def refuse_foreign(live: ObjView | None, cr_uid: str, cr_ref: str) -> None:
    """Raise a ConfigError when ``live`` exists and was not created for the CR with
    ``cr_uid`` (``cr_ref`` names it in the message). A CR without a uid (not stored
    anywhere) is not checked."""
    if live is None or not cr_uid:
        return
    labels = (live.get("metadata") or {}).get("labels") or {}
    owner = labels.get(OWNER_LABEL)
    if owner == cr_uid:
        return
    whose = f"another CR's (uid {owner})" if owner else "not created by oper8d"
    raise ConfigError(
        f"{ref_of(dict(live))} already exists and is {whose}: {cr_ref} renders it but oper8d "
        "does not take over objects it did not create for this CR. Rename the CR or the "
        f"resource, or delete the object, or hand it over by labelling it {OWNER_LABEL}={cr_uid}"
    )
