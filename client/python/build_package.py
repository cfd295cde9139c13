#!/usr/bin/python3
"""Assembles the importable `hitbox` package in OUT_DIR (CMake runs it at build time).

Copies the hand-written sources of client/python/hitbox and generates the
protobuf and gRPC stubs of proto/ with protoc and grpc_python_plugin into
OUT_DIR/hitbox/_proto. The generated modules import each other as
`hitbox.v1` and `grpc.health.v1`; those imports are rewritten to
`hitbox._proto.hitbox.v1` and `hitbox._proto.grpc.health.v1`, so nothing
named top-level `grpc` is produced (that name is grpcio's). The descriptors
keep their canonical file names (hitbox/v1/hitbox.proto, ...).

  build_package.py --proto-dir proto --out-dir build/client/python
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOS = ["hitbox/v1/geometry.proto", "hitbox/v1/collision.proto", "hitbox/v1/hitbox.proto",
          "grpc/health/v1/health.proto"]
IMPORT_RE = re.compile(r"^(from|import) (hitbox\.v1|grpc\.health\.v1)\b", re.M)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proto-dir", default=os.path.join(HERE, "..", "..", "proto"))
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--protoc", default=shutil.which("protoc") or "protoc")
    ap.add_argument("--plugin", default=shutil.which("grpc_python_plugin") or "grpc_python_plugin")
    args = ap.parse_args()

    pkg = os.path.join(args.out_dir, "hitbox")
    # A fresh copy each time: a source file deleted from the tree must not linger.
    if os.path.isdir(pkg):
        shutil.rmtree(pkg)
    shutil.copytree(os.path.join(HERE, "hitbox"), pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    with tempfile.TemporaryDirectory() as gen:
        cmd = [args.protoc, f"--proto_path={args.proto_dir}", f"--python_out={gen}",
               f"--pyi_out={gen}", f"--grpc_python_out={gen}",
               f"--plugin=protoc-gen-grpc_python={args.plugin}"] + PROTOS
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(f"build_package.py: {' '.join(cmd)} failed:\n{r.stderr}")
            return 1
        dest = os.path.join(pkg, "_proto")
        for root, _dirs, files in os.walk(gen):
            rel = os.path.relpath(root, gen)
            out = os.path.join(dest, rel) if rel != "." else dest
            os.makedirs(out, exist_ok=True)
            for f in files:
                with open(os.path.join(root, f), encoding="utf-8") as src:
                    text = IMPORT_RE.sub(lambda m: f"{m.group(1)} hitbox._proto.{m.group(2)}",
                                         src.read())
                with open(os.path.join(out, f), "w", encoding="utf-8") as dst:
                    dst.write(text)
        for root, _dirs, files in os.walk(dest):
            if "__init__.py" not in files:
                open(os.path.join(root, "__init__.py"), "w").close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
