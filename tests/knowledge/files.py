"""Real files made in memory for upload tests: a PDF with a text layer, one without, a .docx."""

from __future__ import annotations

import io

import docx
from pypdf import PdfWriter


def pdf_with_text(*pages: str) -> bytes:
    """A valid PDF whose pages carry a Helvetica text layer (ASCII text)."""
    objects: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font = 3 + 2 * len(pages)
    for i, text in enumerate(pages):
        lines = "".join(
            f"({line.replace('(', '').replace(')', '')}) Tj 0 -16 Td " for line in text.split("\n")
        )
        stream = f"BT /F1 12 Tf 40 760 Td {lines}ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return pdf_of_objects(objects)


def pdf_of_objects(objects: list[bytes]) -> bytes:
    """A PDF file of these objects (numbered from 1, the first the catalog), with its xref."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.writelines(b"%010d 00000 n \n" % offset for offset in offsets)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def pdf_without_text() -> bytes:
    """A valid PDF of one blank page: no text layer (like a scan)."""
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_file(title: str, sections: dict[str, list[str]], table: list[list[str]] = ()) -> bytes:
    """A Word document: a title, headed sections of paragraphs, and an optional table."""
    document = docx.Document()
    document.add_heading(title, level=1)
    for heading, paragraphs in sections.items():
        document.add_heading(heading, level=2)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
