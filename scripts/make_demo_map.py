#!/usr/bin/env python3
"""Writes examples/maps/arena.glb, the demo map `bash scripts/hitbox.sh run` serves.

A 100 m x 100 m arena in glTF 2.0 binary form (y up, metres), made the way a
level exported from Blender for Hitbox looks (see docs/cli.md, "Levels"):

- triangle meshes: a tessellated floor, the perimeter walls, a ramp and a hill;
- `UBX_*` nodes: stairs and crates (boxes fitted to their vertices);
- `UCX_*` nodes: pillars and rocks (convex hulls of their vertices);
- `USP_*` / `UCP_*` nodes: balls and posts (fitted spheres and capsules);
- `extras.hitbox_layer`: 0 for the level's structure, 1 for props.

Deterministic (no randomness beyond a fixed formula), so re-running it gives
the same bytes:   python3 scripts/make_demo_map.py [OUT.glb]
"""
import json
import math
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "examples", "maps", "arena.glb")


class Glb:
    """Collects meshes and nodes and writes one .glb."""

    def __init__(self):
        self.bin = bytearray()
        self.views, self.accessors, self.meshes, self.nodes = [], [], [], []

    def _view(self, data):
        while len(self.bin) % 4:
            self.bin.append(0)
        self.views.append({"buffer": 0, "byteOffset": len(self.bin), "byteLength": len(data)})
        self.bin += data
        return len(self.views) - 1

    def mesh(self, name, vertices, triangles):
        """A mesh of `vertices` (x, y, z) and `triangles` (i, j, k); returns its index."""
        pos = b"".join(struct.pack("<3f", *v) for v in vertices)
        idx = b"".join(struct.pack("<3I", *t) for t in triangles)
        lo = [min(v[a] for v in vertices) for a in range(3)]
        hi = [max(v[a] for v in vertices) for a in range(3)]
        self.accessors.append({"bufferView": self._view(pos), "componentType": 5126,
                               "count": len(vertices), "type": "VEC3",
                               "min": lo, "max": hi})
        self.accessors.append({"bufferView": self._view(idx), "componentType": 5125,
                               "count": 3 * len(triangles), "type": "SCALAR"})
        n = len(self.accessors)
        self.meshes.append({"name": name, "primitives": [
            {"attributes": {"POSITION": n - 2}, "indices": n - 1, "mode": 4}]})
        return len(self.meshes) - 1

    def node(self, name, vertices, triangles, translation=(0, 0, 0), yaw_deg=0.0, layer=0):
        half = math.radians(yaw_deg) / 2
        node = {"name": name, "mesh": self.mesh(name, vertices, triangles),
                "extras": {"hitbox_layer": layer}}
        if any(translation):
            node["translation"] = [float(t) for t in translation]
        if yaw_deg:
            node["rotation"] = [0.0, math.sin(half), 0.0, math.cos(half)]
        self.nodes.append(node)

    def write(self, path):
        doc = {"asset": {"version": "2.0", "generator": "hitbox scripts/make_demo_map.py"},
               "scene": 0, "scenes": [{"name": "arena", "nodes": list(range(len(self.nodes)))}],
               "nodes": self.nodes, "meshes": self.meshes, "accessors": self.accessors,
               "bufferViews": self.views, "buffers": [{"byteLength": len(self.bin)}]}
        text = json.dumps(doc, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 4)
        data = bytes(self.bin) + b"\0" * (-len(self.bin) % 4)
        total = 12 + 8 + len(text) + 8 + len(data)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(struct.pack("<III", 0x46546C67, 2, total))
            f.write(struct.pack("<II", len(text), 0x4E4F534A) + text)
            f.write(struct.pack("<II", len(data), 0x004E4942) + data)


def box(hx, hy, hz, cx=0.0, cy=0.0, cz=0.0):
    """The 8 corners and 12 outward triangles of a box."""
    v = [(cx + sx * hx, cy + sy * hy, cz + sz * hz)
         for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    t = []
    for a, b, c, d in faces:
        t += [(a, b, c), (a, c, d)]
    return v, t


def grid(cells, size, height, x0, z0):
    """A (cells x cells) grid of `size` m squares with y = height(x, z)."""
    v = [(x0 + i * size, height(x0 + i * size, z0 + j * size), z0 + j * size)
         for j in range(cells + 1) for i in range(cells + 1)]
    t = []
    w = cells + 1
    for j in range(cells):
        for i in range(cells):
            a, b, c, d = j * w + i, j * w + i + 1, (j + 1) * w + i + 1, (j + 1) * w + i
            t += [(a, d, c), (a, c, b)]
    return v, t


def prism(sides, radius, height):
    """Vertices of an upright prism with `sides` sides (a convex hull's points)."""
    v = []
    for k in range(sides):
        a = 2 * math.pi * k / sides
        v += [(radius * math.cos(a), 0.0, radius * math.sin(a)),
              (radius * math.cos(a), height, radius * math.sin(a))]
    return v


def hull_triangles(n):
    """Placeholder faces for point-cloud nodes (UCX/USP/UCP use only the vertices)."""
    return [(0, 1, 2)] + [(0, k, k + 1) for k in range(2, n - 1)]


def sphere_points(radius, rings=6, segments=10):
    v = [(0.0, radius, 0.0), (0.0, -radius, 0.0)]
    for r in range(1, rings):
        phi = math.pi * r / rings
        for s in range(segments):
            th = 2 * math.pi * s / segments
            v.append((radius * math.sin(phi) * math.cos(th), radius * math.cos(phi),
                      radius * math.sin(phi) * math.sin(th)))
    return v


def capsule_points(radius, half_height, segments=10):
    v = []
    for y, sign in ((half_height, 1), (-half_height, -1)):
        v.append((0.0, y + sign * radius, 0.0))
        for s in range(segments):
            th = 2 * math.pi * s / segments
            v.append((radius * math.cos(th), y, radius * math.sin(th)))
    return v


def main():
    g = Glb()
    # Structure, layer 0: a floor of 800 triangles, the walls, a ramp, a hill.
    g.node("Floor", *grid(20, 5.0, lambda x, z: 0.0, -50.0, -50.0))
    walls_v, walls_t = [], []
    for hx, hz, cx, cz in ((51, 1, 0, -51), (51, 1, 0, 51), (1, 50, -51, 0), (1, 50, 51, 0)):
        v, t = box(hx, 3, hz, cx, 3, cz)
        walls_t += [(a + len(walls_v), b + len(walls_v), c + len(walls_v)) for a, b, c in t]
        walls_v += v
    g.node("Walls", walls_v, walls_t)
    ramp_v = [(0, 0, -3), (16, 4, -3), (16, 4, 3), (0, 0, 3), (16, 0, -3), (16, 0, 3)]
    ramp_t = [(0, 3, 2), (0, 2, 1), (1, 2, 5), (1, 5, 4), (0, 1, 4), (3, 5, 2)]
    g.node("Ramp", ramp_v, ramp_t, translation=(8, 0, -30))
    g.node("Hill", *grid(12, 2.0, lambda x, z: 2.5 * math.sin(math.pi * (x - 20) / 24) *
                         math.sin(math.pi * (z - 20) / 24), 20.0, 20.0))
    # Stairs up to the ramp's top: 8 steps of 0.5 m.
    for k in range(8):
        top = 0.5 * (k + 1)
        g.node("UBX_Step_%d" % (k + 1), *box(3, top / 2, 0.5, 0, top / 2, 0),
               translation=(30, 0, -33 + 1.0 * k))
    # Props, layer 1.
    for k in range(6):
        a = 2 * math.pi * k / 6
        v = prism(8, 1.2, 6.0)
        g.node("UCX_Pillar_%d" % (k + 1), v, hull_triangles(len(v)),
               translation=(22 * math.cos(a), 0, 22 * math.sin(a)), layer=1)
    for k in range(10):
        x, z = -40 + 8 * k, -42 + 3 * (k % 3)
        g.node("UBX_Crate_%d" % (k + 1), *box(1, 1, 1, 0, 1, 0), translation=(x, 0, z),
               yaw_deg=17 * k, layer=1)
    for k in range(5):
        s = 1.0 + 0.3 * k
        v = [(s * math.cos(2.4 * i) * (1 + 0.2 * math.sin(i)), s * (0.3 + 0.25 * (i % 4)),
              s * math.sin(2.4 * i) * (1 + 0.2 * math.cos(i))) for i in range(14)]
        v.append((0.0, 0.0, 0.0))
        g.node("UCX_Rock_%d" % (k + 1), v, hull_triangles(len(v)),
               translation=(-35 + 6 * k, 0, 30 - 4 * k), layer=1)
    for k in range(2):
        v = sphere_points(1.5)
        g.node("USP_Ball_%d" % (k + 1), v, hull_triangles(len(v)),
               translation=(-10 + 20 * k, 1.5, 10), layer=1)
        v = capsule_points(0.4, 1.5)
        g.node("UCP_Post_%d" % (k + 1), v, hull_triangles(len(v)),
               translation=(-10 + 20 * k, 1.9, -10), layer=1)
    g.write(OUT)
    print("wrote %s (%d nodes)" % (OUT, len(g.nodes)))


if __name__ == "__main__":
    main()
