"""Real browser: every link the app or the README prints opens a page (no "Page not found", no error).

The links are gathered from where they are printed, not typed in here: the README's page table and its example
URLs, every checklist and walkthrough link of the interview page, and the drill set's share link.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser_helpers import assert_no_error, open_page

from content import interview_content

pytestmark = pytest.mark.browser

README = Path(__file__).resolve().parents[1] / "README.md"


def printed_links() -> list[str]:
    """Every in-app path (with its query) that the README or the app prints."""
    text = README.read_text()
    table = re.findall(r"^\| [^|]+ \| ([^|]+) \|", text, flags=re.M)
    paths = [p for cell in table for p in re.findall(r"`(/[^`]*)`", cell)]
    paths += [urlsplit(u).path + (f"?{urlsplit(u).query}" if urlsplit(u).query else "")
              for u in re.findall(r"http://localhost:8501(/[^\s`)]*)", text)]
    paths += [item.link.url for item in interview_content.CHECKLIST] + [
        step.link.url for step in interview_content.WALKTHROUGH
    ]
    paths.append("/interview?part=Drills&seed=classroom")  # the drill set's share link
    return sorted(set(paths))


def test_the_readme_prints_home_and_every_page():
    links = printed_links()
    assert "/" in links and "/home" in links and "/interview" in links and "/proof" in links


def test_every_printed_link_opens(page, streamlit_url):
    for link in printed_links():
        path, _, query = link.lstrip("/").partition("?")
        open_page(page, streamlit_url, path, query)
        body = page.locator("body").inner_text()
        assert "Page not found" not in body, link
        assert_no_error(page)
        assert page.locator("h1").count() >= 1, link
