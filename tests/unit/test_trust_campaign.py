"""A tenant value is never structure, over a grammar of printing sites
(``benchmarks.trust_campaign``): every hostile render is refused or has the benign
render's documents, keys and list lengths, and no token text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.trust_campaign import FILTERS, PARTS, SITES, WRAPPERS, Campaign, Case

CAMPAIGN = Campaign()

values = st.one_of(
    st.lists(st.sampled_from(PARTS), min_size=1, max_size=4).map("".join),
    st.text(min_size=1, max_size=12),
)
cases = st.builds(
    Case,
    site=st.sampled_from(SITES),  # quoted and flow sites are most of the list
    filters=st.lists(st.sampled_from(FILTERS), max_size=3).map(tuple),
    wrapper=st.sampled_from(WRAPPERS),
    value=values,
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases)
def test_a_hostile_value_is_refused_or_leaves_the_structure_as_it_was(case: Case) -> None:
    CAMPAIGN.check(case)


@pytest.mark.parametrize("site", SITES)
def test_every_site_renders_a_benign_value(site: str) -> None:
    # a site the benign value cannot render would test nothing
    assert CAMPAIGN.check(Case(site, (), "{site}", "x', b: 'y")) in ("same", "refused")
    assert CAMPAIGN.check(Case(site, (), "{site}", "plain")) == "same"
