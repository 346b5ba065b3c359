"""HTML to PDF with WeasyPrint for the review documents: nothing fetched from outside the page, fonts embedded
(WeasyPrint embeds subsets of every font it uses), relative links kept relative, no dates in the file.

No dates includes the embedded fonts: where the HarfBuzz subsetting library is missing, WeasyPrint subsets with
fontTools, whose save stamps each font's `head.modified` with the clock (seconds), so every build's PDF differed
in its font streams. fontTools takes that stamp from SOURCE_DATE_EPOCH when set (the reproducible-builds
convention); the PDF is written with it pinned."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from gpucluster.errors import MissingSystemLibrary

PANGO_PACKAGES = "libpango-1.0-0 libpangoft2-1.0-0"  # Debian/Ubuntu packages WeasyPrint loads at import
FONT_TIMESTAMP = "0"  # SOURCE_DATE_EPOCH while fonts are subset: the Unix epoch, a date that says "none"

# WeasyPrint imported with this module (half a second): the writers side by side import a writer's module in the main
# process when its turn comes, so the report's last job, forked after, finds it imported. Without Pango, write_pdf
# says how to install it.
with contextlib.suppress(OSError):
    import weasyprint  # noqa: F401


def write_pdf(html: str, path: Path, laid_out: Callable[[], object] | None = None) -> None:
    """Render self-contained `html` to `path`. Without a base URL relative links stay relative (they resolve beside
    the PDF); only data: URLs may be fetched, so a page that reaches out fails rather than rendering differently
    offline. `laid_out` is called between layout and drawing (progress)."""
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
    with _fixed_font_timestamp():
        document.write_pdf(path)


@contextlib.contextmanager
def _fixed_font_timestamp() -> Iterator[None]:
    """SOURCE_DATE_EPOCH pinned while fonts are subset (a build starts no threads to read the environment)."""
    before = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = FONT_TIMESTAMP
    try:
        yield
    finally:
        if before is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = before
