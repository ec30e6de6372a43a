"""Named refs on the read side, without an index: which ref source a ``--ref`` or a
question names (bot/refs.py), the chat ``--ref`` option, and a ref's citation link."""
from __future__ import annotations

import pytest

from common.errors import BadInput
from indexer.models import SourceRecord


def _records():
    return [SourceRecord(name="shop", commit="a" * 40),
            SourceRecord(name="shop@v1", kind="git-ref", commit="b" * 40, base="shop", ref="v1", differs=["x.py"]),
            SourceRecord(name="shop@v2.3", kind="git-ref", commit="c" * 40, base="shop", ref="v2.3"),
            SourceRecord(name="shop@release/4.x", kind="git-ref", commit="d" * 40, base="shop", ref="release/4.x"),
            SourceRecord(name="api", commit="e" * 40),
            SourceRecord(name="api@v1", kind="git-ref", commit="f" * 40, base="api", ref="v1")]


def test_resolve_ref_by_repo_scope_and_the_error_lists_indexed_refs():
    from bot.refs import resolve_ref

    assert [v.name for v in resolve_ref(_records(), "v1")] == ["api@v1", "shop@v1"]
    assert [v.name for v in resolve_ref(_records(), "v1", repos=["shop"])] == ["shop@v1"]
    assert [v.name for v in resolve_ref(_records(), "v1", allowed={"api"})] == ["api@v1"]
    with pytest.raises(BadInput, match=r"no indexed ref 'v9' of shop \(indexed refs of shop: release/4.x, "
                                       r"v1, v2.3\)$"):
        resolve_ref(_records(), "v9", repos=["shop"])
    # every repository's refs, each in the form --ref takes (never shop@v1, which it rejects)
    with pytest.raises(BadInput, match=r"no indexed ref 'v9' \(indexed refs: api: v1; shop: release/4.x, v1, "
                                       r"v2.3\)$"):
        resolve_ref(_records(), "v9")
    with pytest.raises(BadInput, match=r"indexed refs: none"):
        resolve_ref([SourceRecord(name="shop")], "v1")


@pytest.mark.parametrize("question,ref,rest", [
    ("how is the total computed in v2.3?", "v2.3", "how is the total computed?"),
    ("What does checkout do on release/4.x", "release/4.x", "What does checkout do"),
    ("as of v1, where is tax rounded?", "v1", "where is tax rounded?"),
    ("where is tax rounded in version 2.3?", "v2.3", "where is tax rounded?"),
    ("what changed in release 4.x", "release/4.x", "what changed"),
])
def test_a_version_named_in_a_question_selects_its_ref(question, ref, rest):
    from bot.refs import ref_in_question

    views, cleaned = ref_in_question(question, _records(), repos=["shop"])
    assert [v.ref for v in views] == [ref] and cleaned == rest


@pytest.mark.parametrize("question", ["how is the total computed in Python?", "what is in v9?",
                                      "where is the v1 API client?", "how is tax computed?"])
def test_a_question_naming_no_indexed_ref_is_an_ordinary_question(question):
    from bot.refs import ref_in_question

    assert ref_in_question(question, _records(), repos=["shop"]) is None


def _click():
    return [SourceRecord(name="click", commit="a" * 40),
            *[SourceRecord(name=f"click@{r}", kind="git-ref", commit="b" * 40, base="click", ref=r)
              for r in ("8.1.7", "8.1.8", "8.1.9")]]


@pytest.mark.parametrize("records,question,version", [
    (_click, "What did echo do in 8.1.3?", "8.1.3"),
    (_click, "as of 8.0.0, where is the group decorator?", "8.0.0"),
    (_records, "how is tax computed in v3?", "v3"),
    (_records, "what does checkout do on release/5.x", "release/5.x"),
    (_records, "what changed in release 5.x", "release/5.x"),
    (_records, "where is tax rounded in version 2.4?", "v2.4"),
])
def test_a_version_shaped_like_the_indexed_refs_but_not_indexed_is_found(records, question, version):
    from bot.refs import unindexed_version

    found = unindexed_version(question, records(), repos=["click"] if records is _click else ["shop"])
    assert found is not None and found[0] == version


@pytest.mark.parametrize("question", [
    "does echo handle HTTP 404 in Python 3.10?", "does the server listen on port 8080?", "what happens for 404 errors?",
    "what changed in 3.10?", "what did echo do in 8.1.8?", "how many options for 2 commands?", "tested on 2024-01-05",
])
def test_numbers_that_are_no_version_of_the_repository_are_left_alone(question):
    from bot.refs import unindexed_version

    assert unindexed_version(question, _click()) is None


def test_a_channel_reads_the_refs_of_the_repos_it_may_read():
    from bot.refs import allow_refs, ref_in_question

    assert ref_in_question("total in v1?", _records(), allowed={"billing"}) is None
    views, _ = ref_in_question("total in v1?", _records(), repos=["shop"], allowed={"shop"})
    assert allow_refs({"shop"}, views) == {"shop", "shop@v1"} and allow_refs(None, views) is None


def test_chat_ref_option_and_impact_with_it_is_one_symbol():
    from bot.chat.commands import parse
    from bot.refs import split_ref_option

    assert split_ref_option("Cart.total --ref v2") == ("Cart.total", "v2")
    assert split_ref_option("billing/ --ref=release/4.x") == ("billing/", "release/4.x")
    assert split_ref_option("who knows the cart?") == ("who knows the cart?", None)
    assert parse("impact Cart.total --ref v2").error is None
    assert parse("impact Cart.total Cart.tax").error is not None


def test_a_ref_citation_links_with_its_repositorys_template_at_the_refs_commit():
    from bot.chat.links import source_url

    tpl = {"shop": "https://github.com/acme/{repo}/blob/{commit}/{path}#L{start}-L{end}"}
    assert source_url(tpl, "shop@v1", "b" * 7, "x.py", 1, 2) == "https://github.com/acme/shop/blob/bbbbbbb/x.py#L1-L2"
    assert source_url(tpl, "api@v1", "f" * 7, "x.py", 1, 2) is None


def test_refs_are_listed_in_version_order_as_ref_takes_them():
    from bot.refs import listed_refs

    assert listed_refs([("click", "8.1.10"), ("click", "8.1.9"), ("click", "8.1.8")]) == \
        "indexed refs of click: 8.1.8, 8.1.9, 8.1.10"
    assert listed_refs([]) == "indexed refs: none"


def test_a_ref_record_keeps_its_fields_and_others_show_none():
    rec = _records()[1]
    assert rec.to_dict()["differs"] == ["x.py"] and rec.is_ref
    plain = _records()[0].to_dict()
    assert not {"base", "ref", "differs"} & set(plain)


def _itsd():
    return [SourceRecord(name="itsd", commit="a" * 40),
            *[SourceRecord(name=f"itsd@{r}", kind="git-ref", commit="b" * 40, base="itsd", ref=r)
              for r in ("2.1.2", "2.2.0", "v1.0")]]


@pytest.mark.parametrize("question,ref", [
    ("how is the signature checked in v2.1.2?", "2.1.2"),  # a leading v is insignificant
    ("how is the signature checked in 2.1.2?", "2.1.2"),
    ("how is the signature checked in 1.0?", "v1.0"),
])
def test_a_version_with_or_without_a_leading_v_selects_its_ref(question, ref):
    from bot.refs import ref_in_question, unindexed_version

    views, cleaned = ref_in_question(question, _itsd(), repos=["itsd"])
    assert [v.ref for v in views] == [ref] and cleaned == "how is the signature checked?"
    assert unindexed_version(question, _itsd(), repos=["itsd"]) is None


@pytest.mark.parametrize("question,version", [("as of 2.1?", "2.1"), ("what does loads do in 2.2?", "2.2"),
                                              ("what does loads do in v2.2?", "v2.2")])
def test_a_leading_part_of_indexed_versions_is_said_not_to_be_an_indexed_ref(question, version):
    from bot.refs import ref_in_question, unindexed_version

    assert ref_in_question(question, _itsd(), repos=["itsd"]) is None
    found = unindexed_version(question, _itsd(), repos=["itsd"])
    assert found is not None and found[0] == version
    assert unindexed_version("how many options for 2 commands?", _itsd()) is None


def test_a_ref_source_is_named_with_its_commit_in_words_in_a_no_coverage_answer():
    """``itsd@2.2.0 at commit b041087``, never ``itsd@2.2.0@b041087``."""
    from bot.answer.service import _where

    sources = [{"name": "itsd@2.2.0", "commit": "b041087" + "0" * 33}, {"name": "itsd", "commit": "055309b" + "0" * 33}]
    assert _where(sources, ["itsd@2.2.0"]) == "itsd@2.2.0 at commit b041087"
    assert _where(sources, ["itsd"]) == "itsd@055309b"
    from bot.answer.guardrails import no_coverage_text

    assert "(itsd@2.2.0 at commit b041087)" in no_coverage_text(None, sources, ["itsd@2.2.0"])


@pytest.mark.parametrize("ref,message", [("", r"^empty --ref: give a tag or branch name \(--ref v2\)$"),
                                         (" ", r"^empty --ref"),
                                         ("itsd@", r"--ref takes the tag or branch name alone \(as --ref v2, no "
                                                   r"repo@\)$")])
def test_an_empty_or_repo_only_ref_is_a_clear_error(ref, message):
    from bot.refs import resolve_ref

    with pytest.raises(BadInput, match=message):
        resolve_ref(_itsd(), ref)


def _release_lines():
    """A repository whose only named refs are a release line (``2.1.x``) and ``stable``."""
    return [SourceRecord(name="itsd", commit="a" * 40),
            *[SourceRecord(name=f"itsd@{r}", kind="git-ref", commit="b" * 40, base="itsd", ref=r)
              for r in ("2.1.x", "stable")]]


@pytest.mark.parametrize("question,version", [
    ("how is the signature checked in 2.0.1?", "2.0.1"),
    ("as of 3.0.0, where is loads?", "3.0.0"),
    ("how is the signature checked in v2.0.1?", "v2.0.1"),
    ("what does loads do in 2.2.x?", "2.2.x"),
])
def test_a_release_version_beside_an_indexed_release_line_is_said_not_indexed(question, version):
    from bot.refs import ref_in_question, unindexed_version

    assert ref_in_question(question, _release_lines(), repos=["itsd"]) is None
    found = unindexed_version(question, _release_lines(), repos=["itsd"])
    assert found is not None and found[0] == version and [v.ref for v in found[1]] == ["2.1.x", "stable"]


@pytest.mark.parametrize("question", [
    "does it run in Python 3.12.1?", "what changed in 3.10?", "retry 3 times in 2 seconds", "is it on HTTP 2?",
    "where is the x.509 check done?", "what does loads do in 2.1.x?",
])
def test_numbers_beside_a_release_line_that_are_no_version_are_left_alone(question):
    from bot.refs import unindexed_version

    assert unindexed_version(question, _release_lines(), repos=["itsd"]) is None


@pytest.mark.parametrize("question", ["how is the order total computed for 3 items?", "what is in 2 carts?"])
def test_a_bare_number_beside_v_refs_is_no_version(question):
    from bot.refs import unindexed_version

    assert unindexed_version(question, _records(), repos=["shop"]) is None


@pytest.mark.parametrize("question,version", [
    ("how is the signature checked in v1?", "v1"),
    ("what does loads do on release/4.x?", "release/4.x"),
    ("as of v2.3, where is loads?", "v2.3"),
    ("how is it signed in version 3?", "version 3"),
    ("what is in release 5?", "release 5"),
    ("how is it signed at tag v0.9-rc1?", "v0.9-rc1"),
    ("how is the signature checked in V10?", "V10"),
])
def test_any_version_form_beside_a_release_line_is_said_not_indexed(question, version):
    """Only 2.1.x is indexed: a version written in another form is said not to be one."""
    from bot.refs import unindexed_version

    found = unindexed_version(question, _release_lines(), repos=["itsd"])
    assert found is not None and found[0] == version, found


@pytest.mark.parametrize("question", [
    "does the client retry 3 times in 2 seconds?", "does it time out in 1.5 seconds?", "is it on HTTP 2?",
    "does it run in python 3.11?", "does it run in V8?", "what is listening at 10.0.0.1?", "what runs on port 8080?",
    "how long is the token valid in 2.5.0 ms?", "how is it done for 3 items?",
])
def test_numbers_that_are_no_version_get_no_note_whatever_the_refs(question):
    from bot.refs import unindexed_version

    assert unindexed_version(question, _release_lines(), repos=["itsd"]) is None
    assert unindexed_version(question, _records(), repos=["shop"]) is None


def test_a_repository_without_indexed_refs_gets_no_note():
    from bot.refs import unindexed_version

    assert unindexed_version("how is it signed in v1?", [SourceRecord(name="itsd", commit="a" * 40)]) is None


@pytest.mark.parametrize("question,versions,rest", [
    ("how is tax computed in v10?", ["v10"], "how is tax computed?"),
    ("how is tax computed in V2?", ["v2"], "how is tax computed?"),
    ("as of release 5, where is loads?", ["release 5"], "where is loads?"),
    ("what retries in 2 seconds?", ["v2", "2"], "what retries in 2 seconds?"),
    ("how is tax computed in v1?", ["v2"], "how is tax computed in v1?"),
])
def test_without_version_drops_the_phrase_naming_the_version(question, versions, rest):
    """The phrase naming a version is no term of the code: dropped from what is searched
    (else "Nothing in shop@1a2b3c4 mentions V2" would answer every question naming one)."""
    from bot.answer.answerability import question_terms
    from bot.refs import without_version

    assert without_version(question, versions) == rest
    if rest != question:
        left = {t.text.lower() for t in question_terms(rest, [], [])}
        assert not {v.lower() for v in versions} & left
