"""HTML pages saved by a scraper, and the XHTML inside EPUBs: the visible text only.

Scripts, styles and the page head are dropped; block elements end a line. Report offsets of a
passage from an HTML file index into this extracted text.
"""

from __future__ import annotations

from html.parser import HTMLParser

INVISIBLE = {"script", "style", "noscript", "template", "head", "svg", "iframe", "object"}
BLOCKS = {
    "p", "div", "br", "hr", "li", "ul", "ol", "tr", "table", "section", "article", "blockquote",
    "h1", "h2", "h3", "h4", "h5", "h6", "pre", "dd", "dt", "header", "footer", "nav", "title",
}  # fmt: skip
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


class _VisibleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[str] = []
        self.hidden = 0
        self.heading: list[str] | None = None
        self.first_heading: str | None = None
        self.title: list[str] = []
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag in INVISIBLE:
            self.hidden += 1
        elif tag in BLOCKS:
            self.pieces.append("\n")
        if tag in HEADINGS and self.first_heading is None:
            self.heading = []

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in BLOCKS:
            self.pieces.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in INVISIBLE:
            self.hidden = max(0, self.hidden - 1)
        elif tag in BLOCKS:
            self.pieces.append("\n")
        if tag in HEADINGS and self.heading is not None:
            self.first_heading = " ".join("".join(self.heading).split()) or None
            self.heading = None

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if self.hidden:
            return
        self.pieces.append(data)
        if self.heading is not None:
            self.heading.append(data)


def visible_text(markup: str) -> tuple[str, str | None]:
    """The page's visible text, one block per line, and its first heading (else its <title>)."""
    parser = _VisibleText()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.pieces).split("\n"))
    text = "\n".join(line for line in lines if line)
    title = parser.first_heading or (" ".join("".join(parser.title).split()) or None)
    return (text + "\n" if text else ""), title
