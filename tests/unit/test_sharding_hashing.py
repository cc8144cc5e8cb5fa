"""Shard hashing: the API server's FNV-1a, balanced buckets, and minimal movement."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from oper8d.runtime.hashing import (
    BUCKETS,
    ShardSlice,
    assign,
    bucket_of,
    fnv1a64,
    format_buckets,
    parse_buckets,
)

REPLICAS = ["oper8d-0", "oper8d-1", "oper8d-2"]
NAMESPACES = [{"metadata": {"namespace": f"team-{i}", "name": "app"}} for i in range(3000)]


def owner(assignment: dict[str, frozenset[int]], obj: dict) -> str:
    bucket = bucket_of(obj, "namespace")
    return next(m for m, buckets in assignment.items() if bucket in buckets)


def test_fnv1a64_matches_the_published_test_vectors() -> None:
    assert fnv1a64("") == 0xCBF29CE484222325
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C
    assert fnv1a64("foobar") == 0x85944171F73967E8


def test_three_replicas_each_get_about_a_third_of_the_namespaces() -> None:
    assignment = assign(REPLICAS)
    counts = {m: 0 for m in REPLICAS}
    for obj in NAMESPACES:
        counts[owner(assignment, obj)] += 1
    for member, n in counts.items():
        assert 0.2 < n / len(NAMESPACES) < 0.46, (member, counts)


def test_a_fourth_replica_takes_about_a_quarter_of_the_namespaces() -> None:
    before = assign(REPLICAS)
    after = assign([*REPLICAS, "oper8d-3"])
    moved = [obj for obj in NAMESPACES if owner(before, obj) != owner(after, obj)]
    taken = [obj for obj in moved if owner(after, obj) == "oper8d-3"]
    assert 0.15 < len(moved) / len(NAMESPACES) < 0.4
    assert len(taken) / len(moved) > 0.7  # mostly to the newcomer, little reshuffling


@given(st.sets(st.text(min_size=1, max_size=8), min_size=1, max_size=6), st.text(min_size=1))
def test_a_newcomer_gets_its_share_and_the_loads_stay_even(
    members: set[str], newcomer: str
) -> None:
    after = assign(members | {newcomer})
    loads = sorted(len(b) for b in after.values())
    assert loads[-1] - loads[0] <= 1 or loads[-1] == -(-BUCKETS // len(after))
    assert len(after[newcomer]) >= BUCKETS // len(after) - (len(after) - 1)


@given(st.sets(st.text(min_size=1, max_size=8), min_size=1, max_size=6))
def test_every_bucket_has_exactly_one_owner(members: set[str]) -> None:
    owned = list(assign(members).values())
    assert sorted(b for buckets in owned for b in buckets) == list(range(BUCKETS))


def test_a_slice_selects_what_its_selector_says() -> None:
    piece = ShardSlice("namespace", frozenset({0, 1, 2, 63}))
    assert piece.ranges() == [(0, 3 << 58), (63 << 58, 1 << 64)]
    assert piece.selector() == (
        "shardRange(object.metadata.namespace, '0x0000000000000000', '0x0c00000000000000')"
        " || shardRange(object.metadata.namespace, '0xfc00000000000000', '0x10000000000000000')"
    )
    for obj in NAMESPACES[:300]:
        h = fnv1a64(obj["metadata"]["namespace"])
        assert piece.contains(obj) == any(lo <= h < hi for lo, hi in piece.ranges())


def test_an_empty_slice_has_no_selector_and_contains_nothing() -> None:
    piece = ShardSlice("uid", frozenset())
    assert piece.selector() == ""
    assert not piece.contains({"metadata": {"uid": "x"}})


@given(st.sets(st.integers(min_value=0, max_value=BUCKETS - 1)))
def test_claims_survive_the_lease_annotation(buckets: set[int]) -> None:
    assert parse_buckets(format_buckets(buckets)) == buckets


def test_garbage_in_a_claims_annotation_is_ignored() -> None:
    assert parse_buckets("1-3,x,70,5") == {1, 2, 3, 5}
