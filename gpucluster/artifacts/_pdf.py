"""HTML to PDF with WeasyPrint for the review documents: nothing fetched from outside the page, fonts embedded
(WeasyPrint embeds subsets of every font it uses), relative links kept relative, no dates in the file."""

from __future__ import annotations

from pathlib import Path

import weasyprint
from weasyprint.urls import URLFetcher


def write_pdf(html: str, path: Path) -> None:
    """Render `html` (self-contained: inline CSS, inline SVG, data: images) to `path`.

    With no base URL WeasyPrint keeps relative links as written, so the PDF's links to the other artifacts
    resolve beside it; only data: URLs may be fetched, so a page that reaches out fails here rather than
    rendering differently offline."""
    fetcher = URLFetcher(allowed_protocols={"data"}, fail_on_errors=True)
    weasyprint.HTML(string=html, base_url=None, url_fetcher=fetcher).write_pdf(path)
