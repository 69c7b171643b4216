"""The engines page's prose says what the engines do: a self-draft at T = 0 accepts almost every token, not every one
(the single-token draft step and the batched verify pass round differently)."""

from __future__ import annotations

from ui.engines import text as text


def test_self_draft_at_t0_accepts_almost_every_token_not_every() -> None:
    s = text.SELF_DRAFT
    assert "almost every draft token is accepted" in s
    assert "and every draft token is accepted" not in s
    assert "round" in s and "hardware numerics" in s
