"""Relevance for every query (issue 36): bm25 ranks every ordinary query, word forms and word starts included.

A word that starts many indexed words ("config": configure, configuration, configparser, ...) used to push
its expansion past rank.MAX_RANKED_PHRASES, and its files came newest first. Now the budget cuts the
expansion (the words closest to the one typed are ranked), never the ranking; files holding only the rarer
words still come, after the ranked ones.
"""
from __future__ import annotations

from collections import Counter

from mcp_nextcloud.indexer.search import rank
from mcp_nextcloud.indexer.search.query import expand, parse
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

# A manual page about configuration (dense) and newer notes that mention it once among other text.
MANUAL = (
    "Configuration files\n"
    "The configuration of the daemon lives in /etc/daemon.conf. Each configuration option is one line; the "
    "configuration is read at start. To change the configuration, edit the file and restart: a configured "
    "option overrides the default. Options can be configured per host, and a configuration that fails to "
    "parse is reported with its line.\n")
NOTES = (
    "Release notes\n"
    "This release speeds up startup, fixes the crash on empty input and adds a progress bar. The daemon is "
    "now configurable from the command line too. Translations were updated for German and French, the "
    "manual page gained examples, and the test suite runs twice as fast. Thanks to every contributor.\n")
# Words that start with "config" as a real tree of files holds them (module names, files, plurals).
VOCABULARY = ("configparser configs configfile configurations configures configuring configurator "
              "configlet configdir configobj configtool configspec configmgr configchecker configurational")
RARE = "Our team wrote a configurationsassistent for the new office; it guides every step of the setup.\n"


def _put(index, put_text) -> None:
    w = index.writer()
    put_text(w, "/manual.txt", MANUAL, mtime=1_600_000_000.0)                       # the oldest
    for k in range(3):
        put_text(w, f"/notes-{k}.txt", NOTES, mtime=1_700_000_000.0 + k)            # newer
    put_text(w, "/modules.txt", "Modules of the toolkit: " + VOCABULARY + ".\n", mtime=1_650_000_000.0)
    put_text(w, "/office.txt", RARE, mtime=1_800_000_000.0)                        # the newest


def test_a_word_that_starts_many_words_is_ranked_by_relevance(index, put_text):
    _put(index, put_text)
    con = index.conn()
    pq = expand(con, parse(con, "config"))
    assert len(pq.groups[0][0].words or []) > rank.MAX_RANKED_PHRASES    # the case the issue saw
    res = index.grep("config", limit=10)
    paths = [h.path for h in res.hits]
    # The manual says it most, though it is the oldest: bm25, not newest first (the notes are newer).
    assert paths.index("/manual.txt") < min(paths.index(f"/notes-{k}.txt") for k in range(3))
    assert not any("not by relevance" in n for n in res.notes)
    assert set(paths) == {"/manual.txt", "/modules.txt", "/office.txt", "/notes-0.txt", "/notes-1.txt",
                          "/notes-2.txt"} and res.total == 6
    # The newest file holds only a rare, long word: it is still found, after the ranked files, and said.
    assert paths[-1] == "/office.txt"
    assert any("rarer, longer words" in n for n in res.notes)
    ranked = [h.score for h in res.hits[:-1]]
    assert ranked == sorted(ranked, reverse=True) and ranked[0] > 0


def test_every_tier_of_an_ordinary_query_is_within_the_ranking_budget(index, put_text):
    _put(index, put_text)
    con = index.conn()
    assert expand(con, parse(con, "config")).tiers()[-1].rest
    for query in ("config", "configuration daemon", "config daemon options"):
        tiers = expand(con, parse(con, query)).tiers()
        assert all(rank.ranked_cheaply(t.expr) for t in tiers if not t.rest), query
        assert [t.rest for t in tiers].count(True) <= 1 and not any(t.rest for t in tiers[:-1]), query
        assert not any("not by relevance" in n for n in index.grep(query).notes), query


def test_a_quoted_phrase_of_two_words_is_ranked(index, put_text):
    _put(index, put_text)
    res = index.grep('"configuration files"')
    assert [h.path for h in res.hits] == ["/manual.txt"] and res.hits[0].score > 0
    assert not any("not by relevance" in n for n in res.notes)


def test_a_file_named_for_the_words_ranks_above_one_that_only_mentions_them(index, put_text):
    """titles.py: a manual's section page on backups outranks a chapter that mentions backups more often."""
    chapter = ("Disks and filesystems\nA new disk is partitioned with fdisk, formatted with mkfs and mounted "
               "from /etc/fstab. Keep a backup before resizing a partition: a failed resize loses the data. "
               "Quotas limit what each user may store; a backup of the quota files is not needed, a backup of the "
               "partition table is.\n")
    section = ("Making copies\nCopies of your files on another disk guard against a failed disk. rsync copies "
               "what changed; run it every night. A backup you never restored is not a backup you can trust.\n")
    w = index.writer()
    put_text(w, "/manual/storage.txt", chapter)          # first: it wins every tie on its rowid
    put_text(w, "/manual/backup.txt", section)
    res = index.grep("backup")
    assert [h.path for h in res.hits] == ["/manual/backup.txt", "/manual/storage.txt"]
    assert res.hits[0].score >= res.hits[1].score


def test_a_name_boosts_by_the_share_of_query_words_starting_one_of_its_words(index, put_text):
    """titles.boost finds named files by a prefix lookup in the names' sorted words (no walk of every file):
    a query word counts where it starts a word of the name ("back" in "backup-guide"), not inside one."""
    from mcp_nextcloud.indexer.search import titles

    w = index.writer()
    ids = {path: put_text(w, path, "Some text about storage.\n").id
           for path in ("/docs/Backup-Guide.txt", "/docs/guide.txt", "/docs/feedback.txt", "/docs/other.txt")}
    factors = titles.boost(index.conn(), ["back", "guide"])
    assert factors is not None
    got = factors(set(ids.values()))
    full, half = 1.0 + titles.NAME_BOOST, 1.0 + titles.NAME_BOOST / 2
    assert got == {ids["/docs/Backup-Guide.txt"]: full, ids["/docs/guide.txt"]: half}
    assert titles.boost(index.conn(), ["zebra"]) is None


def test_files_of_equal_rank_come_in_the_order_they_were_indexed_on_every_page(index, put_text):
    """rank.top_files sorts the newest-first rows reversed on bm25 alone (a stable sort): equal ranks keep
    rowid order, the order a (bm25, rowid) key gave, so cursor pages agree."""
    w = index.writer()
    paths = [f"/same/copy-{k}.txt" for k in range(6)]
    for p in paths:
        put_text(w, p, "The rsync backup runs every night and keeps thirty days of copies.\n")
    res = index.grep("thirty", limit=6)
    assert [h.path for h in res.hits] == paths
    first = index.grep("thirty", limit=3)
    rest = index.grep("thirty", limit=3, cursor=first.nextCursor)
    assert [h.path for h in first.hits + rest.hits] == paths


def test_a_phrase_of_more_than_three_words_is_not_cut_into_other_indexed_words(index, put_text):
    """query.expand tries glued and re-cut variants ("new app store" -> "newappstore") for a short phrase or a
    quoted one only: for a question's words every piece of them glued was looked up (hundreds of lookups)."""
    _put(index, put_text)
    con = index.conn()
    assert len(expand(con, parse(con, "configuration daemon option")).variants) > 1
    assert expand(con, parse(con, "configuration of the daemon option line")).variants == []
    assert len(expand(con, parse(con, '"configuration of the daemon option"')).variants) >= 1


def test_the_last_tier_reuses_the_broad_walk_only_when_it_is_the_same_walk(index, put_text):
    """grep walks its broadest tier unranked first; the last tier's top_files takes that walk instead of
    making it again (it was 6-14 ms of a question on a real corpus), never one made from a floor or ranked."""
    _put(index, put_text)
    con = index.conn()
    expr = expand(con, parse(con, "config")).tiers()[-1].expr
    walked = rank.scan(con, expr, ranked=False)
    assert walked.matches(expr, rank.RANK_WINDOW, ranked=False)
    assert not walked.matches(expr, rank.RANK_WINDOW, ranked=True)
    assert not rank.scan(con, expr, ranked=False, floor=walked.rows[-1][0]).matches(expr, rank.RANK_WINDOW, False)
    fresh = rank.top_files(con, expr, "", [], 5)
    reused = rank.top_files(con, expr, "", [], 5, walked=walked if not rank.ranked_cheaply(expr) else None)
    assert fresh.files == reused.files


def test_a_questions_keyword_side_has_no_uncut_expansion_tier(index, put_text):
    """The uncut word-start expansion (every rarer word the query's words start) follows the ranked tiers of
    a keyword query; a question's keyword side (uncut_tier=False, set by grep) stops at the ranked tiers:
    meaning answers it, and that walk was 6-14 ms of a question on a real corpus."""
    from dataclasses import replace

    _put(index, put_text)
    con = index.conn()
    words = expand(con, parse(con, "config daemon"))
    assert words.tiers()[-1].rest
    question = replace(expand(con, parse(con, "config daemon")), uncut_tier=False)
    assert not any(t.rest for t in question.tiers())
    assert [t for t in words.tiers() if not t.rest] == question.tiers()


def test_a_page_about_a_word_ranks_above_a_book_that_mentions_it_in_one_chapter(index, put_text):
    """focus.py: the book's chapter says "anacron" more densely than the page does, but in one chunk of many;
    the page holds it in each of its chunks. Neither file's name holds the word (no name boost)."""
    from mcp_nextcloud.indexer.search import focus

    filler = ("The installer asks for the keyboard layout, the time zone and the disks to use; then it copies "
              "the base system and configures the boot loader before the first start.\n\n") * 14
    chapter = ("Scheduling\nanacron runs the daily jobs that cron missed; anacron reads /etc/anacrontab, and "
               "anacron keeps timestamps of the last run of each job. Use anacron on laptops.\n\n")
    book = filler * 6 + chapter + filler * 6                       # ~28 k characters, the word in one chunk
    page = ("Jobs on machines that sleep\nOn a laptop that is off at night, daily jobs are run later by "
            "anacron (the anacron package), which remembers when each one last ran.\n\n"
            + "Its table lists the period, the delay and the command of each job; a job missed while the machine "
            "was off runs once it is up.\n" * 12)
    w = index.writer()
    put_text(w, "/manual/complete-book.txt", book)       # first: it wins every tie on its rowid
    put_text(w, "/manual/laptops.txt", page)
    con = index.conn()
    book_id, page_id = (index.get_file(path=p).id for p in ("/manual/complete-book.txt", "/manual/laptops.txt"))
    best: dict[int, float] = {}
    for rid, score in con.execute("SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH 'anacron'"):
        best[rid >> CHUNK_BITS] = min(score, best.get(rid >> CHUNK_BITS, 0.0))
    assert best[book_id] < best[page_id]                 # plain bm25 prefers the book's chapter
    assert [h.path for h in index.grep("anacron").hits] == ["/manual/laptops.txt", "/manual/complete-book.txt"]
    got = focus.factors(con, Counter({book_id: 1, page_id: 1}), {book_id, page_id})
    assert got[page_id] == 1.0 + focus.FOCUS and 1.0 < got[book_id] < 1.0 + focus.FOCUS / 5


def _put_html(index, path: str, html: str) -> None:
    from mcp_nextcloud.indexer.models import FileMeta
    from mcp_nextcloud.reader.extract import extract

    w = index.writer()
    rec, _ = w.upsert(FileMeta(path=path, source="local", file_id=None, etag=None, size=len(html),
                               mtime=1_700_000_000.0, mime="text/html"))
    w.store_document(rec.id, extract(html.encode(), path.rsplit("/", 1)[-1]))


# A manual's section page, named in English, titled in German; its side menu opens on a lower heading.
TITLED = ("<html><body><div class='menu'><h3>Inhaltsverzeichnis</h3><p>Netzwerk, Dienste</p></div>"
          "<h2>14.2. Firewall oder Paketfilter</h2><p>Eine Firewall filtert den Verkehr zwischen Netzen. Der "
          "Kernel entscheidet anhand von Regeln, ob ein Paket angenommen wird; der Paketfilter des Kernels heißt "
          "netfilter.</p></body></html>")
MENTIONS = ("<html><body><h2>10.1. Netzwerk</h2><p>Ein Router verbindet Netze. Paketfilter auf dem Router, "
            "Paketfilter auf jedem Rechner: beide Paketfilter schützen.</p></body></html>")


def test_a_file_titled_for_the_words_ranks_above_one_that_only_mentions_them(index, put_text):
    """titles.py: a document's title (the first of its top-level headings, files.title) counts as its name:
    the page titled "Paketfilter" outranks the page that says it more often, under an English file name."""
    _put_html(index, "/manual/sect.networking.html", MENTIONS)      # first: it wins every tie on its rowid
    _put_html(index, "/manual/sect.firewall-packet-filtering.html", TITLED)
    titles = dict(index.conn().execute("SELECT path, title FROM files").fetchall())
    assert titles["/manual/sect.firewall-packet-filtering.html"] == "14.2. Firewall oder Paketfilter"
    assert [h.path for h in index.grep("Paketfilter").hits] == ["/manual/sect.firewall-packet-filtering.html",
                                                               "/manual/sect.networking.html"]


def test_a_v5_index_gets_the_titles_of_the_files_it_holds(tmp_path):
    """Schema v6 fills files.title from the outline an older index stored, by the same rule as prepare.py."""
    import apsw

    from mcp_nextcloud.indexer.index import Index

    db = tmp_path / "v5.db"
    with Index.open(db) as ix:
        _put_html(ix, "/manual/sect.networking.html", MENTIONS)
        _put_html(ix, "/manual/sect.firewall-packet-filtering.html", TITLED)
        ix.writer().call(lambda tx: tx.con.execute("UPDATE files SET title = NULL"))
    con = apsw.Connection(str(db))
    con.execute("ALTER TABLE files DROP COLUMN title; PRAGMA user_version=5")
    con.close()
    with Index.open(db) as ix:
        assert dict(ix.conn().execute("SELECT path, title FROM files").fetchall()) == {
            "/manual/sect.networking.html": "10.1. Netzwerk",
            "/manual/sect.firewall-packet-filtering.html": "14.2. Firewall oder Paketfilter"}
        assert ix.grep("Paketfilter").hits[0].path == "/manual/sect.firewall-packet-filtering.html"


def test_a_word_hits_passage_does_not_reach_back_into_the_navigation_bar(index, put_text):
    """furniture.py: the handbook's pages open on a navigation bar; the passage of a word in the heading below
    it is the heading and the sentence after it, not the bar (which the passage used to widen into)."""
    from mcp_nextcloud.indexer.search import furniture

    page = ("Download the ebook\nZurück\nDas Debian Administrationshandbuch\nWeiter\n10.8. DHCP\nDHCP (für Dynamic "
            "Host Configuration Protocol) ist ein Protokoll, mit dem ein Rechner seine Netzwerkeinstellungen "
            "automatisch erhält.\nDer Server heißt isc-dhcp-server.\n")
    put_text(index.writer(), "/handbook/sect.dhcp.html", page)
    (hit,) = index.grep("dhcp").hits
    p = hit.passages[0]
    assert p.passage.startswith("DHCP\nDHCP (für Dynamic Host Configuration Protocol)") and "Weiter" not in p.passage
    assert page[p.passageOffset:p.passageOffset + len(p.passage)] == p.passage
    assert [furniture.furniture(ln) for ln in page.split("\n")[:5]] == [True, True, False, True, False]
    assert furniture.numbered_heading("10.8. DHCP") and not furniture.furniture("10.8. DHCP")
    # Prose before a match stays its context: no furniture, no floor.
    assert furniture.after_furniture("A sentence.\nAnother one about DHCP.", 30, 90) == 0
