"""HTML to PDF with WeasyPrint for the review documents: nothing fetched from outside the page, fonts embedded
(WeasyPrint embeds subsets of every font it uses), relative links kept relative, no dates in the file."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from gpucluster.errors import MissingSystemLibrary

PANGO_PACKAGES = "libpango-1.0-0 libpangoft2-1.0-0"  # Debian/Ubuntu packages WeasyPrint loads at import

# WeasyPrint imported with this module (half a second): the writers side by side import a writer's module in the main
# process when its turn comes, so the report's last job, forked after, finds it imported. Without Pango, write_pdf
# says how to install it.
with contextlib.suppress(OSError):
    import weasyprint  # noqa: F401


def write_pdf(html: str, path: Path, laid_out: Callable[[], object] | None = None) -> None:
    """Render `html` (self-contained: inline CSS, inline SVG, data: images) to `path`.

    With no base URL WeasyPrint keeps relative links as written, so the PDF's links to the other artifacts
    resolve beside it; only data: URLs may be fetched, so a page that reaches out fails here rather than
    rendering differently offline. `laid_out` is called between laying out the pages and drawing them (progress)."""
    try:
        import weasyprint
        from weasyprint.urls import URLFetcher
    except OSError as error:  # cffi could not open Pango
        raise MissingSystemLibrary(
            f"{path.name} needs the Pango library ({error}); install it with: sudo apt-get install {PANGO_PACKAGES}"
        ) from None
    fetcher = URLFetcher(allowed_protocols={"data"}, fail_on_errors=True)
    document = weasyprint.HTML(string=html, base_url=None, url_fetcher=fetcher).render()
    if laid_out is not None:
        laid_out()
    document.write_pdf(path)
