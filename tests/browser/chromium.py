"""What both real-browser checks (check_notebooks.py, check_site.py) start from: Debian's Chromium,
driven by playwright, and the one way to say that either is missing."""
import os

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_MAJOR = 156  # the Chromium that playwright==1.64.1 bundles (and drives best)
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]


def sync_playwright_or_none(log, how_to_install: str):
    """playwright's sync_playwright, or None after logging what is missing (Chromium: how_to_install
    follows its path in the message; playwright: the pip command)."""
    if not os.access(CHROMIUM, os.X_OK):
        log(f"FAIL: {CHROMIUM} not found{how_to_install}")
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        log("FAIL: Python playwright is missing: .venv/bin/pip install -e '.[browser]'")
        return None
    return sync_playwright
