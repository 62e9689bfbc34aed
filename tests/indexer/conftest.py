"""Shared helpers for the indexer tests: a fresh index, a counting extraction pool, text documents."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mcp_nextcloud.indexer.models import FileMeta, FileRecord
from mcp_nextcloud.indexer.jobs.pool import Extracted, ExtractionPool
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.store.writer import IndexWriter
from mcp_nextcloud.reader.document import Document


class CountingPool(ExtractionPool):
    """The real ExtractionPool, counting how many extractions it actually ran (and of which names)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.names: list[str] = []
        self._count_lock = threading.Lock()

    def extract(self, data: bytes, name: str, mime: str | None, *, rows: bool = True) -> Extracted:
        with self._count_lock:
            self.names.append(name)
        return super().extract(data, name, mime, rows=rows)

    @property
    def count(self) -> int:
        return len(self.names)


def _put_text(writer: IndexWriter, path: str, text: str, *, source: str = "local", file_id: int | None = None,
             etag: str | None = None, mtime: float = 1_700_000_000.0, kind: str = "text",
             pages: list[int] | None = None) -> FileRecord:
    """Upsert a file and store `text` as its extracted Document (no extraction process involved)."""
    rec, needs = writer.upsert(FileMeta(path=path, source=source, file_id=file_id, etag=etag, size=len(text),
                                        mtime=mtime, mime="text/plain"))
    if needs:
        writer.store_document(rec.id, Document(text=text, kind=kind, name=path.rsplit("/", 1)[-1],
                                               pages=pages or [0], engine="test"))
    return writer.record(rec.id)


def _make_journal(root: Path, rows: list[tuple[str, str, str, int, int, int]],
                  name: str = ".sync_0a1b2c3d4e5f.db") -> Path:
    """A sync journal shaped like the Nextcloud desktop client's (`.sync_<hash>.db`, table `metadata`, WAL).

    rows: (path relative to the folder, fileid as the client stores it e.g. "00000123ocabc",
    etag, modtime, size, type: 0 file / 2 directory).
    """
    import apsw

    path = root / name
    root.mkdir(parents=True, exist_ok=True)
    con = apsw.Connection(str(path))
    con.execute(
        "CREATE TABLE metadata(phash INTEGER(8), pathlen INTEGER, path VARCHAR(4096), inode INTEGER, uid INTEGER, "
        "gid INTEGER, mode INTEGER, modtime INTEGER(8), type INTEGER, md5 VARCHAR(32), fileid VARCHAR(128), "
        "remotePerm VARCHAR(128), filesize BIGINT, ignoredChildrenRemote INT, contentChecksum TEXT, "
        "contentChecksumTypeId INTEGER, e2eMangledName TEXT, isE2eEncrypted INTEGER, PRIMARY KEY(phash))")
    for i, (p, fileid, etag, modtime, size, typ) in enumerate(rows):
        con.execute("INSERT INTO metadata(phash, pathlen, path, inode, modtime, type, md5, fileid, remotePerm, "
                    "filesize) VALUES(?,?,?,?,?,?,?,?,?,?)",
                    (1000 + i, len(p), p, 50 + i, modtime, typ, etag, fileid, "WDNVCKR", size))
    con.pragma("journal_mode", "wal")
    con.close()
    return path


@pytest.fixture(autouse=True)
def _no_desktop_client_config(tmp_path_factory, monkeypatch):
    """Never read the developer's own ~/.config/Nextcloud: tests that want a nextcloud.cfg write one."""
    monkeypatch.setenv("MCP_NEXTCLOUD_DESKTOP_CONFIG", str(tmp_path_factory.mktemp("nocfg") / "nextcloud.cfg"))


def _qt_escape(value: str) -> str:
    """A string as Qt5's QSettings writes it without a codec: non-ASCII as \\x<hex>, and a hex digit right
    after such an escape escaped too (so the reader knows where the number ends)."""
    out, escape_next = [], False
    for c in value:
        if ord(c) >= 0x7F or (escape_next and c in "0123456789abcdefABCDEF"):
            out.append(f"\\x{ord(c):x}")
            escape_next = True
        else:
            out.append(c)
            escape_next = False
    return "".join(out)


def _write_desktop_config(path: Path, folders: list[tuple[str, str, str]], account: str = "0") -> Path:
    """A nextcloud.cfg as the desktop client writes it (Qt INI): folders are (localPath, targetPath, journalPath)."""
    lines = ["[General]", "clientVersion=3.14.3stable-Linux (build 20240912)", "optionalServerNotifications=true", "",
             "[Accounts]", f"{account}\\version=13", f"{account}\\url=https://cloud.example.org",
             f"{account}\\dav_user=alice", f"{account}\\displayName=Alice", "version=13"]
    for i, (local, target, journal) in enumerate(folders, start=1):
        local = _qt_escape(local.rstrip("/") + "/")   # the client always writes a trailing '/'
        lines += [f"{account}\\Folders\\{i}\\ignoreHiddenFiles=false",
                  f"{account}\\Folders\\{i}\\journalPath={journal}",
                  f"{account}\\Folders\\{i}\\localPath={local}",
                  f"{account}\\Folders\\{i}\\paused=false",
                  f"{account}\\Folders\\{i}\\targetPath={target}",
                  f"{account}\\Folders\\{i}\\version=2",
                  f"{account}\\Folders\\{i}\\virtualFilesMode=off"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def write_desktop_config():
    """The `_write_desktop_config` helper: write a realistic desktop-client nextcloud.cfg."""
    return _write_desktop_config


@pytest.fixture
def make_journal():
    """The `_make_journal` helper: write a realistic desktop-client sync journal into a folder."""
    return _make_journal


@pytest.fixture
def index(tmp_path: Path):
    ix = Index.open(tmp_path / "index.db")
    yield ix
    ix.close()


@pytest.fixture
def counting_pool():
    pool = CountingPool(workers=2)
    yield pool
    pool.close()


@pytest.fixture
def put_text():
    """The `_put_text` helper (test modules cannot import conftest under --import-mode=importlib)."""
    return _put_text


@pytest.fixture
def pool_class():
    return CountingPool
