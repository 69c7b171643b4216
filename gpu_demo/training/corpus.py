"""The built-in pair's corpus: Jane Austen's six novels, read from R's lazy-load format without R.

Debian's ``r-cran-janeaustenr`` ships the novels as R objects in ``data/Rdata.rdb`` / ``Rdata.rdx``.
The .rdx index is a gzip file holding an R-serialised list ``variables`` that maps each object's
name to ``c(offset, length)`` in the .rdb; each .rdb record is a 4-byte big-endian length followed by
zlib data holding an R-serialised object (XDR format, version 2 or 3). We read only what the novels
need: pairlists, symbols, character/integer/logical/double/generic vectors, references.

The extracted text is committed compressed as ``assets/austen.txt.xz`` (see ``assets/CORPUS.md``), so
nothing here runs at training or test time unless the asset is rebuilt with ``extract``.
"""

from __future__ import annotations

import gzip
import lzma
import struct
import zlib
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).resolve().parents[1] / "assets"
CORPUS_PATH = ASSETS / "austen.txt.xz"
DEBIAN_DATA = Path("/usr/lib/R/site-library/janeaustenr/data")
# Publication order; each is a character vector of lines in the package.
BOOKS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion")
HELD_OUT_FRACTION = 0.05  # the last 5% of every novel is held out


class _RReader:
    """Minimal reader of R's XDR serialisation (the subset used by lazy-loaded character data)."""

    def __init__(self, data: bytes) -> None:
        self.buf = data
        self.pos = 0
        self.refs: list[Any] = []

    def _int(self) -> int:
        (v,) = struct.unpack_from(">i", self.buf, self.pos)
        self.pos += 4
        return v

    def _bytes(self, n: int) -> bytes:
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def read_header(self) -> None:
        """Check the 'X\\n' XDR magic and skip version fields (and the v3 native encoding)."""
        if self._bytes(2) != b"X\n":
            raise ValueError("not an XDR R serialisation (expected 'X\\n')")
        version = self._int()
        self._int()  # writer's R version
        self._int()  # minimal reader version
        if version == 3:
            self._bytes(self._int())  # native encoding name

    def read(self) -> Any:
        """One serialised item."""
        flags = self._int()
        sxp = flags & 0xFF
        has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))
        if sxp == 254:  # NILVALUE_SXP
            return None
        if sxp in (253, 242, 251):  # global env, empty env, missing arg: not needed here
            return None
        if sxp == 255:  # REFSXP
            idx = flags >> 8
            return self.refs[(idx if idx else self._int()) - 1]
        if sxp == 1:  # SYMSXP: a CHARSXP follows
            name = self.read()
            self.refs.append(name)
            return name
        if sxp in (2, 6):  # LISTSXP / LANGSXP: attr?, tag?, car, cdr
            out: list[tuple[Any, Any]] = []
            while sxp in (2, 6):
                if has_attr:
                    self.read()
                tag = self.read() if has_tag else None
                out.append((tag, self.read()))
                flags = self._int()
                sxp = flags & 0xFF
                has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))
            if sxp != 254:
                raise ValueError(f"unexpected pairlist terminator type {sxp}")
            return out
        if sxp == 9:  # CHARSXP
            n = self._int()
            return None if n == -1 else self._bytes(n).decode("utf-8" if flags & (1 << 15) else "latin-1")
        if sxp in (10, 13):  # LGLSXP, INTSXP
            n = self._int()
            val: Any = list(struct.unpack_from(f">{n}i", self.buf, self.pos))
            self.pos += 4 * n
        elif sxp == 14:  # REALSXP
            n = self._int()
            val = list(struct.unpack_from(f">{n}d", self.buf, self.pos))
            self.pos += 8 * n
        elif sxp == 16:  # STRSXP
            val = [self.read() for _ in range(self._int())]
        elif sxp == 19:  # VECSXP
            val = [self.read() for _ in range(self._int())]
        else:
            raise ValueError(f"R type {sxp} is not supported by this reader")
        if has_attr:
            attrs = dict(self.read() or [])
            if sxp == 19 and "names" in attrs:
                val = dict(zip(attrs["names"], val))
        return val


def _unserialize(blob: bytes) -> Any:
    """R object from a lazy-load record: 4-byte big-endian length, then zlib data."""
    (n,) = struct.unpack_from(">i", blob, 0)
    raw = zlib.decompress(blob[4:])
    if len(raw) != n:
        raise ValueError(f"record length mismatch: header {n}, inflated {len(raw)}")
    r = _RReader(raw)
    r.read_header()
    return r.read()


def _read_rds(blob: bytes) -> Any:
    """R object from an .rds-style file: gzip (as R's saveRDS writes the .rdx) or the raw stream."""
    raw = gzip.decompress(blob) if blob[:2] == b"\x1f\x8b" else blob
    r = _RReader(raw)
    r.read_header()
    return r.read()


def read_lazyload(rdb: Path, rdx: Path) -> dict[str, Any]:
    """All objects of an R lazy-load database, by name."""
    index = _read_rds(rdx.read_bytes())
    db = rdb.read_bytes()
    out = {}
    for name, (offset, length) in index["variables"].items():
        out[name] = _unserialize(db[int(offset):int(offset) + int(length)])
    return out


def extract(data_dir: Path = DEBIAN_DATA) -> dict[str, str]:
    """Each novel as one string (lines joined by newlines), from the Debian package's data files."""
    objs = read_lazyload(data_dir / "Rdata.rdb", data_dir / "Rdata.rdx")
    return {b: "\n".join(line or "" for line in objs[b]).strip() + "\n" for b in BOOKS}


def write_asset(books: dict[str, str], path: Path = CORPUS_PATH) -> None:
    """Commit format: the novels in publication order, each preceded by a '\\x1e<name>\\n' separator line."""
    text = "".join(f"\x1e{name}\n{books[name]}" for name in BOOKS)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lzma.compress(text.encode("utf-8"), preset=9))


def load_books(path: Path = CORPUS_PATH) -> dict[str, str]:
    """The six novels from the committed asset, by name."""
    text = lzma.decompress(path.read_bytes()).decode("utf-8")
    books = {}
    for chunk in text.split("\x1e")[1:]:
        name, _, body = chunk.partition("\n")
        books[name] = body
    return books


def train_val_split(books: dict[str, str]) -> tuple[str, str]:
    """(train, held-out) text: the first 95% of every novel trains, the last 5% of each is held out."""
    train, val = [], []
    for body in books.values():
        cut = int(len(body) * (1 - HELD_OUT_FRACTION))
        cut = body.rfind("\n", 0, cut) + 1 or cut  # split on a line boundary
        train.append(body[:cut])
        val.append(body[cut:])
    return "".join(train), "".join(val)


if __name__ == "__main__":  # rebuild the asset from the Debian package
    novels = extract()
    write_asset(novels)
    print({k: len(v) for k, v in novels.items()}, sum(map(len, novels.values())), "chars")
