"""Inline Markdown of the documentation as HTML, for the workbench's help pages (rendering only)."""

from __future__ import annotations

import re

from markupsafe import Markup, escape


def markdown_inline(text: str) -> Markup:
    """The inline Markdown of a documentation bullet as HTML: escaped first, then ``code`` and
    **bold** (nothing else of Markdown is used in those bullets)."""
    html = str(escape(text))
    html = re.sub(r"`([^`]+)`", r"<code>\1</code>", html)
    html = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html)
    return Markup(html)  # built from escaped text


__all__ = ["markdown_inline"]
