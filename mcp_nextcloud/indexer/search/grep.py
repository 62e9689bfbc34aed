"""grep over the index: FTS5 finds candidate chunks, `reader.find` makes the passages.

Semantics (indexer/search/syntax.py): every word must be in the file, each
matched at the start of a word (inflected forms are found); "quoted" is
exactly those whole words in that order; a OR b, -word / NOT word.

Ranking (indexer/search/rank.py) walks the query's tiers best first (the
phrase as whole words, the phrase at word starts, all the words as whole
words, all the words at word starts: query.py) and fills the page from
each in turn, so whole-word and phrase hits come before prefix-only and
scattered ones. Within a tier only the newest matching chunks are ranked by
bm25 and grouped by file. Passages (indexer/search/passages.py) come from
`reader.find` on the best chunk of each file, so they cost a few thousand
characters per file, never a whole-document scan, and every offset is a
`Document.text` offset that files_read accepts.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import apsw

from mcp_nextcloud.indexer.models import RecordStatus, iso_time
from mcp_nextcloud.indexer.search import answer, crossing, hybrid, score, semantic, titles
from mcp_nextcloud.indexer.search.keywords import keyword_side
from mcp_nextcloud.indexer.search.wordforms import index_languages
from mcp_nextcloud.indexer.search.picks import Pick, Ranking
from mcp_nextcloud.indexer.search.passages import CONTEXT, PASSAGES_PER_FILE, Passage, chunk_passages
from mcp_nextcloud.indexer.search.query import ParsedQuery, expand, parse
from mcp_nextcloud.indexer.search.syntax import MAX_PASSAGES, MAX_TERMS
from mcp_nextcloud.indexer.search.rank import (RANK_WINDOW, Scan, count_files, files_matching,
                                               other_chunk_matches, ranked_cheaply, scan, top_files)
from mcp_nextcloud.indexer.store.index import NO_OCR, Index
from mcp_nextcloud.indexer.store.rows import FILE_COLUMNS, _row_to_record, account_clause, prefix_clause

__all__ = ["CONTEXT", "PASSAGES_PER_FILE", "GrepHit", "GrepResult", "Passage", "grep", "make_cursor",
           "read_cursor", "coverage"]

MAX_LIMIT = 100
WARN_NAMES = 5
NEG_CAP = 5_000      # chunks walked to find the files an excluded word rules out


@dataclass(repr=False)
class GrepHit:
    """A matching file with its best passages.

    `more` is true when the file holds matches beyond those its passages
    show (files_read with find lists every one); `phrase` is false for a file
    that holds the query's words but not as the phrase. `folder` names the
    local folder of the file when the index holds several.
    """

    path: str
    fileId: int | None
    kind: str | None
    mtime: float
    size: int
    score: float
    passages: list[Passage] = field(default_factory=list)
    more: bool = False
    phrase: bool = True
    source: str = "local"
    folder: str | None = None
    match: str | None = None   # hybrid answers only: "words", "meaning" or "both" (indexer/search/semantic.py)

    def __repr__(self) -> str:
        return f"GrepHit(path={self.path!r}, score={self.score}, passages={len(self.passages)})"

    @property
    def matchCount(self) -> int:
        """Matches shown in the passages (not every match in the file: see `more`)."""
        return sum(len(p.matches) for p in self.passages)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "fileId": self.fileId, "kind": self.kind, "mtime": self.mtime,
                             "size": self.size, "score": self.score, "phrase": self.phrase, "more": self.more,
                             "passages": [p.to_dict() for p in self.passages]}
        if self.folder is not None:
            d["folder"] = self.folder
        if self.match is not None:
            d["match"] = self.match
        return d


@dataclass
class GrepResult:
    """Ranked hits, the number of matching files, paging, and what the index could not see.

    `total` is exact unless `totalIsEstimate`: then at least that many files match.
    """

    query: str
    hits: list[GrepHit] = field(default_factory=list)
    total: int = 0
    totalIsEstimate: bool = False
    truncated: bool = False
    nextCursor: str | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # how the query was read (literal operators, caps)
    tookMs: float = 0.0
    # The facts behind the coverage warnings, so each front end can add its own advice.
    unindexed: int = 0                       # files under the path not indexed yet (not searched)
    nothing_indexed: str | None = None       # the warning saying nothing at all is indexed under the path
    mode: str = "words"                      # "words", or "hybrid" (words and meaning, fused)
    meaning: dict[str, Any] | None = None    # hybrid: how much the meaning index covers ({files, of})
    meaning_warnings: list[str] = field(default_factory=list)   # what meaning could not cover (to warnings)
    nearest_only: bool = False               # no file holds the words: the hits are the nearest in meaning

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"query": self.query, "mode": self.mode, "hits": [h.to_dict() for h in self.hits],
                             "total": self.total, "truncated": self.truncated}
        if self.meaning is not None:
            d["meaning"] = self.meaning
        if self.notes:
            d["notes"] = self.notes
        if self.totalIsEstimate:
            d["totalIsEstimate"] = True
        if self.nextCursor:
            d["nextCursor"] = self.nextCursor
        if self.warnings:
            d["warnings"] = self.warnings
        d["tookMs"] = self.tookMs
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)


# -- cursors ---------------------------------------------------------------
def _binding(secret: bytes, parts: list[Any]) -> str:
    msg = json.dumps(parts, separators=(",", ":"), sort_keys=True, default=str).encode()
    return hmac.new(secret, msg, hashlib.sha256).hexdigest()[:16]


def make_cursor(secret: bytes, parts: list[Any], offset: int) -> str:
    """Opaque cursor: the next offset plus an HMAC of the query, filters and scope."""
    raw = json.dumps({"o": offset, "h": _binding(secret, parts)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(secret: bytes, parts: list[Any], cursor: str, what: str = "query") -> int:
    """The offset a cursor carries; ValueError when it was made for another query / filters / index."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        offset, mac = int(data["o"]), str(data["h"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            "cursor is not one this index issued: pass the nextCursor of the previous answer unchanged, "
            "or drop cursor to start from the first page"
        ) from exc
    if offset < 0 or not hmac.compare_digest(mac, _binding(secret, parts)):
        raise ValueError(
            f"cursor belongs to another {what} (or other filters or account): repeat the exact same {what} "
            f"and filters with it, or drop cursor to start over"
        )
    return offset


# -- warnings --------------------------------------------------------------
def coverage(index: Index, path_prefix: str | None, result: GrepResult) -> None:
    """What the answer cannot see (pending / failed files under the path, when indexing last ran), as facts.

    No advice: what to do about it depends on who reads it (a tool, a person at
    the CLI), so the front ends add it from `unindexed` and `nothing_indexed`.
    """
    total = result.total
    con = index.conn()
    cond, args = prefix_clause(path_prefix)
    where = f"{cond} AND status != 'indexed'"
    counts = dict(con.execute(f"SELECT status, count(*) FROM files WHERE {where} GROUP BY status", args))
    scope = "/" + (path_prefix or "").strip("/")
    out: list[str] = []
    if counts.get(RecordStatus.PENDING):
        names = [r[0] for r in con.execute(
            f"SELECT path FROM files WHERE {where} AND status='pending' ORDER BY path LIMIT {WARN_NAMES}", args)]
        out.append(f"{counts[RecordStatus.PENDING]} file(s) under {scope} are not indexed yet and were not searched "
                   f"(e.g. {', '.join(names)})")
        result.unindexed = counts[RecordStatus.PENDING]
    failed = sum(n for s, n in counts.items() if s != RecordStatus.PENDING)
    if failed:
        rows = con.execute(
            f"SELECT path, status, reason FROM files WHERE {where} AND status!='pending' ORDER BY path "
            f"LIMIT {WARN_NAMES}", args).fetchall()
        named = "; ".join(f"{p} ({s}: {r})" if r else f"{p} ({s})" for p, s, r in rows)
        kinds = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s != RecordStatus.PENDING)
        out.append(f"{failed} file(s) under {scope} have no searchable text ({kinds}): {named}")
    no_ocr = [r[0] for r in con.execute(f"SELECT path FROM files WHERE {cond} AND {NO_OCR} ORDER BY path "
                                        f"LIMIT {WARN_NAMES + 1}", args)]
    if no_ocr:
        from mcp_nextcloud.reader.ocr import MISSING

        others = " and others" if len(no_ocr) > WARN_NAMES else ""
        out.append(f"scanned pages of {', '.join(no_ocr[:WARN_NAMES])}{others} were not searched: {MISSING}")
    value = con.execute("SELECT max(indexed_at) FROM files").fetchall()[0][0]
    last = float(value) if isinstance(value, (int, float)) else None
    if total == 0:
        anything = con.execute(f"SELECT 1 FROM files WHERE {cond} LIMIT 1", args).fetchall()
        if not anything:
            result.nothing_indexed = f"nothing is indexed under {scope}"
            out.append(result.nothing_indexed)
    if out or total == 0:
        out.append(f"index last updated {iso_time(last) if last else 'never'}")
    result.warnings = out


# -- grep ------------------------------------------------------------------
def _filters(path_prefix: str | None, kinds: list[str] | None, modified_after: float | None,
             account_only: bool = False) -> tuple[str, list[apsw.SQLiteValue]]:
    conds: list[str] = [account_clause("f.")] if account_only else []
    args: list[apsw.SQLiteValue] = []
    if path_prefix and path_prefix.strip("/"):
        c, a = prefix_clause(path_prefix, "f.path")
        conds.append(c)
        args += a
    if kinds:
        conds.append(f"f.kind IN ({','.join('?' * len(kinds))})")
        args += [k.lower() for k in kinds]
    if modified_after is not None:
        conds.append("f.mtime > ?")
        args.append(float(modified_after))
    return " AND ".join(conds), args


def _load_chunks(con: apsw.Connection, ids: list[int]) -> dict[int, tuple[int, int, str]]:
    """{chunk rowid: (start, line, text)} for the given chunk rowids, in one query."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {cid: (start, line, zlib.decompress(body).decode("utf-8")) for cid, start, line, body in
            con.execute(f"SELECT id, start, line, body FROM chunks WHERE id IN ({marks})", ids)}


def _rank(con: apsw.Connection, pq: ParsedQuery, filt: str, fargs: Sequence[apsw.SQLiteValue], want: int) -> Ranking:
    """The first `want` files in rank order (tier by tier), the total and whether it is estimated.

    Every hit matches the broadest (last) tier, so its scan gives the total:
    ranked when the page needed it, else a walk without bm25. Files holding
    an excluded word are left out whole (a chunk without it is not enough).
    """
    excluded: set[int] = set()
    notes: list[str] = []
    neg = pq.negation()
    capped = False
    if neg:
        excluded, capped = files_matching(con, neg, NEG_CAP)
        if capped:
            notes.append("the excluded words are in very many places: files were left out where a passage holds "
                         "them, and may still hold them elsewhere")
    # Files holding an excluded word are left out whole; only when there are too many to list does the
    # exclusion fall back to FTS5's NOT, chunk by chunk (costly with common words, and weaker).
    tiers = pq.tiers(negate=capped)
    if not all(ranked_cheaply(t.expr) for t in tiers if not t.rest):
        notes.append("a long query: files matching it are listed newest first, not by relevance")
    # Several words: the broadest tier (all of them, at word starts) first, without bm25 (cheap); its
    # window bounds the narrower tiers' walks, which matters for phrases of common words (FTS5 checks
    # their positions in every chunk it walks). One word or one phrase: that tier is the whole query.
    broad: Scan | None = scan(con, tiers[-1].expr, filt, fargs, ranked=False) if len(pq.groups) > 1 else None
    named = titles.boost(con, pq.tokens)
    floor = broad.floor if broad is not None else None
    picks: list[Pick] = []
    seen: set[int] = set()
    windowed = floor is not None
    for k, tier in enumerate(tiers):
        if len(picks) >= want:
            break
        last = k == len(tiers) - 1
        top = top_files(con, tier.expr, filt, fargs, want - len(picks), excluded | {p.ranked.fid for p in picks},
                        floor=None if last else floor, boost=named, walked=broad if last else None)
        picks += [Pick(r, tier, top.scan.per_file.get(r.fid, 1), band=k) for r in top.files]
        seen |= top.scan.per_file.keys()
        windowed |= not top.scan.complete
        if last and broad is None:
            broad = top.scan
    if broad is None:
        broad = scan(con, tiers[-1].expr, filt, fargs, ranked=False)
    total, estimate = count_files(broad, excluded)
    # Windows differ per tier: a file seen matching a narrower tier matches the broad one too.
    total = max(total, len((seen | broad.per_file.keys()) - excluded))
    return Ranking(picks, max(total, len(picks)), estimate, windowed, broad, notes, len(tiers))


def _hits(index: Index, con: apsw.Connection, pq: ParsedQuery, ranking: Ranking, picks: list[Pick],
          result: GrepResult, per_file: int, lead: bool = True) -> None:
    """Build the hits of one page: records, pages and best chunks fetched in three queries.

    Passages come from the best-ranked chunk of each file (a few thousand
    characters for reader.find), joined with its neighbour only when a match
    straddles the cut. `more` is set when that chunk holds more matches than
    shown or another chunk of the file matches too.
    """
    if not picks:
        return
    fids = [p.ranked.fid for p in picks]
    marks = ",".join("?" * len(fids))
    recs = {r[0]: _row_to_record(r) for r in con.execute(
        f"SELECT {FILE_COLUMNS} FROM files WHERE id IN ({marks})", fids)}
    pages: dict[int, list[int]] = {}
    ocr: dict[int, dict[str, float]] = {}    # OCR'd pages ("1"-based) and the engine's confidence
    for i, pg, oc in con.execute(f"SELECT id, json_extract(meta, '$.pages'), json_extract(meta, "
                                 f"'$.structure.ocr.pages') FROM docs WHERE id IN ({marks})", fids):
        pages[i] = json.loads(pg) if pg else [0]
        if oc:
            ocr[i] = json.loads(oc)
    chunks = _load_chunks(con, [p.ranked.rid for p in picks])
    # Loaded once per call: several local folders in one index make the folder worth naming.
    roots = {r.id: r.folder for r in index.roots()}
    for pick in picks:
        fid, rid = pick.ranked.fid, pick.ranked.rid
        rec = recs.get(fid)
        if rec is None or rid not in chunks:
            continue
        start, line, text = chunks[rid]
        pg = pages.get(fid, [0])
        folder = roots.get(rec.root_id) if len(roots) > 1 and rec.root_id is not None else None
        if pick.match == "meaning":
            chosen = answer.choose(con, pq.raw, list(pick.windows or [(rid, pick.sim or 0.0)]), pg,
                                   _answer_size(result, lead))
            shown = chosen.passage if chosen is not None else None
            result.hits.append(GrepHit(path=rec.path, fileId=rec.file_id, kind=rec.kind, mtime=rec.mtime,
                                       size=rec.size, score=hybrid.score_of(pick, ranking.tiers),
                                       # No word matched: `more` and `phrase` say nothing here (match does).
                                       passages=[shown] if shown else [], more=False, phrase=True,
                                       source=rec.source, folder=folder, match="meaning"))
            continue
        asked = pick.query or pq     # an English pick of a German question: found with its English words
        found = chunk_passages(asked, pick.tier, start, line, text, pg, rec.kind, per_file, fallback=False)
        if not found.found:
            # The match may straddle the cut: look again with the next chunk joined on,
            # and only then settle for showing one of the query's words.
            nxt = _load_chunks(con, [rid + 1]).get(rid + 1)
            joined = text + nxt[2] if nxt is not None else text
            found = chunk_passages(asked, pick.tier, start, line, joined, pg, rec.kind, per_file, fallback=True)
        for p in found.passages if fid in ocr else []:
            p.ocr = ocr[fid].get(str(p.page))
        if pick.match in ("words", "both"):     # a question's answer: the sentences after its words too
            for p in found.passages:
                answer.extend(p, text, start, _answer_size(result, lead))
        more = found.more or pick.chunks >= 2 or other_chunk_matches(con, ranking.broad, fid, rid)
        result.hits.append(GrepHit(path=rec.path, fileId=rec.file_id, kind=rec.kind, mtime=rec.mtime,
                                   size=rec.size, score=hybrid.score_of(pick, ranking.tiers), passages=found.passages,
                                   more=more, phrase=pick.tier.phrase, source=rec.source, folder=folder,
                                   match=pick.match))


def _answer_size(result: GrepResult, lead: bool) -> int:
    """How much of its text a question's hit shows: the answer's first hit (`lead`: on its first page) the
    most (answer.py)."""
    return answer.FIRST_PASSAGE if lead and not result.hits else answer.ANSWER_PASSAGE


def _forms_note(pq: ParsedQuery, page: list[Pick]) -> list[str]:
    """Say which other forms of the words matched, when a hit on this page holds only those."""
    if any(p.tier.rest for p in page):
        return ["the last files hold only rarer, longer words starting with the query's words; they follow the "
                "ranked ones (quote a word to match it exactly)"]
    if not any(p.tier.forms for p in page):
        return []
    shown = [f"'{t.text}' ({', '.join(t.forms[:4])}{', ...' if len(t.forms) > 4 else ''})"
             for g in pq.groups for t in g if t.forms]
    return ["some files hold other forms of the words, not the words as typed: " + "; ".join(shown)
            + " (quote a word to match it exactly)"]


def grep(index: Index, query: str, *, path_prefix: str | None = None, kinds: list[str] | None = None,
         modified_after: float | None = None, limit: int = 10, cursor: str | None = None,
         scope: str = "", account_only: bool = False, passages: int = PASSAGES_PER_FILE,
         meaning: bool = True) -> GrepResult:
    """Ranked files containing `query`, each with up to `passages` passages; see the module docstring.

    account_only: only files with a Nextcloud path (rows.account_clause), for the MCP server.
    meaning=False: words only, even for a question (benchmarks compare the two).
    """
    t0 = time.perf_counter()
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive number, got {limit!r}")
    if not isinstance(passages, int) or not 1 <= passages <= MAX_PASSAGES:
        raise ValueError(f"passages must be 1 to {MAX_PASSAGES} per file, got {passages!r}")
    limit = min(limit, MAX_LIMIT)
    con = index.conn()
    parts = [query, path_prefix or "", sorted(kinds or []), modified_after, scope]
    parts += ["account"] if account_only else []
    offset = read_cursor(index.cursor_secret(), parts, cursor) if cursor else 0
    question = parse(con, query)
    asked = meaning and semantic.wanted(question)
    # A question's keyword side leaves its function words out (keywords.py); meaning reads it whole. How the
    # words were read (a literal "and", a word start capped) is noise for a sentence: only a query of a few
    # words ("manual or guide": an operator tried) hears it.
    sentence = asked and len(question.groups) > semantic.QUESTION_WORDS
    pq = replace(keyword_side(replace(question, notes=[]) if sentence else question), uncut_tier=False) \
        if asked else question
    if not asked and len(pq.groups) > MAX_TERMS:
        pq = keyword_side(pq)     # a long plain query searched by its words only (meaning=False)
    result = GrepResult(query=query)
    with con:  # one read snapshot for ranking, passages and warnings
        expand(con, pq)
        filt, fargs = _filters(path_prefix, kinds, modified_after, account_only)
        depth = hybrid.question_depth(limit) if asked else offset + limit
        ranking = _rank(con, pq, filt, fargs, depth)
        english = crossing.english_query(con, pq, index_languages(con)) if asked else None
        if english is not None:   # a German or French question also asked in English, among English files
            expand(con, english)
            only = " AND ".join(c for c in (filt, crossing.ENGLISH_FILES) if c)
            ranking = crossing.merged(ranking, _rank(con, english, only, fargs, depth), english)
        if asked:
            ranking = hybrid.with_meaning(index, con, question, ranking, filt, fargs, depth, result)
        elif meaning and semantic.words_only(pq):
            ranking = ranking._replace(notes=[*ranking.notes, semantic.WORDS_ONLY])
        elif meaning and not ranking.picks and not offset:
            ranking = hybrid.nearest(index, con, pq, ranking, filt, fargs, result)
        page = ranking.picks[offset:offset + limit]
        total, estimate = ranking.total, ranking.estimate
        result.total, result.totalIsEstimate = total, estimate
        _hits(index, con, pq, ranking, page, result, passages, lead=not offset)
        for h, sc in zip(result.hits, score.non_increasing([h.score for h in result.hits]), strict=True):
            h.score = sc
        result.notes = ([] if sentence else pq.notes) + ranking.notes + _forms_note(pq, page)
        # A question's next page is the rest of its one list (files counted past it are not reachable by
        # paging: its note says to search the key words for them). Past an estimated total there may be more:
        # a full page means "ask for the next one".
        if asked:
            more = offset + len(page) < len(ranking.picks)
        else:
            more = offset + len(page) < total or (estimate and len(page) == limit)
        if more:
            result.truncated = True
            result.nextCursor = make_cursor(index.cursor_secret(), parts, offset + len(page))
        coverage(index, path_prefix, result)
        result.warnings += result.meaning_warnings
        if ranking.windowed:
            result.warnings.append(
                f"this query matches more than {RANK_WINDOW} passages: files were ranked among the most recently "
                "indexed of them; add words, quote a phrase or give a path to rank every match")
    result.tookMs = round((time.perf_counter() - t0) * 1000, 3)
    return result
