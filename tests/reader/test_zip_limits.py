"""Zips that lie about their sizes, or inflate too much together (issue 10, items 3 and 4).

Every extraction runs in a child process (address space capped at 1.5 GiB, so a regression cannot take
the machine's memory) that reports its peak resident size: a lying member declares 40 bytes and inflates
to 512 MiB, so inflating it whole peaks above 1 GiB, while the capped reader stays near 30-40 MiB.
PEAK_LIMIT sits far from both. The hostile files come from fixtures/hostile_zips.py.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from mcp_nextcloud.reader.document import ReaderCode
from mcp_nextcloud.fixtures.hostile_zips import lying_odf, lying_pptx, many_members_pptx, stored_zip

ROOT = Path(__file__).resolve().parents[2]
CAP = 1536 * 1024 * 1024
PEAK_LIMIT_KIB = 320 * 1024


# VmHWM: this process's own peak resident size (ru_maxrss would include the parent's at fork time).
_PEAK = """
def peak_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
"""
_CHILD = _PEAK + """
import json, resource, sys
cap = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from mcp_nextcloud.reader import ReaderError, extract
data = open(sys.argv[2], "rb").read()
try:
    out = {"ok": extract(data, sys.argv[3]).kind}
except ReaderError as exc:
    out = {"code": exc.code.value, "message": str(exc)}
out["peak_kib"] = peak_kib()
print(json.dumps(out))
"""


def _extract_capped(tmp_path: Path, data: bytes, name: str) -> dict:
    path = tmp_path / "input.bin"
    path.write_bytes(data)
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(CAP), str(path), name], cwd=str(ROOT),
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["notes.txt", "notes.odt"])
def test_lying_odf_member_is_never_inflated_whole(tmp_path, name):
    data = lying_odf()
    assert len(data) < 2 * 1024 * 1024
    out = _extract_capped(tmp_path, data, name)
    assert out.get("code") in ("corrupt", "unsupported"), out
    assert out["peak_kib"] < PEAK_LIMIT_KIB, out


def test_lying_pptx_member_is_never_inflated_whole(tmp_path):
    out = _extract_capped(tmp_path, lying_pptx(), "slides.pptx")
    # Read up to the declared 40 bytes (whose CRC the forger got right): harmless, and nothing more.
    assert out.get("ok") == "pptx" or out.get("code") == "corrupt", out
    assert out["peak_kib"] < PEAK_LIMIT_KIB, out


def test_many_small_members_are_bounded_as_a_whole(tmp_path):
    data = many_members_pptx()
    assert len(data) < 1024 * 1024
    out = _extract_capped(tmp_path, data, "deck.pptx")
    assert out.get("code") == "zip_bomb" and "together" in out["message"], out
    assert out["peak_kib"] < PEAK_LIMIT_KIB, out


def test_capped_reads_never_pass_the_declared_size_or_budget():
    from mcp_nextcloud.reader.document import Limits, ReaderError
    from mcp_nextcloud.reader.ziparchive import CappedZipFile

    data = lying_odf(64 * 1024 * 1024)
    with CappedZipFile(data, Limits(), "odt") as zf:
        with zf.open("mimetype") as member:
            assert member.read(1000) == bytes(40)   # the declared 40, not 64 MiB
        assert zf.produced == 40
    honest = stored_zip([("a", b"x" * 1000, zipfile.ZIP_STORED, 1000, zlib.crc32(b"x" * 1000))])
    with CappedZipFile(honest, Limits(max_unzipped_bytes=2000), "odt") as zf:
        zf.read("a")
        zf.read("a")
        with pytest.raises(ReaderError) as info:
            zf.read("a")
        assert info.value.code is ReaderCode.ZIP_BOMB


def test_real_office_files_still_read():
    from mcp_nextcloud.reader import extract

    for name in ("slides.pptx", "report.docx", "budget.xlsx", "notes.odt", "sheet.ods", "deck.odp"):
        doc = extract((ROOT / "mcp_nextcloud" / "fixtures" / "docs" / name).read_bytes(), name)
        assert doc.text.strip(), name


def test_bzip2_members_are_refused():
    from mcp_nextcloud.reader import ReaderError, extract

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_BZIP2) as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", "<x/>")
    with pytest.raises(ReaderError) as info:
        extract(out.getvalue(), "notes.odt")
    assert info.value.code is ReaderCode.CORRUPT and "compression method" in str(info.value)


def test_inspect_checks_the_size_before_reading(tmp_path):
    big = tmp_path / "huge.pdf"
    with open(big, "wb") as f:
        f.truncate(3 * 1024 * 1024 * 1024)   # sparse: 3 GiB that costs no disk
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (%d, %d)); "
            "from mcp_nextcloud.cli import main; sys.exit(main(['inspect', %r]))" % (CAP, CAP, str(big)))
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-1500:]
    assert "too large" in proc.stderr and "Traceback" not in proc.stderr


_SYNC_CHILD = _PEAK + """
import json, resource, sys
cap = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from mcp_nextcloud.indexer.remote.sync import sync
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
account = Account(url=sys.argv[2], user="alice", app_password=sys.argv[3])
with Index.open(sys.argv[4]) as index, NextcloudClient(account) as client:
    report = sync(client, index, root="/Hostile")
    rec = index.get_file(path="/Hostile/notes.txt")
    print(json.dumps({"complete": report.complete, "status": rec.status, "reason": rec.reason,
                      "peak_kib": peak_kib()}))
"""


def test_sync_sends_a_disguised_zip_to_the_capped_pool(tmp_path):
    """A `notes.txt` that is a lying zip: the small-text fast path must not extract it in the sync process."""
    from mcp_nextcloud.fixtures.emulator.server import Emulator

    with Emulator() as emu:
        emu.state.makedirs("alice", "/Hostile")
        emu.state.put_file("alice", "/Hostile/notes.txt", lying_odf())
        creds = emu.account("alice")
        proc = subprocess.run([sys.executable, "-c", _SYNC_CHILD, str(CAP), creds["url"], creds["app_password"],
                               str(tmp_path / "index.db")], cwd=str(ROOT),
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                              timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["complete"] and out["status"] in ("failed", "unsupported"), out
    assert out["peak_kib"] < PEAK_LIMIT_KIB, out   # the sync process itself never inflated it
