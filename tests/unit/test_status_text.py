"""The text `coderag status`: a long last error is cut at a word, with an ellipsis (the
whole error is in `coderag status --json`)."""
from __future__ import annotations

from bot.cli.index_cmds import LAST_ERROR_CHARS, _status_line, clip_words

ERROR = ("MirrorError: git fetch --prune failed in /var/lib/coderag/mirrors/svc.git: fatal: unable to access "
         "'https://git.example.com/platform/svc.git/': Could not resolve host: git.example.com after several "
         "attempts; check the network of this machine, its DNS resolver and the proxy settings of git")


def test_a_long_last_error_is_cut_at_a_word_with_an_ellipsis():
    line = _status_line({"name": "svc", "commit": "1a2b3c4d5e", "files": 3, "chunks": 9, "model": "m",
                         "last_error": ERROR})
    shown = line.split(" · last error: ", 1)[1]
    assert shown.endswith("…") and len(shown) <= LAST_ERROR_CHARS, shown
    kept = shown[:-1]
    assert ERROR.startswith(kept) and ERROR[len(kept)] == " ", (kept, ERROR[len(kept):len(kept) + 10])


def test_a_short_error_is_whole_and_a_single_long_word_is_cut_inside():
    assert clip_words("Error: boom", 200) == "Error: boom"
    assert clip_words("x" * 300, 10) == "x" * 9 + "…"
    assert clip_words("one two three", 9) == "one two…"
