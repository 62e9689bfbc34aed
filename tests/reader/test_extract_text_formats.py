"""Text-like formats from fixtures/docs: text, encodings, Markdown, CSV/TSV, JSON, HTML, images."""
from __future__ import annotations

import pickle

from mcp_nextcloud.reader.document import Document, Limits
from mcp_nextcloud.reader.extract import extract


def test_plain_utf8_text(extracted):
    doc = extracted("notes.txt")
    assert doc.kind == "text" and doc.warnings == [] and doc.pages == [0]
    assert doc.text.splitlines()[3] == "The olive badger note."
    assert "Crème fraîche" in doc.text


def test_utf16_with_bom_and_utf8_bom():
    doc = extract("Résumé du projet\nnaïve café\n".encode("utf-16"), "utf16.txt")
    assert doc.text == "Résumé du projet\nnaïve café\n" and doc.warnings == []
    bom = extract(b"\xef\xbb\xbfCaf\xc3\xa9", "bom.txt")
    assert bom.text == "Café" and bom.warnings == []


def test_utf16_fixture(extracted):
    assert "naïve café" in extracted("utf16.txt").text


def test_cp1252_fallback_warns(extracted):
    doc = extracted("latin1.txt")
    assert "Déjà vu" in doc.text and "€uro" in doc.text and "“quotes”" in doc.text and "Zoë" in doc.text
    assert any("cp1252" in w for w in doc.warnings)


def test_invalid_utf8_is_readable_with_warning(fixture_bad):
    doc = extract((fixture_bad / "invalid-utf8.txt").read_bytes(), "invalid-utf8.txt")
    assert doc.text.startswith("Valid start é then ")
    assert "\ufffd" in doc.text
    assert any("invalid UTF-8" in w for w in doc.warnings)


def test_markdown_headings_with_levels_offsets_lines(extracted):
    doc = extracted("manual.md")
    got = [(e.title, e.level, e.line) for e in doc.outline]
    assert got == [("Sample Manual", 1, 1), ("Installation", 2, 5), ("Requirements", 3, 9),
                   ("Usage", 2, 13), ("Appendix", 1, 17), ("Licence", 2, 23)]
    for entry in doc.outline:  # offsets point at the heading line in the original text
        assert doc.text[entry.offset:].startswith("#")
        assert entry.title in doc.text[entry.offset:doc.text.index("\n", entry.offset)]
    assert "not a heading" not in [e.title for e in doc.outline]


def test_markdown_setext_heading():
    doc = extract(b"Title\n=====\n\ntext\n\nSub\n---\n", "x.md")
    assert [(e.title, e.level, e.line, e.offset) for e in doc.outline] == [("Title", 1, 1, 0), ("Sub", 2, 6, 19)]


def test_csv_structure(extracted):
    doc = extracted("data.csv")
    assert doc.kind == "csv"
    assert doc.structure["header"] == ["id", "name", "city", "amount"]
    assert doc.structure["rows"][0] == ["1", "Person 1", "Lyon", "3"] and len(doc.structure["rows"]) == 5
    assert doc.structure["rowCount"] == 20 and doc.structure["delimiter"] == ","
    assert doc.text.startswith("id,name,city,amount\n")


def test_tsv_sniffed(extracted):
    doc = extracted("data.tsv")
    assert doc.structure["delimiter"] == "\t" and doc.structure["rowCount"] == 20
    assert "Köln" in doc.text


def test_csv_row_budget_warns_and_cuts():
    data = ("a;b\n" + "".join(f"{i};x\n" for i in range(100))).encode()
    doc = extract(data, "big.csv", limits=Limits(max_rows_per_sheet=10))
    assert doc.structure["rowCount"] == 10 and doc.structure["delimiter"] == ";"
    assert doc.text.splitlines()[-1] == "9;x" and len(doc.text.splitlines()) == 11
    assert any("cut at 10 rows" in w for w in doc.warnings)


def test_json_keeps_text_and_builds_skeleton(extracted, fixture_docs):
    doc = extracted("config.json")
    assert doc.text == (fixture_docs / "config.json").read_text(encoding="utf-8")
    sk = doc.structure["skeleton"]
    assert sk["server"] == {"url": "string", "port": "number", "tls": "boolean"}
    assert sk["users"] == [2, {"name": "string", "groups": [1, "string"]}]
    assert sk["features"]["limit"] == "null" and sk["features"]["search"]["languages"] == [2, "string"]


def test_json_skeleton_is_capped():
    deep = "[" * 50 + "]" * 50
    doc = extract(deep.encode(), "deep.json")
    assert "…" in str(doc.structure["skeleton"])
    wide = extract(("{" + ",".join(f'"k{i}":{i}' for i in range(500)) + "}").encode(), "wide.json")
    assert len(wide.structure["skeleton"]) <= 41 and "more keys" in wide.structure["skeleton"]["…"]


def test_invalid_json_is_text_with_warning():
    doc = extract(b'{"a": 1,,}', "broken.json")
    assert doc.text == '{"a": 1,,}' and "skeleton" not in doc.structure
    assert any("invalid JSON" in w and "line 1" in w for w in doc.warnings)


def test_html_text_without_tags_scripts_styles(extracted):
    doc = extracted("page.html")
    assert "scarlet ibis & friends" in doc.text and "Café ouvert." in doc.text
    assert "do not index me" not in doc.text and "color: red" not in doc.text and "<" not in doc.text
    assert [(e.title, e.level) for e in doc.outline] == [("Welcome", 1), ("Details", 2), ("Deep", 3)]
    for entry in doc.outline:
        assert doc.text[entry.offset:].startswith(entry.title)


def test_png_image(extracted, fixture_docs):
    doc = extracted("photo.png")
    assert doc.kind == "image" and doc.image is not None
    assert (doc.image.mime, doc.image.width, doc.image.height) == ("image/png", 64, 48)
    assert doc.image.data == (fixture_docs / "photo.png").read_bytes()
    assert "64x48" in doc.text


def test_other_image_formats():
    import io

    from PIL import Image

    for fmt, mime in (("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")):
        buf = io.BytesIO()
        Image.new("RGB", (10, 7), (200, 10, 10)).save(buf, format=fmt)
        doc = extract(buf.getvalue(), f"x.{fmt.lower()}")
        assert doc.image is not None and (doc.image.mime, doc.image.width, doc.image.height) == (mime, 10, 7)


def test_unknown_extension_text_is_read():
    doc = extract(b"hello world\n", "README")
    assert doc.kind == "text" and doc.text == "hello world\n"


def test_empty_text_file_is_a_document():
    doc = extract(b"", "empty.txt")
    assert doc.text == "" and doc.warnings == ["empty file"]


def test_documents_survive_pickle_and_dict_roundtrip(extracted):
    for name in ("manual.md", "config.json", "budget.xlsx"):
        doc = extracted(name)
        assert pickle.loads(pickle.dumps(doc)) == doc
        assert Document.from_dict(doc.to_dict()) == doc


def test_pdf_magic_inside_text_is_still_text():
    doc = extract(b"# Notes\nA file starts with %PDF-1.7 when it is a PDF.\n", "notes.md")
    assert doc.kind == "markdown" and doc.outline[0].title == "Notes"


def test_csv_exactly_at_row_budget_has_no_warning():
    doc = extract(b"h\n1\n2\n3\n", "a.csv", limits=Limits(max_rows_per_sheet=3))
    assert doc.structure["rowCount"] == 3 and doc.warnings == [] and doc.text == "h\n1\n2\n3\n"


def test_outline_lines_for_many_headings():
    html = "".join(f"<h2>H{i}</h2><p>body {i}</p>" for i in range(2000))
    doc = extract(html.encode(), "many.html")
    assert len(doc.outline) == 2000
    assert [e.line for e in doc.outline[:3]] == [1, 3, 5] and doc.outline[-1].line == 2 * 1999 + 1
    assert all(doc.text.splitlines()[e.line - 1] == e.title for e in doc.outline)


def test_mime_decides_when_the_name_has_no_extension():
    doc = extract(b'{"a": [1, 2]}', "download", "application/json")
    assert doc.kind == "json" and doc.structure["skeleton"] == {"a": [2, "number"]}


def test_magic_beats_a_wrong_extension(fixture_docs):
    doc = extract((fixture_docs / "report.docx").read_bytes(), "report.bin")
    assert doc.kind == "docx" and "amber heron" in doc.text
    img = extract((fixture_docs / "photo.png").read_bytes(), "photo.txt")
    assert img.kind == "image"


def test_pdf_threads_take_turns(fixture_docs):
    from concurrent.futures import ThreadPoolExecutor

    data = (fixture_docs / "manual.pdf").read_bytes()
    with ThreadPoolExecutor(3) as pool:
        docs = list(pool.map(lambda _: extract(data, "manual.pdf"), range(3)))
    assert len({d.text for d in docs}) == 1 and docs[0].engine == "pypdfium2"
