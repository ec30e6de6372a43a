"""Tests for Markdown and RST section chunking."""
from indexer.chunking import chunk_file

MARKDOWN = """\
# Coderag

Search your code.

## Install

```bash
# not a heading
pip install coderag
```

### From source

~~~
## also not a heading
~~~

#### Details stay inside

Build it.

## Usage
Run it.
"""


def spans(chunks):
    return [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks]


def test_markdown_sections_and_fences():
    chunks = chunk_file("README.md", MARKDOWN)
    assert spans(chunks) == [
        ("section", "Coderag", 1, 3),
        ("section", "Coderag > Install", 5, 10),
        ("section", "Coderag > Install > From source", 12, 20),
        ("section", "Coderag > Usage", 22, 23),
    ]
    lines = MARKDOWN.split("\n")
    for c in chunks:
        assert c.language == "markdown"
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line])
    assert "# not a heading" in chunks[1].text
    assert "## also not a heading" in chunks[2].text
    assert "#### Details stay inside" in chunks[2].text


def test_markdown_without_title_and_setext():
    text = "Intro line.\n\nSetup\n-----\n\nDo this.\n\n### Deep\nx\n"
    assert spans(chunk_file("a.md", text)) == [
        ("section", "", 1, 1),
        ("section", "Setup", 3, 6),
        ("section", "Setup > Deep", 8, 9),
    ]


def test_markdown_front_matter_is_not_a_heading():
    text = "---\ntitle: x\n---\n# T\n\n## A\nbody\n"
    assert spans(chunk_file("a.md", text)) == [("section", "T", 1, 4), ("section", "T > A", 6, 7)]


def test_markdown_second_h1_starts_a_section():
    text = "# One\na\n## Sub\nb\n# Two\nc\n"
    assert spans(chunk_file("a.md", text)) == [
        ("section", "One", 1, 2), ("section", "One > Sub", 3, 4), ("section", "Two", 5, 6)]


def test_long_markdown_section_is_windowed():
    body = "\n".join(f"para {i}" for i in range(1, 200))
    text = f"# T\n\n## Long\n{body}\n## Next\nend\n"
    chunks = chunk_file("a.md", text, max_chunk_lines=150)
    assert [(c.symbol, c.start_line, c.end_line, c.extra) for c in chunks] == [
        ("T", 1, 1, {}),
        ("T > Long", 3, 102, {"part": 1}),
        ("T > Long", 83, 182, {"part": 2}),
        ("T > Long", 163, 202, {"part": 3}),
        ("T > Next", 203, 204, {}),
    ]


RST = """\
=======
Coderag
=======

Search your code.

Install
-------

Use pip::

    # not a title
    -------------

Sub
~~~

More.

.. code-block:: text

    Title
    =====

Usage
-----

Run it.
"""


def test_rst_sections():
    chunks = chunk_file("docs/index.rst", RST)
    assert spans(chunks) == [
        ("section", "Coderag", 1, 5),
        ("section", "Coderag > Install", 7, 13),
        ("section", "Coderag > Install > Sub", 15, 23),
        ("section", "Coderag > Usage", 25, 28),
    ]
    assert chunks[0].text.startswith("=======\nCoderag\n=======")
    assert all(c.language == "rst" for c in chunks)


def test_rst_levels_follow_first_seen_style():
    text = "Top\n***\n\nA\n===\n\nx\n\nB\n---\n\ny\n\nC\n===\n\nz\n"
    assert spans(chunk_file("a.rst", text)) == [
        ("section", "Top", 1, 2),
        ("section", "Top > A", 4, 7),
        ("section", "Top > A > B", 9, 12),
        ("section", "Top > C", 14, 17),
    ]


def test_empty_docs():
    assert chunk_file("a.md", "") == []
    assert chunk_file("a.rst", "\n\n") == []
