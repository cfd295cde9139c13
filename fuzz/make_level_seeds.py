#!/usr/bin/env python3
"""Writes the seeds of the import target into fuzz/corpus/import/.

Usage: python3 fuzz/make_level_seeds.py

Each seed is a format byte (0 .obj, 1 .glb, 2 .gltf), an options byte (bit 7:
max_mesh_triangles = 1 + bits 0..2) and the file (see import_fuzzer.cc): the
OBJ fixture of tests/import, a small OBJ with every collision prefix, and one
glTF level (nodes with hierarchy, scale, rotation, extras; buffer inline as a
data: URI) written both as .gltf and as .glb, and a .glb of quantized positions
drawn by an instanced node.
"""
import base64
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus", "import")
ROOT = os.path.dirname(HERE)


def save(name, fmt, options, body):
    os.makedirs(CORPUS, exist_ok=True)
    with open(os.path.join(CORPUS, name), "wb") as f:
        f.write(bytes([fmt, options]) + body)


def cube(x, y, z, s):
    return [(x + dx * s, y + dy * s, z + dz * s) for dx in (0, 1) for dy in (0, 1) for dz in (0, 1)]


CUBE_FACES = [(1, 2, 4, 3), (5, 7, 8, 6), (1, 5, 6, 2), (3, 4, 8, 7), (1, 3, 7, 5), (2, 6, 8, 4)]


def cube_indices():
    """The cube's 12 triangles as 0-based unsigned short indices, padded to 4
    bytes, and how many indices."""
    tris = []
    for a, b, c, d in CUBE_FACES:
        tris += [a - 1, b - 1, c - 1, a - 1, c - 1, d - 1]
    idx = b"".join(struct.pack("<H", i) for i in tris)
    return idx + b"\0" * (-len(idx) % 4), len(tris)


def obj_level():
    lines = []
    base = 0
    for name, pts in [("UCX_rock", cube(0, 0, 0, 1)), ("UBX_crate", cube(3, 0, 0, 2)),
                      ("USP_ball", cube(-4, 0, 0, 1)), ("UCP_pill", cube(0, 0, 4, 0.5)),
                      ("floor", [(-10, -1, -10), (10, -1, -10), (10, -1, 10), (-10, -1, 10)])]:
        lines.append("o " + name)
        lines += ["v %g %g %g" % p for p in pts]
        if len(pts) == 8:
            lines += ["f " + " ".join(str(base + i) for i in f) for f in CUBE_FACES]
        else:
            lines += ["f %d %d %d" % (base + 1, base + 2, base + 3),
                      "f %d %d %d" % (base + 1, base + 3, base + 4)]
        base += len(pts)
    return ("\n".join(lines) + "\n").encode()


def gltf_level():
    """A glTF document and its binary buffer: one cube mesh used by four nodes."""
    pts = cube(-0.5, -0.5, -0.5, 1)
    pos = b"".join(struct.pack("<3f", *p) for p in pts)
    idx, count = cube_indices()
    binary = pos + idx
    doc = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0, 4]}],
        "nodes": [
            {"name": "group", "translation": [1, 2, 3], "children": [1, 2, 3],
             "extras": {"hitbox_layer": 3}},
            {"name": "UBX_crate", "mesh": 0, "scale": [2, 1, 1],
             "extras": {"hitbox_user_data": 42}},
            {"name": "USP_ball", "mesh": 0, "translation": [0, 3, 0], "scale": [1, 2, 1]},
            {"name": "UCX_rock", "mesh": 0, "rotation": [0, 0.38268343, 0, 0.92387953]},
            {"name": "wall", "mesh": 0, "matrix": [4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, -5, 1]},
        ],
        "meshes": [{"name": "cube", "primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 8, "type": "VEC3",
             "min": [-0.5, -0.5, -0.5], "max": [0.5, 0.5, 0.5]},
            {"bufferView": 1, "componentType": 5123, "count": count, "type": "SCALAR"},
        ],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": len(pos)},
            {"buffer": 0, "byteOffset": len(pos), "byteLength": 2 * count},
        ],
        "buffers": [{"byteLength": len(binary)}],
    }
    return doc, binary


def gltf_instanced():
    """A glTF document and buffer: the cube with normalized short positions
    (KHR_mesh_quantization) drawn by one node at three instances
    (EXT_mesh_gpu_instancing), one rotated and one scaled."""
    pts = cube(-16384, -16384, -16384, 32767)
    pos = b"".join(struct.pack("<3hxx", *p) for p in pts)
    idx, count = cube_indices()
    t = struct.pack("<9f", 0, 0, 0, 4, 0, 0, 8, 0, 0)
    r = struct.pack("<12f", 0, 0, 0, 1, 0, 0.70710677, 0, 0.70710677, 0, 0, 0, 1)
    sc = struct.pack("<9f", 1, 1, 1, 1, 1, 1, 2, 2, 2)
    binary = pos + idx + t + r + sc
    views, at = [], 0
    for part in (pos, idx, t, r, sc):
        views.append({"buffer": 0, "byteOffset": at, "byteLength": len(part)})
        at += len(part)
    views[0]["byteStride"] = 8
    doc = {
        "asset": {"version": "2.0"},
        "extensionsUsed": ["KHR_mesh_quantization", "EXT_mesh_gpu_instancing"],
        "extensionsRequired": ["KHR_mesh_quantization"],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"name": "crates", "mesh": 0, "scale": [0.001, 0.001, 0.001],
                   "extensions": {"EXT_mesh_gpu_instancing": {
                       "attributes": {"TRANSLATION": 2, "ROTATION": 3, "SCALE": 4}}}}],
        "meshes": [{"name": "cube", "primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "accessors": [
            {"bufferView": 0, "componentType": 5122, "normalized": True, "count": 8,
             "type": "VEC3"},
            {"bufferView": 1, "componentType": 5123, "count": count, "type": "SCALAR"},
            {"bufferView": 2, "componentType": 5126, "count": 3, "type": "VEC3"},
            {"bufferView": 3, "componentType": 5126, "count": 3, "type": "VEC4"},
            {"bufferView": 4, "componentType": 5126, "count": 3, "type": "VEC3"},
        ],
        "bufferViews": views,
        "buffers": [{"byteLength": len(binary)}],
    }
    return doc, binary


def glb(doc, binary):
    js = json.dumps(doc, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 4)
    binary += b"\0" * (-len(binary) % 4)
    total = 12 + 8 + len(js) + 8 + len(binary)
    return (struct.pack("<4sII", b"glTF", 2, total) + struct.pack("<I4s", len(js), b"JSON") + js +
            struct.pack("<I4s", len(binary), b"BIN\0") + binary)


def main():
    with open(os.path.join(ROOT, "tests", "import", "data", "level.obj"), "rb") as f:
        save("seed-level-obj", 0, 0, f.read())
    save("seed-prefixes-obj", 0, 0, obj_level())
    save("seed-prefixes-obj-split", 0, 0x81, obj_level())
    doc, binary = gltf_level()
    save("seed-level-glb", 1, 0, glb(doc, binary))
    inline = json.loads(json.dumps(doc))
    inline["buffers"][0]["uri"] = ("data:application/octet-stream;base64," +
                                   base64.b64encode(binary).decode())
    save("seed-level-gltf", 2, 0, json.dumps(inline, indent=1).encode())
    save("seed-level-gltf-split", 2, 0x83, json.dumps(inline).encode())
    save("seed-instanced-glb", 1, 0, glb(*gltf_instanced()))


if __name__ == "__main__":
    main()
