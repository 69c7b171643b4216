"""AppTest: the entry point navigates to every page, and each renders with no exception."""

import re
from pathlib import Path

import pytest

PAGES = ["views/home.py", "views/algebra.py", "views/roofline.py", "views/proof.py", "views/trees.py",
         "views/live.py", "views/engines.py", "views/interview.py"]


def test_navigation_lists_every_page():
    import ast
    from pathlib import Path

    src = (Path(__file__).resolve().parents[1] / "app.py").read_text()
    listed = {
        n.value for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Constant) and str(n.value).startswith("views/")
    }
    assert listed == set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_without_exception(app_test, page):
    at = app_test(page)
    assert not at.exception, [e.value for e in at.exception]
    assert at.title, f"{page} shows no title"


def test_home_headline_numbers_come_from_core(app_test):
    from specdec_core.algebra import expected_tokens, speedup

    at = app_test()
    values = [m.value for m in at.metric][:4]
    assert values == [
        f"{expected_tokens(0.7, 3):.2f}",
        f"{speedup(0.7, 3, 0.1):.2f}x",
        f"{speedup(0.0, 3, 0.1):.2f}x",
        f"{speedup(1.0, 3, 0.1):.2f}x",
    ]
    assert values == ["2.53", "1.95x", "0.77x", "3.08x"]  # the seed's numbers


def test_home_links_every_page(app_test):
    """Every page app.py navigates to (Home and its aliases aside) has a link on Home, the Trees page included."""
    nav = set(re.findall(r'url_path="(\w+)"', (Path(__file__).resolve().parents[1] / "app.py").read_text()))
    at = app_test()
    links = {pl.proto.page for pl in at.get("page_link")} - {""}   # '' is Home itself: the tour's first step
    assert links == nav - {"home", "index"} and len(links) == 7, (links, nav)
