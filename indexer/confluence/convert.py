"""Confluence storage format (XHTML with ``ac:``/``ri:`` elements) -> Markdown.

* ``ac:structured-macro ac:name="code"`` (and ``noformat``) -> fenced code with the
  macro's ``language`` parameter, body from the CDATA of ``ac:plain-text-body``;
* ``info``/``warning``/``note``/``tip``/``panel`` macros -> block quotes starting with
  ``**Info:**`` etc.; other macros keep their rich-text body (``toc`` and friends vanish);
* ``ac:link`` -> its link text (or the linked page's title); images and emoticons dropped;
* tables -> Markdown pipe tables, headings -> ATX (``##``), via markdownify.
"""
from __future__ import annotations

import html
import re

from bs4 import BeautifulSoup
from markdownify import MarkdownConverter

_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)
PANEL_MACROS = {"info": "Info", "warning": "Warning", "note": "Note", "tip": "Tip", "panel": "Panel"}
CODE_MACROS = {"code", "noformat"}


def _param(macro, name: str) -> str:
    for p in macro.find_all("ac:parameter", recursive=False):
        if p.get("ac:name") == name:
            return p.get_text().strip()
    return ""


def _rewrite(soup: BeautifulSoup) -> None:
    # Innermost macros first, so a code block inside a panel is converted before the panel.
    for macro in reversed(soup.find_all("ac:structured-macro")):
        name = (macro.get("ac:name") or "").lower()
        if name in CODE_MACROS:
            body = macro.find("ac:plain-text-body")
            pre = soup.new_tag("pre")
            lang = _param(macro, "language")
            if lang:
                pre["data-language"] = lang
            code = soup.new_tag("code")
            code.string = body.get_text() if body else ""
            pre.append(code)
            macro.replace_with(pre)
        elif name in PANEL_MACROS:
            quote = soup.new_tag("blockquote")
            label = soup.new_tag("p")
            strong = soup.new_tag("strong")
            title = _param(macro, "title")
            strong.string = f"{PANEL_MACROS[name]}:" + (f" {title}" if title else "")
            label.append(strong)
            quote.append(label)
            body = macro.find("ac:rich-text-body")
            if body is not None:
                for child in list(body.contents):
                    quote.append(child.extract())
            macro.replace_with(quote)
        else:
            body = macro.find("ac:rich-text-body")
            if body is not None:
                body.name = "div"
                macro.replace_with(body.extract())
            else:
                macro.decompose()
    for link in soup.find_all("ac:link"):
        body = link.find(["ac:plain-text-link-body", "ac:link-body"])
        page = link.find("ri:page")
        text = body.get_text() if body else (page.get("ri:content-title", "") if page else "")
        link.replace_with(text)
    for tag in soup.find_all(["ac:image", "ac:emoticon", "ac:parameter", "ac:placeholder"]):
        tag.decompose()
    for tag in soup.find_all(re.compile(r"^(ac|ri):")):
        tag.unwrap()


class _Converter(MarkdownConverter):
    pass


def storage_to_markdown(storage: str) -> str:
    """Markdown of one page body in storage format; never raises on odd markup."""
    text = _CDATA.sub(lambda m: html.escape(m.group(1)), storage or "")
    soup = BeautifulSoup(text, "html.parser")
    _rewrite(soup)
    md = _Converter(heading_style="ATX", bullets="-", table_infer_header=True,
                    code_language_callback=lambda el: el.get("data-language") or "").convert_soup(soup)
    return re.sub(r"\n{3,}", "\n\n", md).strip() + "\n"


def page_markdown(title: str, storage: str) -> str:
    """The indexed text of a page: ``# title`` then the converted body."""
    return f"# {title}\n\n{storage_to_markdown(storage)}"
