"""`classes/changes.py`: what the view classes share over change sets."""

from __future__ import annotations

from dbt_ivm.classes import changes


def test_term_versions_telescope():
    assert changes.term_version(0, 1, old=3, new=4) == 4  # earlier occurrence: new state
    assert changes.term_version(2, 1, old=3, new=4) == 3  # later occurrence: old state
