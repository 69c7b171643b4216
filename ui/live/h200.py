"""The live page's table of what each pair did on one H200 (measured), shown on every device.

Rows come from specdec_core.h200_run, which reads the committed run; nothing here computes a number.
"""

from __future__ import annotations

import streamlit as st

from specdec_core import h200_run as h200

_COLUMNS = {
    "pair": st.column_config.TextColumn("pair"),
    "weights": st.column_config.TextColumn("weights"),
    "T": st.column_config.NumberColumn("T", format="%.0f"),
    "plain tok/s": st.column_config.NumberColumn("plain tok/s", format="%.0f"),
    "best gamma": st.column_config.NumberColumn("best gamma", format="%d"),
    "alpha": st.column_config.NumberColumn("alpha", format="%.2f"),
    "c": st.column_config.NumberColumn("c", format="%.3f"),
    "v": st.column_config.NumberColumn("v", format="%.2f"),
    "speedup predicted": st.column_config.NumberColumn("speedup predicted", format="%.2fx"),
    "speedup measured": st.column_config.NumberColumn("speedup measured", format="%.2fx"),
}


@st.cache_data(show_spinner=False)
def h200_rows() -> dict[str, list]:
    """One row per pair and temperature, the columns of _COLUMNS, in the file's order."""
    rows = h200.pair_rows()
    return {"pair": [r.pair for r in rows], "weights": [r.dtype for r in rows], "T": [r.temperature for r in rows],
            "plain tok/s": [r.ar_tok_s for r in rows], "best gamma": [r.gamma for r in rows],
            "alpha": [r.alpha for r in rows], "c": [r.c for r in rows], "v": [r.v for r in rows],
            "speedup predicted": [r.predicted for r in rows], "speedup measured": [r.measured for r in rows]}


def h200_table() -> None:
    """An expander with every pair's H200 numbers (eager), the graph-replayed step, and where they come from."""
    with st.expander("what each pair did on an H200 (measured)"):
        st.dataframe(h200_rows(), column_config=_COLUMNS, hide_index=True, key="h200_pairs")
        one = next(g for g in h200.graph_steps() if g.tokens == 1)
        st.caption(
            f"Eager PyTorch; {h200.provenance().workload['pairs']}. Each row's speculation is at the gamma that "
            "measured fastest; its predicted speedup is E[N] / (gamma c + v) from that row's alpha_j, c and v. "
            f"With CUDA graphs: the SmolLM2 decode step replayed from a graph took {one.graph_ms:.2f} ms against "
            f"{one.eager_ms:.1f} ms eager in the same run (same logits), about {h200.tok_s(one.graph_ms):.0f} "
            "tok/s for plain decoding; speculative decoding with graphs has not been measured on a GPU yet. "
            "The drafts are those of the run's commit: the EAGLE-style head shipped now was trained further since "
            "on more of the target's replies (gpu_demo/assets/smollm2_eagle.log gives its held-out alpha before and "
            "after). "
            f"Source: {h200.provenance().line()}.")
