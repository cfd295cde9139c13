#!/usr/bin/env python3
"""Writes the variants of a real level that docs/benchmarks.md measures.

    python3 scripts/level_variants.py one-mesh CASE.json OUT.json
    python3 scripts/level_variants.py six-places CASE.json OUT.json
    python3 scripts/level_variants.py obj LEVEL.glb OUT.obj
    python3 scripts/level_variants.py by-shape CASE.json PREFIX

- one-mesh: the case file with its layer-0 meshes joined into one mesh
  collider (id 1, the first mesh's pose and layer; all of them are placed at
  the identity in ../shared/levels), the answers naming that collider
  instead: a level shipped as one mesh.
- six-places: the case file with every mesh vertex as "%.6f" writes it (an
  OBJ level as Blender exports it). The answers are kept: a query that
  depends on a coordinate to 5e-7 m may then disagree with them.
- obj: a .glb of untransformed triangle meshes (as ../shared/levels/
  ctf_inyard.glb) as an OBJ, an object a mesh, "v %.6f %.6f %.6f".
- by-shape: the case file's sweeps split by their shape's kind, one file a
  kind (PREFIX_sphere.json, ...), with their answers.

For timing and memory only: nothing here is a case of the conformance suite.
"""
import json
import struct
import sys


def one_mesh(src, out):
    d = json.load(open(src))
    meshes = [c for c in d['colliders'] if 'mesh' in c['shape'] and c.get('layer', 0) == 0]
    ids = {c['id'] for c in meshes}
    vertices, triangles = [], []
    for c in meshes:
        base = len(vertices)
        vertices += c['shape']['mesh']['vertices']
        triangles += [[a + base, b + base, e + base] for a, b, e in c['shape']['mesh']['triangles']]
    one = dict(meshes[0])
    one['shape'] = {'mesh': {'vertices': vertices, 'triangles': triangles}}
    one['id'] = 1
    d['colliders'] = [one] + [c for c in d['colliders'] if c['id'] not in ids]
    joined = lambda i: 1 if i in ids else i

    def unique(ids_):
        seen = []
        for i in map(joined, ids_):
            if i not in seen:
                seen.append(i)
        return sorted(seen)

    for e in d['expected']:
        if 'hits' in e:
            e['hits'] = unique(e['hits'])
            e['maybe'] = [i for i in unique(e.get('maybe', [])) if i not in e['hits']]
        if e.get('hit') is not None:
            e['hit'] = joined(e['hit'])
            e['also'] = [i for i in unique(e.get('also', [])) if i != e['hit']]
    d['scenario'] = d.get('scenario', 'level') + '_one_mesh'
    json.dump(d, open(out, 'w'))


def six_places(src, out):
    d = json.load(open(src))
    for c in d['colliders']:
        mesh = c['shape'].get('mesh')
        if mesh:
            mesh['vertices'] = [[float('%.6f' % x) for x in v] for v in mesh['vertices']]
    d['scenario'] = d.get('scenario', 'level') + '_six_places'
    json.dump(d, open(out, 'w'))


def obj(src, out):
    b = open(src, 'rb').read()
    json_len, = struct.unpack('<I', b[12:16])
    j = json.loads(b[20:20 + json_len])
    bin_at = 20 + json_len + 8

    def accessor(i):
        a = j['accessors'][i]
        view = j['bufferViews'][a['bufferView']]
        at = bin_at + view.get('byteOffset', 0) + a.get('byteOffset', 0)
        n = a['count']
        if a['type'] == 'VEC3':
            return [struct.unpack_from('<3f', b, at + 12 * k) for k in range(n)]
        fmt, size = {5121: ('<B', 1), 5123: ('<H', 2), 5125: ('<I', 4)}[a['componentType']]
        return [struct.unpack_from(fmt, b, at + size * k)[0] for k in range(n)]

    with open(out, 'w') as f:
        base = 1
        for node in j['nodes']:
            if 'mesh' not in node:
                continue
            f.write('o %s\n' % node.get('name', 'mesh'))
            for p in j['meshes'][node['mesh']]['primitives']:
                positions = accessor(p['attributes']['POSITION'])
                indices = accessor(p['indices'])
                for x, y, z in positions:
                    f.write('v %.6f %.6f %.6f\n' % (x, y, z))
                for k in range(0, len(indices), 3):
                    f.write('f %d %d %d\n' % tuple(i + base for i in indices[k:k + 3]))
                base += len(positions)


def by_shape(src, prefix):
    d = json.load(open(src))
    kinds = {}
    for q, e in zip(d['queries'], d['expected']):
        if 'sweep' in q:
            kind = next(iter(q['sweep']['shape']))
            kinds.setdefault(kind, ([], []))
            kinds[kind][0].append(q)
            kinds[kind][1].append(e)
    for kind, (queries, expected) in kinds.items():
        out = dict(d, queries=queries, expected=expected)
        json.dump(out, open('%s_%s.json' % (prefix, kind), 'w'))
        print(kind, len(queries))


if __name__ == '__main__':
    commands = {'one-mesh': one_mesh, 'six-places': six_places, 'obj': obj, 'by-shape': by_shape}
    if len(sys.argv) != 4 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](sys.argv[2], sys.argv[3])
