"""The paged KV cache's page counts against a slot-by-slot page table, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_core.paged_kv import page_fill, pages_freed, pages_held


def _table(tokens: int, page: int) -> list[int]:
    """Slots used per page, filled one token at a time."""
    pages: list[int] = []
    for _ in range(tokens):
        if not pages or pages[-1] == page:
            pages.append(0)
        pages[-1] += 1
    return pages


@pytest.mark.parametrize("page", [1, 7, 16])
def test_pages_held_and_fill_match_a_page_table(page):
    for n in range(0, 70):
        table = _table(n, page)
        assert pages_held(n, page) == len(table)
        assert page_fill(n, page, len(table) + 2).tolist() == table + [0, 0]


def test_pages_freed_by_hand():
    # pages of 16: 92 + 5 = 97 slots in 7 pages; 1 accepted -> 93 slots, 6 pages: one page back to the free list
    assert pages_freed(92, 5, 1, 16) == 1
    # 100 + 5 = 105 (7 pages) -> 101 (7 pages): the 4 rejected slots sit in a page that stays held
    assert pages_freed(100, 5, 1, 16) == 0
    assert pages_freed(100, 5, 5, 16) == 0                  # everything accepted: nothing to roll back
    assert pages_freed(0, 40, 0, 8) == 5                    # a whole draft rejected from an empty sequence
    rng = np.random.default_rng(0)
    for _ in range(500):                                   # against popping slots off the table one at a time
        n, g, page = int(rng.integers(0, 200)), int(rng.integers(0, 40)), int(rng.integers(1, 33))
        k = int(rng.integers(0, g + 1))
        table = _table(n + g, page)
        before = len(table)
        for _ in range(g - k):
            table[-1] -= 1
            if table[-1] == 0:
                table.pop()
        assert pages_freed(n, g, k, page) == before - len(table)


@pytest.mark.parametrize("args", [(10, 3, 4, 16), (10, -1, 0, 16), (10, 3, 1, 0), (-1, 3, 1, 16), (10, 3, 1.5, 16),
                                  (10, True, 0, 16)])
def test_bad_counts_name_their_range(args):
    with pytest.raises(ValueError, match="must be an integer in"):
        pages_freed(*args)
