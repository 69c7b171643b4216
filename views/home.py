"""Home: the idea in one paragraph, the 30-second answer, and the headline numbers computed live.
In presenter mode the worked case comes first and the page links fold away."""

import streamlit as st

from content.interview_content import THIRTY_SECOND_ANSWER
from specdec_core.algebra import expected_tokens, speedup
from ui import presenter
from ui.tour import start_link

# The seed document's worked case.
ALPHA, GAMMA, C, V = 0.7, 3, 0.1, 1.0


@st.cache_data
def headline() -> dict[str, float]:
    """The four headline numbers, from specdec_core."""
    return {
        "tokens": float(expected_tokens(ALPHA, GAMMA)),
        "speedup": float(speedup(ALPHA, GAMMA, C, V)),
        "worst": float(speedup(0.0, GAMMA, C, V)),
        "ceiling": float(speedup(1.0, GAMMA, C, V)),
    }


def idea() -> None:
    """The idea in one paragraph."""
    st.markdown(
        "A large model decoding one token at a time spends most of each step reading its weights from "
        "memory, while its arithmetic units sit mostly idle. **Speculative decoding** puts that idle "
        "compute to work: a small, cheap *draft* model guesses the next few tokens, and the large "
        "*target* model checks all of the guesses in a single forward pass. A guess is kept with "
        "probability $\\min(1, p/q)$; at the first refusal the target supplies a replacement drawn "
        "from the leftover mass $(p-q)_+$, and when every guess survives it adds one more token of "
        "its own. The text that comes out has exactly the target's distribution. Whether it comes sooner "
        "depends on the acceptance and on the costs: at a large batch the verify pass is no longer nearly free, "
        "and speculation can be slower than plain decoding."
    )


def worked_case() -> None:
    """The headline numbers and their formulas."""
    n = headline()
    st.subheader(f"The worked case: alpha = {ALPHA}, gamma = {GAMMA}, c = {C}, v = {V:g}")
    cols = st.columns(4)
    cols[0].metric("Tokens per target pass", f"{n['tokens']:.2f}")
    cols[1].metric("Speedup", f"{n['speedup']:.2f}x",
                   help="With v = 1: a verify pass costs one decode step, as at a small batch. At a large batch "
                        "v grows with gamma and this falls; the Roofline page prices it by batch.")
    cols[2].metric("As alpha -> 0", f"{n['worst']:.2f}x", help="Every draft token refused: a slowdown.")
    cols[3].metric("As alpha -> 1", f"{n['ceiling']:.2f}x", help="Every draft token kept: the gamma + 1 ceiling.")
    st.latex(
        r"\mathbb{E}[N] = \frac{1-\alpha^{\gamma+1}}{1-\alpha}"
        rf" = \frac{{1-{ALPHA}^{{{GAMMA + 1}}}}}{{1-{ALPHA}}} = {n['tokens']:.3f},\qquad"
        r"\text{speedup} = \frac{\mathbb{E}[N]}{\gamma c + v}"
        rf" = \frac{{{n['tokens']:.3f}}}{{{GAMMA}\times{C}+{V:g}}} = {n['speedup']:.2f}\times"
    )


def answer() -> None:
    """The 30-second answer and where to practise it."""
    st.subheader("The 30-second answer")
    st.info(THIRTY_SECOND_ANSWER)
    st.page_link("views/interview.py", label="Practise it against the clock, with its key phrases",
                 icon=":material/timer:", query_params={"part": "30-second"})


def explore() -> None:
    """The tour and a link to every page."""
    st.subheader("Explore")
    start_link("Take the 15-minute guided tour: each page in a chosen state, step by step")
    st.page_link("views/algebra.py", label="Algebra: alpha, gamma, c, v and the speedup", icon=":material/functions:")
    st.page_link("views/roofline.py", label="Roofline: why batch 1 leaves compute idle", icon=":material/speed:")
    st.page_link("views/proof.py", label="Proof: the emitted law is exactly p", icon=":material/verified:")
    st.page_link("views/trees.py", label="Trees and multi-draft: beyond one chain, and which rules stay exact",
                 icon=":material/account_tree:")
    st.page_link("views/live.py", label="Live decoding: a real draft and target", icon=":material/play_circle:")
    st.page_link("views/engines.py", label="Engines: llama.cpp's own counters, read with the algebra",
                 icon=":material/dns:")
    st.page_link(
        "views/interview.py",
        label="Interview prep: drills and the 30-second answer",
        icon=":material/record_voice_over:",
    )


def render() -> None:
    st.title("specdec-lab: speculative decoding, taken apart")
    if presenter.on():
        worked_case()
        idea()
        answer()
        with presenter.secondary("Explore: the tour and every page"):
            explore()
        return
    idea()
    worked_case()
    answer()
    explore()


render()
