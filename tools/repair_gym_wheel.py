"""Repair the one requirement string that keeps modern pip from installing gym 0.20.0.

gym 0.20.0's metadata lists ``opencv-python (>=3.)`` in several extras. ``>=3.`` is not a valid
PEP 440 specifier, and pip >= 24.1 refuses the whole distribution because of it, even though we
never install those extras. This script rewrites that string to ``>=3`` inside a wheel built
locally (see ``make wheelhouse``), updates the RECORD hashes, and writes the repaired wheel.

Usage: python tools/repair_gym_wheel.py SOURCE_WHEEL DEST_DIR
Only the standard library is used, so any Python 3 can run it.
"""

import base64
import hashlib
import pathlib
import sys
import zipfile

BROKEN = "(>=3.)"
REPAIRED = "(>=3)"


def record_line(name: str, data: bytes) -> str:
    """One RECORD row: path, urlsafe-base64 sha256 without padding, size in bytes."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def repair(source: pathlib.Path, dest_dir: pathlib.Path) -> pathlib.Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / source.name
    with zipfile.ZipFile(source) as zin:
        files = {info.filename: zin.read(info.filename) for info in zin.infolist()}
    metadata_name = next(n for n in files if n.endswith(".dist-info/METADATA"))
    record_name = next(n for n in files if n.endswith(".dist-info/RECORD"))
    metadata = files[metadata_name].decode()
    if BROKEN not in metadata and REPAIRED not in metadata:
        sys.exit(f"repair_gym_wheel: {source.name} has no '{BROKEN}' requirement; is this gym 0.20.0?")
    files[metadata_name] = metadata.replace(BROKEN, REPAIRED).encode()
    rows = [record_line(n, data) for n, data in files.items() if n != record_name]
    files[record_name] = ("\n".join(rows + [f"{record_name},,"]) + "\n").encode()
    tmp = dest.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zout:
        for name, data in files.items():
            zout.writestr(name, data)
    tmp.replace(dest)  # atomic: a half-written wheel never sits in the wheelhouse
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(f"repaired {repair(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))}")
