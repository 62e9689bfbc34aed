"""Which pieces of a document the meaning index embeds: a bounded window at the head of chosen chunks.

Why bounded (issue 24, measured on this 2-core machine): the builder embeds
~1,500 tokens/s on two threads (~6,000 characters/s), so embedding every
character of a 37 M-character account would take ~1.7 h, against a budget of
10 minutes. So each chunk of the keyword index (~3k characters, cut at pages
and lines: indexer/store/chunking.py) contributes one window of at most WINDOW
characters from its start, and a file contributes one window per
CHUNKS_PER_WINDOW chunks (at least one, at most MAX_WINDOWS_PER_FILE): every
third chunk from the first (titles and introductions say what a document is
about), or at the cap that many spread evenly. So the build grows with the
characters, not with how they are split into files: on 1,550 real Debian
documents (35.6 M characters) every chunk would be 7,044 windows, one per
three chunks is 3,499, embedded in 5.5 min (benchmarks/test_meaning_real_bench.py),
with the same recall. Files of one chunk each are the exception: one window a
file. A question is answered at file level: the keyword side still finds every
word everywhere.

Each window is prefixed with the file's name (words of it), which is what a
person asks about as often as the text; the offsets stay those of the text.
"""
from __future__ import annotations

import re

from mcp_nextcloud.indexer.store.vectors import Window

WINDOW = 400                 # characters embedded per chunk (~100 tokens: the model's fast range)
MIN_WINDOW = 200             # cut back to whitespace, but not below this
MAX_WINDOWS_PER_FILE = 24    # chunks embedded per file at most, spread evenly
CHUNKS_PER_WINDOW = 3        # one window per this many chunks (~9k characters) below that cap

_NAME_SEPARATORS = re.compile(r"[_\-.]+")


def title(path: str) -> str:
    """The words of a file's name ("/Docs/backup-guide_v2.pdf" -> "backup guide v2")."""
    name = path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name[1:] else name
    return _NAME_SEPARATORS.sub(" ", stem).strip()


def windows_for(n_chunks: int) -> int:
    """How many windows a file of `n_chunks` chunks gets: one per CHUNKS_PER_WINDOW, at least one, at most the cap."""
    return min(MAX_WINDOWS_PER_FILE, max(1, -(-n_chunks // CHUNKS_PER_WINDOW))) if n_chunks > 0 else 0


def chosen_seqs(n_chunks: int, cap: int | None = None) -> list[int]:
    """The chunk sequence numbers embedded for a file of `n_chunks` chunks.

    Below the cap, every CHUNKS_PER_WINDOW-th chunk from the first: a file that grows keeps the windows it
    has (a changed chunk re-embeds only itself). At the cap (or a given `cap`), that many spread evenly.
    """
    if cap is None:
        cap = MAX_WINDOWS_PER_FILE
        if windows_for(n_chunks) < cap:
            return list(range(0, n_chunks, CHUNKS_PER_WINDOW))
    if n_chunks <= cap:
        return list(range(n_chunks))
    if cap <= 1:
        return [0][:cap]
    return sorted({round(i * (n_chunks - 1) / (cap - 1)) for i in range(cap)})


def window(chunk_id: int, start: int, line: int, text: str, name: str) -> Window | None:
    """The window at the head of a chunk (`text` starts at Document.text offset `start`), or None if blank."""
    lead = len(text) - len(text.lstrip())
    if lead == len(text):
        return None
    line += text.count("\n", 0, lead)
    end = min(len(text), lead + WINDOW)
    if end < len(text):
        cut = max(text.rfind(" ", lead + MIN_WINDOW, end), text.rfind("\n", lead + MIN_WINDOW, end))
        end = cut if cut != -1 else end
    piece = text[lead:end].rstrip()
    embedded = f"{name}: {piece}" if name else piece
    return Window(chunk_id, start + lead, len(piece), line, embedded)
