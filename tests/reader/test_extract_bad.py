"""Bad inputs and limits: every failure is a ReaderError with a code and the next action."""
from __future__ import annotations

import io
import zipfile

import pytest

from mcp_nextcloud.reader.document import ReaderCode
from mcp_nextcloud.reader.document import Limits, ReaderError
from mcp_nextcloud.reader.extract import extract

BAD = [
    ("encrypted.pdf", "encrypted", "ask the owner for an unencrypted copy; do not retry"),
    ("truncated.pdf", "corrupt", "do not retry"),
    ("empty.pdf", "empty", "do not retry"),
    ("zipbomb.xlsx", "zip_bomb", "do not retry"),
    ("binary.txt", "binary", "binary file with a text name"),
    ("not-a-zip.docx", "corrupt", "ask for a fresh copy"),
    ("truncated.xlsx", "corrupt", "ask for a fresh copy"),
    ("truncated.png", "corrupt", "ask for a fresh copy"),
]


@pytest.mark.parametrize("name,code,hint", BAD)
def test_bad_fixture_gives_reader_error(fixture_bad, name, code, hint):
    with pytest.raises(ReaderError) as err:
        extract((fixture_bad / name).read_bytes(), name)
    assert err.value.code is ReaderCode(code) and err.value.retry is False
    assert hint in str(err.value) and "do not retry" in str(err.value)
    assert "Traceback" not in str(err.value)


def test_max_bytes_refused_before_parsing():
    with pytest.raises(ReaderError) as err:
        extract(b"%PDF-1.4 garbage" * 100, "big.pdf", limits=Limits(max_bytes=1000))
    assert err.value.code is ReaderCode.TOO_LARGE and "do not retry" in str(err.value)


def test_image_size_cap(fixture_docs):
    with pytest.raises(ReaderError) as err:
        extract((fixture_docs / "photo.png").read_bytes(), "photo.png", limits=Limits(max_image_bytes=50))
    assert err.value.code is ReaderCode.TOO_LARGE and "smaller" in str(err.value)


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in members.items():
            z.writestr(name, content)
    return buf.getvalue()


def test_zip_total_inflated_size_limit(fixture_docs):
    data = (fixture_docs / "report.docx").read_bytes()
    with pytest.raises(ReaderError) as err:
        extract(data, "report.docx", limits=Limits(max_unzipped_bytes=10_000))
    assert err.value.code is ReaderCode.ZIP_BOMB and "inflates to" in str(err.value)


def test_zip_ratio_limit_for_every_zip_format():
    bomb = b"\0" * (4 * 1024 * 1024)
    for name, members in (("a.docx", {"word/document.xml": bomb}), ("a.pptx", {"ppt/presentation.xml": bomb}),
                          ("a.odt", {"mimetype": b"application/vnd.oasis.opendocument.text", "content.xml": bomb})):
        with pytest.raises(ReaderError) as err:
            extract(_zip(members), name)
        assert err.value.code is ReaderCode.ZIP_BOMB, name


def test_zip_of_unknown_content_is_unsupported():
    with pytest.raises(ReaderError) as err:
        extract(_zip({"a.txt": b"hello"}), "archive.zip")
    assert err.value.code is ReaderCode.UNSUPPORTED and "do not retry" in str(err.value)


def test_pdf_name_without_pdf_bytes_is_corrupt():
    with pytest.raises(ReaderError) as err:
        extract(b"just some words", "fake.pdf")
    assert err.value.code is ReaderCode.CORRUPT and "not a PDF" in str(err.value)


def test_odf_without_content_is_corrupt():
    data = _zip({"mimetype": b"application/vnd.oasis.opendocument.text"})
    with pytest.raises(ReaderError) as err:
        extract(data, "x.odt")
    assert err.value.code is ReaderCode.CORRUPT and "content.xml is missing" in str(err.value)


def test_xml_entity_expansion_is_refused():
    evil = (b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
            b'<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0">'
            b"<office:body>&b;</office:body></office:document-content>")
    data = _zip({"mimetype": b"application/vnd.oasis.opendocument.text", "content.xml": evil})
    with pytest.raises(ReaderError) as err:
        extract(data, "evil.odt")
    assert err.value.code is ReaderCode.CORRUPT


def test_max_chars_cuts_with_warning():
    doc = extract(b"# A\n" + b"x" * 100 + b"\n# B\n", "a.md", limits=Limits(max_chars=50))
    assert len(doc.text) == 50 and [e.title for e in doc.outline] == ["A"]
    assert any("text cut at 50" in w for w in doc.warnings)


def test_deadline_in_process(fixture_docs):
    with pytest.raises(ReaderError) as err:
        extract((fixture_docs / "manual.pdf").read_bytes(), "manual.pdf", limits=Limits(max_seconds=0.0))
    assert err.value.code is ReaderCode.TIMEOUT and err.value.retry is False
    assert err.value.action == "read a smaller export of the file instead"


def test_binary_with_unknown_extension_is_unsupported():
    with pytest.raises(ReaderError) as err:
        extract(b"MZ\x90\x00\x03\x00\x00\x00" * 20, "setup.exe")
    assert err.value.code is ReaderCode.UNSUPPORTED and "'exe'" in str(err.value) and "do not retry" in str(err.value)


def test_non_bytes_input_is_a_reader_error():
    with pytest.raises(ReaderError) as err:
        extract("a str, not bytes", "a.txt")  # type: ignore[arg-type]
    assert err.value.code is ReaderCode.UNSUPPORTED


def test_password_protected_and_legacy_office_files():
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504
    with pytest.raises(ReaderError) as err:
        extract(ole + "EncryptionInfo".encode("utf-16-le") + b"\0" * 100, "secret.xlsx")
    assert err.value.code is ReaderCode.ENCRYPTED and "unprotected copy; do not retry" in str(err.value)
    with pytest.raises(ReaderError) as err:
        extract(ole + b"\0" * 100, "old.doc")
    assert err.value.code is ReaderCode.UNSUPPORTED and "save it as docx" in str(err.value)


def test_a_reader_error_is_its_parts_and_str_words_the_retry_once():
    """cause, action, code and retry are fields; `str()` joins them in the library's plain wording (the same
    words as the error table's PLAIN voice) and `reason` is what an index stores: no retry words."""
    import pickle

    from mcp_nextcloud.nextcloud.errors import PLAIN

    err = ReaderError("encrypted PDF", "ask the owner for an unencrypted copy", code=ReaderCode.ENCRYPTED)
    assert (err.cause, err.action, err.code, err.retry) == ("encrypted PDF", "ask the owner for an unencrypted copy",
                                                            ReaderCode.ENCRYPTED, False)
    assert str(err) == "encrypted PDF: ask the owner for an unencrypted copy; do not retry"
    assert PLAIN.retry_words(False).lower().rstrip(".") == "do not retry"
    assert err.reason == "encrypted PDF: ask the owner for an unencrypted copy" and "retry" not in err.reason
    back = pickle.loads(pickle.dumps(err))   # the extraction pool sends these across processes
    assert type(back) is ReaderError and (back.cause, back.action, back.code, back.retry) == \
        (err.cause, err.action, err.code, err.retry) and str(back) == str(err)
    assert PLAIN.retry_words(True).lower().rstrip(".") in str(ReaderError("x", "y", retry=True))
