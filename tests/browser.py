"""Headless Chromium (Debian's chromium, driven by Playwright) for tests of pages people click.

Skipped with a reason when chromium or Playwright is missing on a developer's machine;
with CI set, a missing browser fails instead, so CI can never go green without them.
"""

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings

from tests.languages import AXE

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _missing(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the browser tests (install chromium: see .ci/run)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        _missing("Debian chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -r requirements-dev.txt)")
    # Playwright's sync API keeps an event loop in this thread; the tests' ORM calls are
    # still plain synchronous code, so Django's async guard must not refuse them.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@contextmanager
def admin_page(
    browser,
    live_server,
    username: str,
    password: str,
    *,
    width: int = 1366,
    height: int = 900,
    language: str = "",
):
    """A page of its own browser context, signed in to the admin as ``username`` (in
    ``language``, when given, as the sign-in page's choice sets it); closed after."""
    from django.urls import reverse

    context = browser.new_context(viewport={"width": width, "height": height})
    if language:
        context.add_cookies(
            [{"name": settings.LANGUAGE_COOKIE_NAME, "value": language, "url": live_server.url}]
        )
    page = context.new_page()
    page.set_default_timeout(15000)
    page.goto(live_server.url + reverse("admin:login"))
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("input[type=submit]")
    page.wait_for_load_state()
    try:
        yield page
    finally:
        context.close()


# Words of a table's cells that the layout split over two lines ("Decidido|s", "19/10/202|6"):
# each word's text range must lie on one line. Identifiers (file names, ids, MIME types)
# may wrap at their punctuation and are left out.
BROKEN_WORDS = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll('th, td')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\\S+/g)) {
        if (/[._\\/:@=-]/.test(match[0]) || match[0].length < 2) continue;
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set([...range.getClientRects()].map(rect => Math.round(rect.top)));
        if (lines.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}"""


def page_check(page, screenshot: str) -> dict:
    """What a page must hold to at any width: its sideways scroll, the words its tables broke
    in two, and its serious or critical axe-core violations (a screenshot of the whole page
    is kept for people to look at)."""
    page.wait_for_load_state("networkidle")
    scroll, window = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    page.evaluate(
        AXE.read_text()
    )  # evaluated, not a <script>: the page's CSP refuses inline scripts
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    screenshots = Path(settings.VAR_DIR) / "screenshots"
    screenshots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshots / f"{screenshot}.png"), full_page=True)
    broken = page.evaluate(BROKEN_WORDS)
    return {
        "overflow": max(0, scroll - window),
        "broken words": broken,
        "serious": [
            (v["id"], v["impact"], [node["target"] for node in v["nodes"]][:3])
            for v in result["violations"]
            if v["impact"] in ("serious", "critical")
        ],
    }
