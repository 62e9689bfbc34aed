"""grep and name search: every query shape, cursors, filters, warnings, offsets files_read accepts."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_nextcloud.indexer.models import FileMeta
from mcp_nextcloud.reader import find, page

FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 80


@pytest.fixture
def corpus(index, put_text):
    w = index.writer()
    put_text(w, "/Documents/glued.txt", "Release notes: the newapp ships today.\n" + FILLER, mtime=1000.0)
    put_text(w, "/Documents/spaced.txt", FILLER + "\nPlease install the new app before Monday.\n", mtime=2000.0)
    put_text(w, "/Documents/french.md", "# Menu\n\nCafé crème et Crème brûlée.\n", kind="markdown", mtime=3000.0)
    long_text = (FILLER * 20) + "\nThe configuration file lives in /etc.\n" + (FILLER * 20)
    put_text(w, "/Archive/long.pdf", long_text, kind="pdf", mtime=4000.0,
             pages=[0, len(FILLER) * 10, len(FILLER) * 20, len(FILLER) * 30])
    put_text(w, "/Archive/syntax.txt", 'He said "(AND) OR: NEAR -x" col:on and left.\n', mtime=5000.0)
    put_text(w, "/Archive/prefix.txt", "Configure it, then reconfigure.\n", mtime=6000.0)
    return index


def paths(res):
    return sorted(h.path for h in res.hits)


def test_word_is_case_and_accent_insensitive(corpus):
    for q in ("creme", "CRÈME", "Crème", "crEme"):
        res = corpus.grep(q)
        assert paths(res) == ["/Documents/french.md"], q
        # Both matches sit on one line: one passage carries both, nothing more to see in the file.
        (p,) = res.hits[0].passages
        assert [m["text"] for m in p.matches] == ["crème", "Crème"] and p.text == "crème"
        assert res.hits[0].matchCount == 2 and res.hits[0].more is False


def test_quoted_phrase_matches_words_in_order_only(corpus):
    assert paths(corpus.grep('"creme brulee"')) == ["/Documents/french.md"]
    assert corpus.grep('"brulee creme"').total == 0
    # Unquoted, the words in any order are enough; the hit says it is not the phrase.
    res = corpus.grep("brulee creme")
    assert paths(res) == ["/Documents/french.md"] and res.hits[0].phrase is False
    assert corpus.grep("creme brulee").hits[0].phrase is True


def test_glued_words_both_ways(corpus):
    both = ["/Documents/glued.txt", "/Documents/spaced.txt"]
    assert paths(corpus.grep("new app")) == both
    assert paths(corpus.grep("newapp")) == both
    assert paths(corpus.grep("NEW-APP")) == both
    spaced = next(h for h in corpus.grep("newapp").hits if h.path == "/Documents/spaced.txt")
    assert spaced.passages[0].text == "new app"


def test_prefix_query(corpus):
    res = corpus.grep("config*")
    assert paths(res) == ["/Archive/long.pdf", "/Archive/prefix.txt"]
    assert corpus.grep("reconfig*").hits[0].path == "/Archive/prefix.txt"
    # A word matches at the start of words anyway ('*' changes nothing); quoted, it is the whole word only.
    assert paths(corpus.grep("config")) == ["/Archive/long.pdf", "/Archive/prefix.txt"]
    assert corpus.grep('"config"').total == 0


@pytest.mark.parametrize("query", ['"(AND) OR:', "AND OR NEAR", "col:on", "-x", "NEAR(", '"', "OR: NEAR", "((x"])
def test_fts_syntax_is_literal_never_an_error(corpus, query):
    res = corpus.grep(query) if any(c.isalnum() for c in query) else None
    if res is None:
        with pytest.raises(ValueError, match="no letters or digits"):
            corpus.grep(query)
        return
    assert res.total >= 1 and res.hits[0].path == "/Archive/syntax.txt"
    assert res.hits[0].passages, "a hit always shows where it is"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=30))
def test_any_query_gives_an_answer_or_a_clear_error(corpus, query):
    try:
        res = corpus.grep(query)
    except ValueError as exc:
        assert "query" in str(exc)
        return
    json.loads(res.to_json())
    for hit in res.hits:
        for p in hit.passages:
            assert p.offset >= 0 and p.length >= 0


def test_offsets_are_document_offsets_files_read_accepts(corpus):
    res = corpus.grep("configuration file")
    hit = res.hits[0]
    assert hit.path == "/Archive/long.pdf"
    doc = corpus.cached_document(corpus.get_file(path=hit.path))
    p = hit.passages[0]
    assert doc.text[p.offset:p.offset + p.length] == p.text == "configuration file"
    assert p.page == doc.page_of(p.offset) == 3
    assert p.line == doc.text.count("\n", 0, p.offset) + 1
    assert page(doc, offset=p.offset).content.startswith("configuration file")
    assert find(doc, "configuration file").matches[0].offset == p.offset
    assert p.passage in doc.text and len(p.passage) < 400


def test_ranking_and_json_shape(corpus):
    res = corpus.grep("lorem ipsum", limit=2)
    assert res.total == 3 and len(res.hits) == 2 and res.truncated and res.nextCursor
    assert res.hits[0].score >= res.hits[1].score
    d = json.loads(res.to_json())
    assert set(d) >= {"query", "hits", "total", "truncated", "nextCursor", "tookMs"}
    assert set(d["hits"][0]) == {"path", "fileId", "kind", "mtime", "size", "score", "phrase", "more", "passages"}
    assert set(d["hits"][0]["passages"][0]) == {"passage", "passageOffset", "page", "line", "matches"}
    p0 = d["hits"][0]["passages"][0]
    (at, n), *_ = p0["matches"]    # [offset, length]: the text is in the passage
    assert p0["passage"][at - p0["passageOffset"]:at - p0["passageOffset"] + n].lower() == "lorem ipsum"
    assert "totalIsEstimate" not in d and "folder" not in d["hits"][0]
    assert ": " not in res.to_json()[:20] and "\n" not in res.to_json().replace("\\n", "")


def test_cursor_pages_through_everything_and_foreign_cursor_is_refused(corpus):
    seen = []
    res = corpus.grep("lorem", limit=1)
    seen += [h.path for h in res.hits]
    while res.nextCursor:
        res = corpus.grep("lorem", limit=1, cursor=res.nextCursor)
        seen += [h.path for h in res.hits]
    assert len(seen) == len(set(seen)) == 3 and res.truncated is False
    first = corpus.grep("lorem", limit=1)
    with pytest.raises(ValueError, match="another query"):
        corpus.grep("ipsum", limit=1, cursor=first.nextCursor)
    with pytest.raises(ValueError, match="another query"):
        corpus.grep("lorem", limit=1, cursor=first.nextCursor, path_prefix="/Archive")
    with pytest.raises(ValueError, match="not one this index issued"):
        corpus.grep("lorem", cursor="garbage!!")


def test_cursor_is_bound_to_the_index(tmp_path, corpus, put_text):
    from mcp_nextcloud.indexer.index import Index

    other = Index.open(tmp_path / "other.db")
    for i in range(3):
        put_text(other.writer(), f"/x{i}.txt", "lorem")
    cur = other.grep("lorem", limit=1).nextCursor
    with pytest.raises(ValueError, match="another query"):
        corpus.grep("lorem", limit=1, cursor=cur)
    other.close()


def test_filters_path_kind_modified(corpus):
    assert paths(corpus.grep("lorem", path_prefix="/Documents")) == ["/Documents/glued.txt", "/Documents/spaced.txt"]
    assert paths(corpus.grep("lorem", path_prefix="/Documents/")) == ["/Documents/glued.txt", "/Documents/spaced.txt"]
    assert paths(corpus.grep("lorem", kinds=["pdf"])) == ["/Archive/long.pdf"]
    assert paths(corpus.grep("lorem", modified_after=1500.0)) == ["/Archive/long.pdf", "/Documents/spaced.txt"]
    assert corpus.grep("lorem", path_prefix="/Doc").total == 0  # a folder, not a string prefix


def test_warnings_name_pending_and_failed_files_and_last_indexed(corpus):
    w = corpus.writer()
    w.upsert(FileMeta(path="/Documents/todo.pdf", source="local", file_id=None, etag=None, size=1, mtime=1.0,
                      mime="application/pdf"))
    rec, _ = w.upsert(FileMeta(path="/Documents/locked.pdf", source="local", file_id=None, etag=None, size=1,
                               mtime=1.0, mime="application/pdf"))
    w.record_failure(rec.id, "failed", "encrypted PDF: ask the owner")
    res = corpus.grep("nothing-like-this-anywhere", path_prefix="/Documents")
    text = " ".join(res.warnings)
    assert res.total == 0
    assert "1 file(s) under /Documents are not indexed yet" in text and "/Documents/todo.pdf" in text
    assert "/Documents/locked.pdf (failed: encrypted PDF" in text
    assert "index last updated 20" in text
    assert corpus.grep("lorem", path_prefix="/Archive").warnings == []  # nothing hidden there
    empty = corpus.grep("lorem", path_prefix="/Nowhere")
    assert any("nothing is indexed under /Nowhere" in w for w in empty.warnings)


def test_empty_query_and_bad_limit_are_clear_errors(corpus):
    with pytest.raises(ValueError, match="empty query"):
        corpus.grep("   ")
    with pytest.raises(ValueError, match="limit"):
        corpus.grep("x", limit=0)


def test_search_names(corpus):
    res = corpus.search_names(name="*.txt")
    assert [f.path for f in res.files] == ["/Archive/prefix.txt", "/Archive/syntax.txt",
                                            "/Documents/spaced.txt", "/Documents/glued.txt"]  # newest first
    assert [f.path for f in corpus.search_names(name="FRENCH").files] == ["/Documents/french.md"]
    assert [f.path for f in corpus.search_names(name="long", path_prefix="/Archive").files] == ["/Archive/long.pdf"]
    assert corpus.search_names(name="long", path_prefix="/Documents").total == 0
    assert corpus.search_names(mime="text/plain").total == 6
    assert corpus.search_names(mime="text/").total == 6
    assert corpus.search_names(modified_after=4500.0).total == 2
    assert corpus.search_names(name="100%_").total == 0  # LIKE wildcards are literal
    page1 = corpus.search_names(limit=4)
    assert page1.truncated and page1.total == 6
    page2 = corpus.search_names(limit=4, cursor=page1.nextCursor)
    assert len(page2.files) == 2 and not page2.truncated
    assert not ({f.path for f in page1.files} & {f.path for f in page2.files})
    with pytest.raises(ValueError, match="another search"):
        corpus.search_names(name="x", cursor=page1.nextCursor)
    json.loads(page1.to_json())


def test_phrase_across_a_chunk_boundary_is_found(index, put_text):
    from mcp_nextcloud.indexer.store.chunking import chunk_text

    base = "alpha " * 1000
    pos = 3995 - len("polar")  # the space inside the phrase becomes the last space before 4,000 chars
    text = base[:pos - 1] + " polar bear " + base[pos + 11:]
    cuts = [c.start for c in chunk_text(text)]
    at = text.index("polar bear")
    assert any(at < c < at + len("polar bear") for c in cuts), "the phrase must straddle a chunk cut"
    rec = put_text(index.writer(), "/cut.txt", text)
    res = index.grep("polar bear")
    assert res.total == 1
    p = res.hits[0].passages[0]
    assert text[p.offset:p.offset + p.length] == "polar bear"
    assert index.cached_document(rec).text == text


# -- glued words: any number of words, both ways ---------------------------
@pytest.fixture
def glue(index, put_text):
    w = index.writer()
    put_text(w, "/Glue/glued3.txt", "Download it from the newappstore today.\n" + FILLER)
    put_text(w, "/Glue/spaced3.txt", FILLER + "\nOpen the new app store and search.\n")
    put_text(w, "/Glue/half.txt", "The newapp store opens at nine.\n" + FILLER)
    put_text(w, "/Glue/other.txt", "A store for a new kind of app.\n" + FILLER)  # same words, not as a phrase
    return index


GLUE3 = ["/Glue/glued3.txt", "/Glue/half.txt", "/Glue/spaced3.txt"]


@pytest.mark.parametrize("query", ["new app store", "newappstore", "newapp store", "new appstore", "NEW-APP-STORE"])
def test_three_glued_words_found_both_ways(glue, query):
    res = glue.grep(f'"{query}"')
    assert paths(res) == GLUE3, query
    # Unquoted, the three phrase hits still come first; a file with the words apart may follow.
    loose = glue.grep(query)
    assert sorted(h.path for h in loose.hits[:3]) == GLUE3 and all(h.phrase for h in loose.hits[:3])
    assert [h.path for h in loose.hits[3:]] == (["/Glue/other.txt"] if len(loose.hits) > 3 else [])
    by_path = {h.path: h for h in res.hits}
    # Passages show the text as written, whichever way the query was typed.
    assert by_path["/Glue/spaced3.txt"].passages[0].text == "new app store"
    assert by_path["/Glue/glued3.txt"].passages[0].text == "newappstore"
    assert by_path["/Glue/half.txt"].passages[0].text == "newapp store"


def test_glued_words_keep_their_order(glue):
    assert glue.grep('"store app new"').total == 0
    assert glue.grep("storeappnew").total == 0
    # Whole words: "app store" is not inside "newappstore" nor "newapp store".
    assert paths(glue.grep('"app store"')) == ["/Glue/spaced3.txt"]
    # Unquoted: the words apart match too, and the file holding the phrase ranks first.
    res = glue.grep("app store")
    assert [h.path for h in res.hits] == ["/Glue/spaced3.txt", "/Glue/other.txt"]
    assert [h.phrase for h in res.hits] == [True, False]


def test_variants_are_capped_fewest_words_first(glue):
    from mcp_nextcloud.indexer.search.query import MAX_VARIANTS, expand, parse

    con = glue.conn()
    pq = expand(con, parse(con, "newappstore"))
    assert pq.variants[0] == ["newappstore"]
    assert ["new", "app", "store"] in pq.variants and ["newapp", "store"] in pq.variants
    sizes = [len(v) for v in pq.variants[1:]]
    assert sizes == sorted(sizes) and len(pq.variants) <= MAX_VARIANTS
    # A literal phrase that is not in the index is still the first variant (and nothing is invented).
    pq = expand(con, parse(con, "zzqq xxyy"))
    assert pq.variants == [["zzqq", "xxyy"], ["zzqqxxyy"]]


def test_segmentations_fewest_pieces_first_and_capped():
    from mcp_nextcloud.indexer.search.query import _segmentations

    known = {"new", "app", "store", "newapp", "appstore", "ne", "wapp"}
    segs = _segmentations("newappstore", known, 16)
    assert segs[0] in (["newapp", "store"], ["new", "appstore"]) and len(segs[0]) == 2
    assert {tuple(s) for s in segs} == {("newapp", "store"), ("new", "appstore"), ("new", "app", "store"),
                                        ("ne", "wapp", "store")}
    assert [len(s) for s in segs] == sorted(len(s) for s in segs)
    # Many ways to cut: the cap holds and the fewest-pieces cut comes first.
    many = _segmentations("ab" * 12, {"ab", "abab", "ba", "bab", "aba", "ababab"}, 8)
    assert len(many) == 8 and len(many[0]) == 4 and all("".join(s) == "ab" * 12 for s in many)
    assert _segmentations("newappstorx", known, 16) == []


def test_long_glued_query_with_many_vocabulary_pieces_answers(index, put_text):
    # Every two- and three-letter piece is a word: the lookups stay bounded (batched) and the answer comes.
    words = " ".join(a + b for a in "abcdef" for b in "abcdef") + " " + " ".join(
        a + b + c for a in "abc" for b in "abc" for c in "abc")
    put_text(index.writer(), "/many.txt", words + "\nab cd ef ab cd ef ab cd ef ab cd ef ab cd\n")
    res = index.grep("abcdefabcdefabcdefabcdefabcd")
    assert res.total == 1 and res.hits[0].passages


# -- words vs phrases ------------------------------------------------------
@pytest.fixture
def budget(index, put_text):
    w = index.writer()
    put_text(w, "/b/phrase.txt", FILLER + "\nThe budget review is on Friday.\n" + FILLER[:500])
    # The words apart: "budget" alone early, then "review" next to a second "budget" much later.
    put_text(w, "/b/apart.txt", "A budget was drafted.\n" + FILLER[:1200] + "\nWe review, line by line, the budget.\n")
    put_text(w, "/b/one.txt", "Only the budget here.\n")
    return index


def test_unquoted_words_need_not_be_adjacent_and_phrase_ranks_first(budget):
    res = budget.grep("budget review")
    assert [(h.path, h.phrase) for h in res.hits] == [("/b/phrase.txt", True), ("/b/apart.txt", False)]
    assert res.total == 2 and not res.truncated
    assert [m["text"] for m in res.hits[0].passages[0].matches] == ["budget review"]
    # The words-only hit shows both words, from where they are closest (the last line), in one passage.
    apart = res.hits[1].passages[0]
    assert [m["text"] for m in apart.matches] == ["review", "budget"]
    assert "We review, line by line, the budget." in apart.passage
    assert "drafted" not in apart.passage
    # Quoted: exactly the phrase.
    assert paths(budget.grep('"budget review"')) == ["/b/phrase.txt"]


def test_words_query_pages_phrase_hits_then_word_hits(budget):
    first = budget.grep("review budget", limit=1)  # neither file has this phrase: both are word hits
    assert first.total == 2 and first.truncated and first.hits[0].phrase is False
    second = budget.grep("review budget", limit=1, cursor=first.nextCursor)
    assert {first.hits[0].path, second.hits[0].path} == {"/b/phrase.txt", "/b/apart.txt"}
    assert not second.truncated
    page1 = budget.grep("budget review", limit=1)
    page2 = budget.grep("budget review", limit=1, cursor=page1.nextCursor)
    assert [page1.hits[0].path, page2.hits[0].path] == ["/b/phrase.txt", "/b/apart.txt"]
    past = budget.grep("budget review", limit=1, cursor=page2.nextCursor) if page2.nextCursor else None
    assert past is None


def test_prefix_on_the_last_word_of_a_words_query(budget):
    res = budget.grep("budget rev*")
    assert [h.path for h in res.hits] == ["/b/phrase.txt", "/b/apart.txt"]
    assert [m["text"] for m in res.hits[1].passages[0].matches] == ["rev", "budget"]  # a prefix shows the prefix
    assert budget.grep('budget "rev"').total == 0  # quoted, "rev" is a whole word


# -- merged passages, honest counts ------------------------------------------
def test_close_matches_share_one_passage_with_every_offset(index, put_text):
    text = FILLER[:400] + "\nOtters here, otters there, otters everywhere.\n" + FILLER[:400]
    rec = put_text(index.writer(), "/o.txt", text)
    (hit,) = index.grep("otters").hits
    (p,) = hit.passages
    doc = index.cached_document(rec)
    assert [m["text"] for m in p.matches] == ["Otters", "otters", "otters"]
    assert doc.text[p.passageOffset:p.passageOffset + len(p.passage)] == p.passage
    for m in p.matches:
        assert doc.text[m["offset"]:m["offset"] + m["length"]] == m["text"]
        assert p.passageOffset <= m["offset"] and m["offset"] + m["length"] <= p.passageOffset + len(p.passage)
    assert (p.offset, p.length, p.text) == (p.matches[0]["offset"], p.matches[0]["length"], "Otters")
    assert p.passage.count("Otters here") == 1 and len(p.passage) < 2 * 120 + 60
    assert find(doc, "otters").total == 3 and hit.more is False


def test_more_is_true_exactly_when_the_file_has_matches_not_shown(index, put_text):
    w = index.writer()
    few = put_text(w, "/few.txt", "One quokka.\n" + FILLER[:800] + "\nTwo quokka.\n")
    many = put_text(w, "/many.txt", ("A quokka line.\n" + FILLER) * 12)   # matches in many chunks
    res = index.grep("quokka")
    by = {h.path: h for h in res.hits}
    for rec in (few, many):
        hit = by[rec.path]
        total = find(index.cached_document(rec), "quokka", limit=1).total
        assert (total > hit.matchCount) is hit.more, rec.path
    assert by["/few.txt"].more is True and len(by["/few.txt"].passages) == 1   # one passage per file by default
    shown = {h.path: h for h in index.grep("quokka", passages=3).hits}
    assert shown["/few.txt"].more is False and shown["/many.txt"].more is True
    assert shown["/few.txt"].matchCount == 2
    assert "matchCount" not in json.dumps(res.to_dict())


def test_many_matches_rank_a_window_total_is_at_least_and_paging_reaches_everything(index, put_text, monkeypatch):
    from mcp_nextcloud.indexer.search import rank as grep_rank

    for i in range(7):
        put_text(index.writer(), f"/cap/{i}.txt", f"wombat number {i}\n")
    monkeypatch.setattr(grep_rank, "RANK_WINDOW", 4)   # ranking walks the 4 newest matching chunks only
    res = index.grep("wombat", limit=1)
    assert res.total == 4 and res.totalIsEstimate and res.truncated
    assert res.to_dict()["totalIsEstimate"] is True
    assert any("ranked among the most recently indexed" in w for w in res.warnings)
    seen = [h.path for h in res.hits]
    while res.nextCursor:
        res = index.grep("wombat", limit=1, cursor=res.nextCursor)   # the window widens as pages go deeper
        seen += [h.path for h in res.hits]
    assert sorted(seen) == [f"/cap/{i}.txt" for i in range(7)] and len(seen) == 7
    monkeypatch.setattr(grep_rank, "RANK_WINDOW", 2000)
    exact = index.grep("wombat", limit=3)
    assert exact.total == 7 and not exact.totalIsEstimate and not exact.warnings


def test_window_ranking_equals_grouping_every_match(corpus, monkeypatch):
    """Files come in the order of their best chunk's bm25 (scaled by their focus: focus.py), as grouping every
    match by file gives."""
    from mcp_nextcloud.indexer.search import focus
    from mcp_nextcloud.indexer.search import rank as grep_rank
    from mcp_nextcloud.indexer.store.chunking import TARGET
    from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

    con = corpus.conn()
    chars = dict(con.execute("SELECT id, chars FROM docs").fetchall())
    for q in ("lorem", "lorem ipsum", "creme", "config*"):
        expr = corpus_expr(con, q)
        grouped = con.execute(f"SELECT rowid >> {CHUNK_BITS} AS fid, min(rank), count(*) FROM chunks_fts "
                              "WHERE chunks_fts MATCH ? GROUP BY fid", [expr]).fetchall()
        focused = {fid: best * (1 + focus.FOCUS * min(1.0, n * TARGET / max(TARGET, chars[fid])))
                   for fid, best, n in grouped}
        full = sorted(focused, key=lambda fid: (focused[fid], fid))
        top = grep_rank.top_files(con, expr, "", [], 100)
        assert [r.fid for r in top.files] == full, q
        assert grep_rank.count_files(top.scan) == (len(full), False)
        # A window smaller than the matches widens by tiers until the page is full: every file, none twice.
        monkeypatch.setattr(grep_rank, "RANK_WINDOW", 1)
        tiered = [r.fid for r in grep_rank.top_files(con, expr, "", [], 100).files]
        assert sorted(tiered) == sorted(full) and len(set(tiered)) == len(tiered)
        assert [r.fid for r in grep_rank.top_files(con, expr, "", [], 2).files] == tiered[:2]
        monkeypatch.setattr(grep_rank, "RANK_WINDOW", 2000)


def corpus_expr(con, q):
    from mcp_nextcloud.indexer.search.query import expand, parse

    return expand(con, parse(con, q)).tiers()[-1].expr


def test_hits_name_their_local_folder_when_several_are_indexed(index, tmp_path):
    from mcp_nextcloud.indexer.local.folder import index_folder

    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.txt").write_text(f"the numbat lives in {name}\n", encoding="utf-8")
    index_folder(index, tmp_path / "alpha", )
    one = index.grep("numbat")
    assert one.hits[0].folder is None and "folder" not in one.to_dict()["hits"][0]   # one folder: nothing to say
    index_folder(index, tmp_path / "beta", )
    res = index.grep("numbat")
    folders = {h.path: h.folder for h in res.hits}
    assert len(folders) == 2
    assert sorted(folders.values()) == sorted(r.folder for r in index.roots())
    for h in res.hits:
        assert index.root_of(index.get_file(path=h.path)).folder == h.folder
        assert h.to_dict()["folder"] == h.folder


def test_a_word_typed_twice_is_shown_once(budget):
    res = budget.grep("budget budget")
    for hit in res.hits:
        offsets = [m["offset"] for p in hit.passages for m in p.matches]
        assert offsets and len(offsets) == len(set(offsets)), hit.path
