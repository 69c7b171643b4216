"""Real browser: shared links carrying Markdown and HTML payloads inject nothing.

Each page that echoes a URL value gets a link whose values ask for an image and a link on evil.example. The
test fails if the page holds any element the payload asked for, or if the browser sends any request to that
address (Playwright's request hook sees it before DNS). It also checks the payload's text is on screen, so a
page that silently dropped the value cannot pass. The live token box gets a SmolLM2 prompt (byte-level, so
carriage returns and markup reach the box; the built-in pair's alphabet refuses them).
"""

from __future__ import annotations

from urllib.parse import quote, urlparse

import pytest
from browser_helpers import RUN_TIMEOUT_MS, open_page, screenshot, wait_for_app

pytestmark = pytest.mark.browser

EVIL = "evil.example"
MD = f"`![x](http://{EVIL}/a.png)` [Click here to re-authenticate](https://{EVIL}/login)"
HTML = f'<img src="http://{EVIL}/i.png"><a href="https://{EVIL}/h">html link</a>'
CR = f"\r\r![y](http://{EVIL}/b.png) <img src=http://{EVIL}/c.png> [cr link](http://{EVIL}/d)"

LINKS = [  # (path, query) per page that echoes input; each value is a payload
    ("algebra", {"alpha": MD, "gamma": HTML}),
    ("algebra", {"mode": "table", "gamma": "4", "aj": MD}),
    ("interview", {"part": "Drills", "seed": MD[:60]}),
    ("proof", {"preset": "custom", "p": MD, "q": HTML}),
    ("roofline", {"hw": "Custom", "bf16": MD, "mode": CR}),
    ("live", {"pair": "builtin", "maxnew": "5", "prompt": MD + HTML}),
]


# true once the value (arg) is in the main block's text or in any input or text area's value
SHOWN_JS = """needle => {
  const main = document.querySelector('[data-testid="stMain"]');
  const boxes = [...document.querySelectorAll('input, textarea')].map(e => e.value).join(' ');
  return ((main ? main.innerText : '') + ' ' + boxes).includes(needle);
}"""


def _watch(page) -> list[str]:
    """Every request the page sends to the payload's host; such requests are also aborted."""
    def to_evil(url: str) -> bool:
        return (urlparse(url).hostname or "").endswith(EVIL)   # the app's own URL carries the payload in its query

    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if to_evil(r.url) else None)
    page.route(to_evil, lambda route: route.abort())
    return sent


def _assert_inert(page, sent: list[str]) -> None:
    page.wait_for_timeout(800)                               # an <img> would have been requested by now
    assert page.locator('[data-testid="stException"]').count() == 0, "an exception is shown"
    assert page.locator(f'img[src*="{EVIL}"]').count() == 0, "the payload's image is on the page"
    assert page.locator(f'a[href*="{EVIL}"]').count() == 0, "the payload's link is on the page"
    assert page.locator(f'[src*="{EVIL}"], [href*="{EVIL}"], [srcset*="{EVIL}"]').count() == 0
    assert sent == [], f"requests left for the payload's address: {sent}"


@pytest.mark.parametrize("path, query", LINKS, ids=[f"{p}-{'-'.join(q)}" for p, q in LINKS])
def test_shared_link_payloads_are_shown_as_text(page, streamlit_url, path, query):
    sent = _watch(page)
    open_page(page, streamlit_url, path, "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items()))
    _assert_inert(page, sent)
    # A CI run under load once read the page after its run had ended but with only its toggles in the DOM (no
    # text, select or number box): wait on the page itself for the payload to reach an element, then check again
    try:
        page.wait_for_function(SHOWN_JS, arg=EVIL, timeout=RUN_TIMEOUT_MS, polling=200)
    except Exception:
        screenshot(page, f"hostile-{path}")
        raise AssertionError("the payload reached no element at all, so this link tested nothing") from None
    _assert_inert(page, sent)                                # and the elements that came later inject nothing


def test_live_token_box_with_a_smollm2_prompt_carrying_payloads(page, streamlit_url):
    """Two carriage returns ended the old HTML block, and the rest was parsed as Markdown inside the box."""
    sent = _watch(page)
    prompt = "Say hi." + CR + " " + HTML
    page.goto(f"{streamlit_url}/live?pair=smollm2-lookup&maxnew=2&gamma=1&repeats=1&prompt={quote(prompt, safe='')}")
    wait_for_app(page, timeout_ms=240_000)                      # the first SmolLM2 load takes a while on a CPU
    page.locator(".st-key-run_btn button").first.click()
    page.locator(".live-tokens").first.wait_for(timeout=240_000)
    page.wait_for_timeout(500)
    wait_for_app(page, timeout_ms=240_000)
    _assert_inert(page, sent)
    box = page.locator(".live-tokens").first
    text = box.inner_text()
    assert f"http://{EVIL}/b.png" in text and "<img" in text     # shown as text, control characters visible
    assert "\u240d" in text                                       # the carriage returns, as control pictures
    assert box.locator("img, a").count() == 0
