"""bytes -> Document: detect the format, enforce the size cap, dispatch to one converter.

Detection order: magic bytes, then the file name's extension, then the mime
type. Whatever a library raises becomes a ReaderError naming the cause and the
next action; no other exception type leaves `extract`.
"""
from __future__ import annotations


from .document import DEFAULT_LIMITS, Document, Limits, ReaderCode, ReaderError
from .formats import converter
from .formats._common import fill_lines
from .ziparchive import CappedZipFile

EXTENSIONS: dict[str, str] = {
    "txt": "text", "text": "text", "log": "text", "ini": "text", "cfg": "text", "conf": "text",
    "yaml": "text", "yml": "text", "toml": "text", "xml": "text", "py": "text", "rst": "text",
    "ics": "text", "vcf": "text", "sh": "text", "js": "text", "css": "text", "tex": "text",
    "md": "markdown", "markdown": "markdown",
    "csv": "csv", "tsv": "csv", "tab": "csv",
    "json": "json", "geojson": "json",
    "html": "html", "htm": "html", "xhtml": "html",
    "pdf": "pdf",
    "xlsx": "xlsx", "xlsm": "xlsx",
    "pptx": "pptx",
    "docx": "docx",
    "odt": "odt", "ods": "ods", "odp": "odp",
    "png": "image", "jpg": "image", "jpeg": "image", "gif": "image", "webp": "image",
}
MIMES: dict[str, str] = {
    "text/markdown": "markdown", "text/csv": "csv", "text/tab-separated-values": "csv",
    "application/json": "json", "text/html": "html", "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
}
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
TEXT_KINDS = {"text", "markdown", "csv", "json", "html"}
ZIP_KINDS = {"xlsx", "pptx", "docx", "odt", "ods", "odp"}
ODF_MIMES = {f"application/vnd.oasis.opendocument.{k}": v
             for k, v in (("text", "odt"), ("spreadsheet", "ods"), ("presentation", "odp"))}


def _extension(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[-1].lower() if "." in base else ""


def _zip_kind(data: bytes) -> str | None:
    """Which Office / ODF format a zip holds, from its member names (no inflation of content)."""
    try:
        # Capped: a `mimetype` member that declares 40 bytes may inflate to a gigabyte if read whole.
        with CappedZipFile(data, DEFAULT_LIMITS, "zip") as zf:
            names = set(zf.namelist())
            if "mimetype" in names and zf.getinfo("mimetype").file_size < 200:
                mime = zf.member("mimetype", max_bytes=200).decode("ascii", "replace").strip()
                return ODF_MIMES.get(mime)
        if "word/document.xml" in names:
            return "docx"
        if "xl/workbook.xml" in names:
            return "xlsx"
        if "ppt/presentation.xml" in names:
            return "pptx"
    except ReaderError as exc:
        if exc.code is ReaderCode.ZIP_BOMB:
            raise
        return None
    except Exception:  # a broken zip is reported by the converter the extension names
        return None
    return None


def looks_binary(data: bytes) -> bool:
    """True for bytes that are not text: NULs or many control characters in the first 8 KiB."""
    head = data[:8192]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27, 8))
    return bool(head) and controls / len(head) > 0.10


def detect(data: bytes, name: str, mime: str | None = None) -> str:
    """The Document kind for these bytes: magic first, then extension, then mime."""
    head = data[:1024]
    ext = _extension(name)
    by_name = EXTENSIONS.get(ext) or MIMES.get((mime or "").split(";")[0].strip().lower())
    if data.startswith(b"%PDF-") or (by_name == "pdf" and b"%PDF-" in head):
        return "pdf"  # pdfium accepts a header anywhere in the first KiB; only trust that for .pdf names
    if head.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")) or (
            head[:4] == b"RIFF" and head[8:12] == b"WEBP"):
        return "image"
    if head.startswith(OLE_MAGIC):
        # Password-protected .docx/.xlsx/.pptx are OLE containers holding an EncryptionInfo stream.
        if "EncryptionInfo".encode("utf-16-le") in data:
            raise ReaderError(f"password-protected Office file {name!r}",
                              "ask the owner for an unprotected copy", code=ReaderCode.ENCRYPTED)
        raise ReaderError(f"legacy Office format ({name!r} is a .doc/.xls/.ppt-style file)",
                          "save it as docx, xlsx, pptx or PDF to read it", code=ReaderCode.UNSUPPORTED)
    if head.startswith(b"PK\x03\x04"):
        kind = _zip_kind(data)
        if kind:
            return kind
        if by_name in ZIP_KINDS:
            return by_name
        raise ReaderError(f"unsupported zip archive {name!r}",
                          "only Office (docx, xlsx, pptx) and OpenDocument files are read", code=ReaderCode.UNSUPPORTED)
    if by_name in ZIP_KINDS or by_name in ("pdf", "image"):
        return by_name  # the converter reports the mismatch as a corrupt file
    if looks_binary(data):
        if by_name or not ext:
            raise ReaderError(f"binary file with a text name ({name!r} contains NUL or control bytes)",
                              "it is not text and cannot be read", code=ReaderCode.BINARY)
        raise ReaderError(f"unsupported binary file type {ext!r} ({name!r})",
                          "only text, PDF, Office, OpenDocument and image files are read", code=ReaderCode.UNSUPPORTED)
    # Unknown extension and mime but clean text bytes: reading it as text is the useful answer.
    return by_name or "text"


def is_light(data: bytes, name: str, mime: str | None = None) -> bool:
    """True when extracting these bytes is a decode (a text kind), so its memory is bounded by their size.

    Callers may extract such bytes in their own process; anything else (PDF,
    Office, OpenDocument, images, whatever a name hides) belongs in a child
    with a memory cap (indexer.jobs.pool).
    """
    try:
        return detect(data, name, mime) in TEXT_KINDS
    except ReaderError:
        return False


def _empty(name: str, kind: str) -> ReaderError:
    return ReaderError(f"empty file ({name!r} has 0 bytes)", "there is nothing to read", code=ReaderCode.EMPTY)


def _cut(doc: Document, limits: Limits) -> Document:
    """Apply limits.max_chars: cut the text, drop pages and outline entries beyond it, say so."""
    if len(doc.text) <= limits.max_chars:
        return doc
    total = len(doc.text)
    doc.text = doc.text[: limits.max_chars]
    doc.pages = [p for p in doc.pages if p < limits.max_chars] or [0]
    doc.outline = [e for e in doc.outline if e.offset < limits.max_chars]
    doc.warnings.append(f"text cut at {limits.max_chars} of {total} characters")
    return doc


def finish(doc: Document, limits: Limits = DEFAULT_LIMITS) -> Document:
    """What every converter's Document goes through last: the max_chars cut, then outline line numbers.

    Public for a caller that builds a Document from parts (reader.formats.pdf.assemble).
    """
    return fill_lines(_cut(doc, limits))


def extract(data: bytes, name: str, mime: str | None = None, *, limits: Limits = DEFAULT_LIMITS) -> Document:
    """Turn a file's bytes into a Document, or raise ReaderError (never anything else)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ReaderError("reader.extract needs the file's bytes", code=ReaderCode.UNSUPPORTED)
    data = bytes(data)
    if len(data) > limits.max_bytes:
        raise ReaderError(
            f"file too large to read ({len(data) // (1024 * 1024)} MiB, limit "
            f"{limits.max_bytes // (1024 * 1024)} MiB)", "ask for a smaller export of it", code=ReaderCode.TOO_LARGE)
    try:
        kind = detect(data, name, mime)
        if not data:
            if kind in TEXT_KINDS:
                return Document(text="", kind=kind, name=name, mime=mime or "text/plain",
                                warnings=["empty file"])
            raise _empty(name, kind)
        doc = converter(kind)(data, name, limits)
        return finish(doc, limits)
    except ReaderError:
        raise
    except MemoryError:
        raise ReaderError(f"out of memory while reading {name!r}",
                          "ask for a smaller or simpler copy", code=ReaderCode.MEMORY) from None
    except RecursionError:
        raise ReaderError(f"{name!r} is nested too deeply to read", "ask for a simpler copy",
                          code=ReaderCode.CORRUPT) from None
    except Exception as exc:  # any library failure: corrupt input, reported without a traceback
        raise ReaderError(
            f"could not read {name!r} ({type(exc).__name__})",
            "the file looks corrupt or uses an unsupported feature; ask for a fresh copy",
            code=ReaderCode.CORRUPT) from None
