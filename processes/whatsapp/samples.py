"""Small sample files standing in for media in development: the demo and the console backend."""

import struct
import zlib


def sample_pdf(title: str) -> bytes:
    """A one-page PDF saying what the document stands for (the demo, and the console backend's
    downloads)."""
    text = title.encode("latin-1", "replace").replace(b"(", b"[").replace(b")", b"]")
    stream = (
        b"BT /F1 18 Tf 72 720 Td ("
        + text
        + b") Tj 0 -28 Td /F1 11 Tf (Development placeholder) Tj ET"
    )
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def sample_png(size: int = 96) -> bytes:
    """A small PNG (a blue disc) standing in for the selfie."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    def pixel(x: int, y: int) -> bytes:
        inside = (x - size / 2) ** 2 + (y - size / 2.4) ** 2 < (size / 4) ** 2
        return bytes((40, 95, 191)) if inside else bytes((235, 240, 245))

    rows = b"".join(b"\x00" + b"".join(pixel(x, y) for x in range(size)) for y in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
