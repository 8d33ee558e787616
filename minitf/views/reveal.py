"""A long printed table behind a click. The figure above it says what the numbers show; the table
is there for a reader who wants every number, collapsed like a hint so it does not crowd the page.

    table_reveal(results.table())        # last line of a cell: "▸ The table", click to open

Its plain-text form (what a terminal, nbval or a test reads) is the table itself.
"""
from __future__ import annotations

import html


class TableReveal:
    """`text` (a table, printed as is) behind a click whose label is `summary`: Jupyter shows a
    collapsed `<details>` block holding the text as preformatted, like the course's Markdown reveals."""

    def __init__(self, text, summary: str = "The table"):
        self.text, self.summary = str(text), summary

    def _repr_html_(self) -> str:
        return (f"<details><summary>{html.escape(self.summary)}</summary>"
                f"<pre>{html.escape(self.text)}</pre></details>")

    def __repr__(self) -> str:
        return self.text


def table_reveal(text, summary: str = "The table") -> TableReveal:
    """`text` (a printed table) collapsed behind `summary`, for the last line of a notebook cell."""
    return TableReveal(text, summary)
