"""A paged KV cache: pages held by a sequence, and pages freed when drafts are rolled back.

A sequence of n cached tokens holds ceil(n / P) pages of P token slots. A verify pass writes the KV of gamma draft
tokens (n -> n + gamma); if k are accepted, the r = gamma - k rejected slots are dropped by moving the sequence
length back to n + k, and only pages left with no live slot go back to the free list:
    freed = ceil((n + gamma) / P) - ceil((n + k) / P)
Slots of a page that stays held are simply overwritten later; no KV is copied. This is an allocator that frees
on rollback, as SGLang's token-to-KV pool does. vLLM V1 does not: it lowers the request's computed-token count
and keeps its blocks, which the next round's drafts write into again, so under vLLM a rollback frees nothing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from specdec_core.validate import check_count

MAX_TOKENS = 10_000_000
MAX_PAGE = 4096


def pages_held(tokens: int, page: int) -> int:
    """ceil(tokens / P): pages a sequence of this many cached tokens holds; 0 for no tokens."""
    n, p = check_count(tokens, "tokens", 0, MAX_TOKENS), check_count(page, "page size", 1, MAX_PAGE)
    return -(-n // p)


def pages_freed(cached: int, gamma: int, accepted: int, page: int) -> int:
    """ceil((n + gamma) / P) - ceil((n + k) / P): pages freed when gamma - k of gamma drafts are rolled back."""
    n, g = check_count(cached, "cached tokens", 0, MAX_TOKENS), check_count(gamma, "gamma", 0, MAX_PAGE)
    k = check_count(accepted, "accepted", 0, g)
    return pages_held(n + g, page) - pages_held(n + k, page)


def page_fill(tokens: int, page: int, pages: int) -> NDArray[np.int64]:
    """(pages,) slots in use in each of the first `pages` pages: clip(tokens - i P, 0, P)."""
    n, p = check_count(tokens, "tokens", 0, MAX_TOKENS), check_count(page, "page size", 1, MAX_PAGE)
    i = np.arange(check_count(pages, "pages", 0, MAX_TOKENS))                   # (pages,)
    return np.clip(n - i * p, 0, p).astype(np.int64)
