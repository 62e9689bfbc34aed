"""Readers in several threads while the single writer writes from several threads."""
from __future__ import annotations

import threading

from mcp_nextcloud.indexer.models import FileMeta
from mcp_nextcloud.reader.document import Document


def test_concurrent_readers_and_shared_writer(index, put_text):
    for i in range(20):
        put_text(index.writer(), f"/seed/{i}.txt", f"seed document {i} about otters")
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0] * 4

    def reader(k: int) -> None:
        try:
            while not stop.is_set():
                res = index.grep("otters", limit=5)
                assert res.total >= 20 and len(res.hits) == 5
                for hit in res.hits:  # every hit's passages are consistent with its stored text
                    assert hit.passages and hit.passages[0].text.lower() == "otters"
                names = index.search_names(name="*.txt", limit=3)
                assert names.total >= 20
                reads[k] += 1
        except BaseException as exc:  # reported below
            errors.append(exc)

    def writer(k: int) -> None:
        try:
            w = index.writer()
            for i in range(40):
                rec, needs = w.upsert(FileMeta(path=f"/w{k}/{i}.txt", source="remote", file_id=k * 1000 + i,
                                               etag="e", size=10, mtime=1.0, mime="text/plain"))
                assert needs
                w.store_document(rec.id, Document(text=f"writer {k} file {i} about otters", kind="text"))
                if i % 10 == 9:
                    w.remove(rec.id)
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
    writers = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join(60)
    stop.set()
    for t in readers:
        t.join(60)
    assert not errors, errors[:3]
    assert all(n > 0 for n in reads)
    assert index.grep("otters").total == 20 + 2 * 36
