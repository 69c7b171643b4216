"""specdec-lab entry point: page config, navigation, and the shared sidebar. Nothing else.

The page files live in views/, not pages/: with a folder named pages/ beside the entry point,
Streamlit 1.67 starts in its legacy multipage mode, and the first deep link on a fresh server
(/algebra, say) ran the page file alone, without this navigation, layout or theme.
"""

import streamlit as st

from ui import presenter
from ui.controls import page_scope
from ui.theme import register_template
from ui.tour import TOUR_PARAM, start_link, tour_bar, tour_step

present = presenter.sync()   # ?present=1, app-wide: read from the URL, written back after navigation drops it
# an emoji favicon: Streamlit draws it as an inline SVG, where a :material/...: icon has the browser fetch it from
# fonts.gstatic.com on every run (offline, a failed request each time)
st.set_page_config(page_title="specdec-lab", page_icon="⏩", layout="wide",
                   initial_sidebar_state="collapsed" if present else "auto")
register_template()

PAGES = [
    # Home is served at /. A default page still reserves its url_path, so it takes an unused one ("index"),
    # and a hidden alias makes /home, the path people type, open Home too.
    st.Page("views/home.py", title="Home", icon=":material/home:", url_path="index", default=True),
    st.Page("views/home.py", title="Home", icon=":material/home:", url_path="home", visibility="hidden"),
    st.Page("views/algebra.py", title="Algebra", icon=":material/functions:", url_path="algebra"),
    st.Page("views/roofline.py", title="Roofline", icon=":material/speed:", url_path="roofline"),
    st.Page("views/proof.py", title="Proof", icon=":material/verified:", url_path="proof"),
    st.Page("views/trees.py", title="Trees and multi-draft", icon=":material/account_tree:", url_path="trees"),
    st.Page("views/live.py", title="Live decoding", icon=":material/play_circle:", url_path="live"),
    st.Page("views/engines.py", title="Engines", icon=":material/dns:", url_path="engines"),
    st.Page("views/interview.py", title="Interview prep", icon=":material/record_voice_over:", url_path="interview"),
]

page = st.navigation(PAGES)
page_scope(page.url_path or "home")  # widget keys and URL settings belong to this page (ui/controls.py)

with st.sidebar:
    st.caption(
        "specdec-lab teaches speculative decoding: the algebra, the roofline, the proof, and a real "
        "draft/target pair decoding live. Every number on screen is computed, not typed in."
    )
    start_link()
    presenter.switch()
if presenter.on():               # the switch may have changed this run
    presenter.inject()

step = tour_step(st.query_params.get(TOUR_PARAM))
if step is not None:
    tour_bar(step, page.url_path or "index")  # around the page run, so the toured pages need no edits
page.run()
