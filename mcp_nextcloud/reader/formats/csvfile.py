"""CSV / TSV: the text as written, plus header, first rows and row count for the outline."""
from __future__ import annotations

import csv
import io

from ..document import Document, Limits
from ._common import decode_text


def _dialect(sample: str, name: str) -> str:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return "\t" if name.lower().endswith((".tsv", ".tab")) else ","


def extract(data: bytes, name: str, limits: Limits) -> Document:
    text, warnings = decode_text(data)
    sample = text[:16384]
    delimiter = _dialect(sample[: sample.rfind("\n") + 1] or sample, name)
    csv.field_size_limit(16 * 1024 * 1024)
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    header: list[str] = []
    first: list[list[str]] = []
    count = 0
    cut_line: int | None = None
    try:
        for row in reader:
            if not header:
                header = row
                continue
            count += 1
            if len(first) < 5:
                first.append(row)
            if count >= limits.max_rows_per_sheet:
                cut_line = reader.line_num
                if next(reader, None) is None:
                    cut_line = None  # exactly at the budget: nothing is dropped
                break
    except csv.Error as exc:
        warnings.append(f"CSV parse stopped at line {reader.line_num} ({exc}): shown as plain text")
    if cut_line is not None:
        # Keep the text of the rows within budget; the rest is dropped and reported.
        end = 0
        for _ in range(cut_line):
            nl = text.find("\n", end)
            end = len(text) if nl < 0 else nl + 1
        text = text[:end]
        warnings.append(f"CSV cut at {count} rows (limit {limits.max_rows_per_sheet})")
    unit = "tsv" if delimiter == "\t" else "csv"
    return Document(text=text, kind="csv", name=name,
                    mime="text/tab-separated-values" if unit == "tsv" else "text/csv",
                    structure={"header": header, "rows": first, "rowCount": count, "delimiter": delimiter},
                    warnings=warnings, engine="csv")
