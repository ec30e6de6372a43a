"""Confluence as a source: pages (storage format) -> Markdown -> H2/H3 section chunks.

:mod:`.client` talks to Confluence through atlassian-python-api (Cloud: email + API
token; Data Center: personal access token), :mod:`.convert` turns storage XHTML into
Markdown, :mod:`.sync` indexes a space incrementally and reconciles deletions.
"""
