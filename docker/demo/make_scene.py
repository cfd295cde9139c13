#!/usr/bin/env python3
"""Writes the demo scene used by docker/compose.yaml: a small case file.

The output follows ../../../shared/cases/FORMAT.md (`hitbox-cases/1`), so it is
both a scene for `hitboxctl load` and a case file for `hitboxctl check`. It is
not derived from the shared case files: the colliders are seeded-random spheres
(layer 0) and axis-aligned boxes (layer 1), and every expected answer is
computed here in closed form:

  * sphere/sphere overlap: centre distance against the radius sum;
  * sphere/box and box/box overlap: distance from a point to an AABB, and
    interval overlap on each axis (Ericson, RTCD 5.1.3 and 4.2.1);
  * ray/sphere: the quadratic of |o + t d - c| = r (RTCD 5.3.2);
  * ray/AABB: the slab test (RTCD 5.3.3);
  * sphere sweep against spheres: a ray against the sphere of radius r1 + r2
    (RTCD 5.5.5). Sweeps use mask 1 so they only see the spheres.

The 1e-6 bands of FORMAT.md are applied by evaluating each answer with the
collider shrunk and grown by 1e-6: overlaps between the two go to `maybe`, and
a sweep or raycast where any candidate changes between the two is dropped.

Usage: python3 docker/demo/make_scene.py [OUT]   (default: docker/demo/scene.json)
Deterministic: the same seed always writes the same bytes.
"""

import json
import math
import os
import random
import sys

SEED = 20240611
BAND = 1e-6
TOLERANCE = 1e-4
ALL_LAYERS = 0xFFFFFFFF
NUM_SPHERES = 160
NUM_BOXES = 80
NUM_QUERIES = 240
EXTENT = 14.0  # colliders are centred in [-EXTENT, EXTENT]^3, metres


def rnd(rng, lo, hi):
    # Rounded to 1e-3 m so the file stays small and readable.
    return round(rng.uniform(lo, hi), 3)


def vec(rng, lo, hi):
    return [rnd(rng, lo, hi) for _ in range(3)]


def sub(a, b):
    return [a[i] - b[i] for i in range(3)]


def dot(a, b):
    return sum(a[i] * b[i] for i in range(3))


def point_aabb_distance(p, centre, half):
    """Distance from p to the box centre +- half (0 inside). RTCD 5.1.3."""
    d2 = 0.0
    for i in range(3):
        lo, hi = centre[i] - half[i], centre[i] + half[i]
        v = p[i]
        if v < lo:
            d2 += (lo - v) ** 2
        elif v > hi:
            d2 += (v - hi) ** 2
    return math.sqrt(d2)


def ray_sphere(origin, trans, centre, radius):
    """First fraction in [0, 1] where origin + t*trans is in the ball, or None."""
    m = sub(origin, centre)
    c = dot(m, m) - radius * radius
    if c <= 0.0:
        return 0.0
    a = dot(trans, trans)
    b = dot(m, trans)
    if a == 0.0 or b >= 0.0:
        return None
    disc = b * b - a * c
    if disc < 0.0:
        return None
    t = (-b - math.sqrt(disc)) / a
    return t if t <= 1.0 else None


def ray_aabb(origin, trans, centre, half):
    """Slab test: first fraction in [0, 1] inside the box, or None. RTCD 5.3.3."""
    t_min, t_max = 0.0, 1.0
    for i in range(3):
        lo, hi = centre[i] - half[i], centre[i] + half[i]
        if trans[i] == 0.0:
            if origin[i] < lo or origin[i] > hi:
                return None
            continue
        t1 = (lo - origin[i]) / trans[i]
        t2 = (hi - origin[i]) / trans[i]
        if t1 > t2:
            t1, t2 = t2, t1
        t_min = max(t_min, t1)
        t_max = min(t_max, t2)
        if t_min > t_max:
            return None
    return t_min


def make_colliders(rng):
    colliders = []
    next_id = 1
    for _ in range(NUM_SPHERES):
        colliders.append({"id": next_id, "layer": 0,
                          "shape": {"sphere": {"radius": rnd(rng, 0.3, 2.0)}},
                          "position": vec(rng, -EXTENT, EXTENT),
                          "rotation": [0, 0, 0, 1]})
        next_id += 1
    for _ in range(NUM_BOXES):
        colliders.append({"id": next_id, "layer": 1,
                          "shape": {"box": {"half_extents": vec(rng, 0.2, 2.5)}},
                          "position": vec(rng, -EXTENT, EXTENT),
                          "rotation": [0, 0, 0, 1]})
        next_id += 1
    return colliders


def candidates(colliders, mask):
    return [c for c in colliders if mask & (1 << c["layer"])]


def overlap_answer(colliders, qshape, qpos, mask):
    """hits / maybe lists of an overlap query (sphere or unrotated box)."""
    hits, maybe = [], []
    for c in candidates(colliders, mask):
        touch = []
        for delta in (-BAND, BAND):
            if "sphere" in c["shape"]:
                r = c["shape"]["sphere"]["radius"] + delta
                if "sphere" in qshape:
                    d = math.sqrt(dot(sub(qpos, c["position"]), sub(qpos, c["position"])))
                    touch.append(d <= r + qshape["sphere"]["radius"])
                else:
                    d = point_aabb_distance(c["position"], qpos, qshape["box"]["half_extents"])
                    touch.append(d <= r)
            else:
                half = [h + delta for h in c["shape"]["box"]["half_extents"]]
                if "sphere" in qshape:
                    d = point_aabb_distance(qpos, c["position"], half)
                    touch.append(d <= qshape["sphere"]["radius"])
                else:
                    qh = qshape["box"]["half_extents"]
                    touch.append(all(abs(qpos[i] - c["position"][i]) <= half[i] + qh[i]
                                     for i in range(3)))
        if touch[0]:
            hits.append(c["id"])
        elif touch[1]:
            maybe.append(c["id"])
    return hits, maybe


def first_hit(fractions):
    """Expected answer from (id, fraction_shrunk, fraction_grown); None if grazing."""
    for _, f_shrunk, f_grown in fractions:
        if (f_shrunk is None) != (f_grown is None):
            return None
        if f_shrunk is not None and abs(f_shrunk - f_grown) > TOLERANCE / 10:
            return None
    found = [(f_shrunk, cid) for cid, f_shrunk, _ in fractions if f_shrunk is not None]
    if not found:
        return {"hit": None}
    found.sort()
    best, best_id = found[0]
    also = sorted(cid for f, cid in found[1:] if f <= best + TOLERANCE)
    answer = {"hit": best_id, "fraction": best, "tolerance": TOLERANCE}
    if also:
        answer["also"] = also
    return answer


def raycast_answer(colliders, origin, trans, mask):
    rows = []
    for c in candidates(colliders, mask):
        f = []
        for delta in (-BAND, BAND):
            if "sphere" in c["shape"]:
                f.append(ray_sphere(origin, trans, c["position"],
                                    c["shape"]["sphere"]["radius"] + delta))
            else:
                half = [h + delta for h in c["shape"]["box"]["half_extents"]]
                f.append(ray_aabb(origin, trans, c["position"], half))
        rows.append((c["id"], f[0], f[1]))
    return first_hit(rows)


def sweep_answer(colliders, radius, pos, trans):
    rows = []
    for c in candidates(colliders, 1):  # spheres only
        r = c["shape"]["sphere"]["radius"] + radius
        rows.append((c["id"], ray_sphere(pos, trans, c["position"], r - BAND),
                     ray_sphere(pos, trans, c["position"], r + BAND)))
    return first_hit(rows)


def make_queries(rng, colliders):
    queries, expected = [], []
    masks = [ALL_LAYERS, 1, 2]
    attempts = 0
    while len(queries) < NUM_QUERIES and attempts < 100 * NUM_QUERIES:
        attempts += 1
        qid = len(queries) + 1
        kind = len(queries) % 3
        if kind == 0:
            mask = masks[rng.randrange(3)]
            pos = vec(rng, -EXTENT, EXTENT)
            if rng.random() < 0.5:
                shape = {"sphere": {"radius": rnd(rng, 0.5, 4.0)}}
            else:
                shape = {"box": {"half_extents": vec(rng, 0.5, 3.0)}}
            hits, maybe = overlap_answer(colliders, shape, pos, mask)
            query = {"shape": shape, "position": pos, "rotation": [0, 0, 0, 1]}
            if mask != ALL_LAYERS:
                query["mask"] = mask
            answer = {"hits": sorted(hits)}
            if maybe:
                answer["maybe"] = sorted(maybe)
            queries.append({"id": qid, "overlap": query})
            expected.append(dict({"id": qid}, **answer))
        elif kind == 1:
            mask = masks[rng.randrange(3)]
            origin = vec(rng, -EXTENT, EXTENT)
            trans = vec(rng, -30.0, 30.0)
            answer = raycast_answer(colliders, origin, trans, mask)
            if answer is None:
                continue
            query = {"origin": origin, "translation": trans}
            if mask != ALL_LAYERS:
                query["mask"] = mask
            queries.append({"id": qid, "raycast": query})
            expected.append(dict({"id": qid}, **answer))
        else:
            radius = rnd(rng, 0.2, 1.5)
            pos = vec(rng, -EXTENT, EXTENT)
            trans = vec(rng, -25.0, 25.0)
            answer = sweep_answer(colliders, radius, pos, trans)
            if answer is None:
                continue
            queries.append({"id": qid, "sweep": {
                "shape": {"sphere": {"radius": radius}}, "position": pos,
                "rotation": [0, 0, 0, 1], "translation": trans, "mask": 1}})
            expected.append(dict({"id": qid}, **answer))
    return queries, expected


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "scene.json")
    rng = random.Random(SEED)
    colliders = make_colliders(rng)
    queries, expected = make_queries(rng, colliders)
    doc = {
        "format": "hitbox-cases/1",
        "scenario": "demo",
        "seed": SEED,
        "generator": {"tool": "docker/demo/make_scene.py",
                      "note": "closed-form answers; spheres on layer 0, boxes on layer 1"},
        "colliders": colliders,
        "queries": queries,
        "expected": expected,
    }
    with open(out, "w", encoding="utf-8") as f:
        f.write("{\n")
        keys = list(doc)
        for i, key in enumerate(keys):
            value = doc[key]
            sep = "," if i + 1 < len(keys) else ""
            if isinstance(value, list):
                f.write(json.dumps(key) + ": [\n")
                for j, item in enumerate(value):
                    f.write(json.dumps(item, separators=(",", ":")))
                    f.write(",\n" if j + 1 < len(value) else "\n")
                f.write("]" + sep + "\n")
            else:
                f.write(json.dumps(key) + ": " + json.dumps(value) + sep + "\n")
        f.write("}\n")


if __name__ == "__main__":
    main()
