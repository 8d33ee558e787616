"""A long table one click away: where a notebook shows a figure and a sentence, the table they rest
on is printed collapsed, as the course's Markdown reveals are (a `<details>` block). Its text is the
table itself, so a test reads it and a frontend without HTML shows it whole."""
from __future__ import annotations

from html import escape


class Reveal:
    """`text` (a table, printed as is) behind a click whose label is `summary`."""

    def __init__(self, text, summary: str = "The table"):
        self.text, self.summary = str(text), summary

    def _repr_html_(self) -> str:
        return (f"<details><summary>{escape(self.summary)}</summary>"
                f"<pre>{escape(self.text)}</pre></details>")

    def __repr__(self) -> str:
        return self.text
