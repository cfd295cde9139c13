"""Conformance through the Python package: a case file (../shared/cases/FORMAT.md) loaded into a
session, every query asked (rays as RayBatch arrays, the rest one by one) and every answer judged
as the C++ conformance test does (casefile/src/case_file.cc CheckAnswer).

HITBOX_PY_CASES (os.pathsep-separated paths) replaces the default files.
"""
import glob
import gzip
import json
import math
import os

import numpy as np
import pytest

import hitbox
from conftest import CASES_DIR, LEVELS_DIR

# Every case file but the performance ones (big, big_level: over 10 MB), and the real level.
DEFAULT_CASES = sorted(p for d in ("", "next", "rewind")
                       for p in glob.glob(os.path.join(CASES_DIR, d, "*.json*"))
                       if os.path.getsize(p) < 10 << 20) + [os.path.join(LEVELS_DIR, "level_inyard.json")]
CASES = os.environ["HITBOX_PY_CASES"].split(os.pathsep) if os.environ.get("HITBOX_PY_CASES") else DEFAULT_CASES
CHANGE_BATCH, QUERY_BATCH = 4096, 1024
IDENTITY = (0.0, 0.0, 0.0, 1.0)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)  # integers stay exact Python ints (ids above 2^53)


def shape(s):
    (kind, v), = s.items()
    if kind == "sphere":
        return hitbox.Sphere(v["radius"])
    if kind == "box":
        return hitbox.Box(v["half_extents"])
    if kind == "capsule":
        return hitbox.Capsule(v["radius"], v["half_height"])
    if kind == "cylinder":
        return hitbox.Cylinder(v["radius"], v["half_height"])
    if kind == "convex_hull":
        return hitbox.ConvexHull(v["points"])
    if kind == "mesh":
        return hitbox.Mesh(np.array(v["vertices"], float), np.array(v["triangles"], np.int64))
    if kind == "heightfield":
        return hitbox.Heightfield(v["rows"], v["cols"], tuple(v["cell_size"]), v["heights"])
    if kind == "compound":
        return hitbox.Compound(tuple(hitbox.CompoundChild(shape(c["shape"]), c.get("position", (0, 0, 0)),
                                                          c.get("rotation", IDENTITY))
                                     for c in v["children"]))
    raise ValueError(f"unknown shape kind {kind!r}")


def pose(d):
    return hitbox.Pose(d["position"], d.get("rotation", IDENTITY))


def mask_of(q):
    return hitbox.QueryFilter(mask=q["mask"]) if "mask" in q else None


def queries_of(case):
    """The file's queries in order: runs of rays with the same at_tick-ness as one RayBatch."""
    items, rays = [], []

    def flush():
        if rays:
            at = [q.get("at_tick") for q in rays]
            items.append(hitbox.RayBatch(
                [q["raycast"]["origin"] for q in rays], [q["raycast"]["translation"] for q in rays],
                mask=np.array([q["raycast"].get("mask", 0xFFFFFFFF) for q in rays], np.uint32),
                at_tick=None if at[0] is None else np.array(at, float)))
            rays.clear()

    for q in case["queries"]:
        if "raycast" in q:
            if rays and ("at_tick" in rays[0]) != ("at_tick" in q):
                flush()
            rays.append(q)
            continue
        flush()
        at = q.get("at_tick")
        if "overlap" in q:
            o = q["overlap"]
            items.append(hitbox.OverlapQuery(shape(o["shape"]), pose(o), mask_of(o), at_tick=at))
        elif "sweep" in q:
            s = q["sweep"]
            items.append(hitbox.CastQuery(shape(s["shape"]), pose(s), s["translation"], mask_of(s),
                                          at_tick=at))
        elif "move" in q:
            m = q["move"]
            settings = hitbox.MoveSettings(**{k: m[k] for k in ("up", "step_height", "max_slope_degrees",
                                                                "skin_width", "ground_snap_distance",
                                                                "max_iterations") if k in m})
            items.append(hitbox.MoveQuery(shape(m["shape"]), pose(m), m["displacement"], mask_of(m),
                                          settings, at_tick=at))
        else:
            raise ValueError(f"query {q['id']}: no overlap, sweep, raycast or move")
    flush()
    return items


def answers(results):
    """Flattens query results (QueryResult, CastHits) to one (kind, answer) per query."""
    out = []
    for r in results:
        if isinstance(r, hitbox.CastHits):
            for i in range(len(r)):
                out.append(([int(r.id[i])], [float(r.fraction[i])], [tuple(r.normal[i])])
                           if r.hit[i] else ([], [], []))
        else:
            out.append(r)
    return out


def check(q, ex, got):
    """None when the answer is right, else why not (FORMAT.md; the C++ CheckAnswer)."""
    tol = ex.get("tolerance", 1e-4)
    if "move" in q:
        p = got.move.position
        off = math.dist(p, ex["position"])
        return None if off <= tol else f"ended at {p}, expected {ex['position']} +- {tol}"
    if "overlap" in q:
        ids = [h.id for h in got.overlaps]
        for i in ex.get("hits", []):
            if i not in ids:
                return f"missed collider {i}"
        allowed = set(ex.get("hits", [])) | set(ex.get("maybe", []))
        for i in ids:
            if i not in allowed:
                return f"reported collider {i} which it does not touch"
        return None
    if isinstance(got, tuple):
        ids, fractions, normals = got
    else:
        ids = [h.id for h in got.hits[:1]]
        fractions = [h.fraction for h in got.hits[:1]]
        normals = [h.normal for h in got.hits[:1]]
    if ex["hit"] is None:
        return None if not ids else f"expected no hit, got collider {ids[0]} at {fractions[0]}"
    if not ids:
        return f"expected collider {ex['hit']} at fraction {ex['fraction']}, got no hit"
    if ids[0] != ex["hit"] and ids[0] not in ex.get("also", []):
        return f"expected collider {ex['hit']} at {ex['fraction']}, got {ids[0]} at {fractions[0]}"
    if not abs(fractions[0] - ex["fraction"]) <= tol:
        return f"collider {ids[0]}: fraction {fractions[0]}, expected {ex['fraction']} +- {tol}"
    n = normals[0]
    if not abs(math.sqrt(sum(c * c for c in n)) - 1.0) <= 1e-6:
        return f"collider {ids[0]}: normal {n} is not unit length"
    d = (q.get("sweep") or q.get("raycast"))["translation"]
    if fractions[0] != 0.0 and sum(a * b for a, b in zip(n, d)) > 1e-6:
        return f"collider {ids[0]}: normal {n} points along the motion {d}"
    return None


def kind_of(q):
    return next(k for k in ("overlap", "sweep", "raycast", "move") if k in q)


@pytest.mark.parametrize("path", CASES, ids=[os.path.basename(p) for p in CASES])
def test_case_file(client, path):
    assert os.path.exists(path), f"no case file {path}"
    case = load(path)
    sid = "cases-" + os.path.basename(path).split(".")[0].replace("_", "-")
    client.create_session(sid)
    try:
        ticks = case.get("ticks")
        first = None if ticks is None else ticks[0]
        colliders = case["colliders"]
        for start in range(0, len(colliders), CHANGE_BATCH):
            batch = []
            for c in colliders[start:start + CHANGE_BATCH]:
                at = c["history"][0] if "history" in c else c
                batch.append(hitbox.Add(hitbox.Collider(c["id"], shape(c["shape"]), pose(at),
                                                        c.get("layer", 0))))
            client.apply_changes(sid, batch, tick=first)
        if ticks is not None:
            # The later ticks' moves as a game server sends them: one tick each on a stream.
            moving = [c for c in colliders if "history" in c]
            with client.open_tick_stream(sid) as stream:
                for k in range(1, ticks[1] - ticks[0] + 1):
                    stream.tick_at(ticks[0] + k, [hitbox.Move(c["id"], pose(c["history"][k]))
                                                  for c in moving])
        items = queries_of(case)
        results = []
        chunk, size = [], 0
        for item in items + [None]:
            n = len(item) if isinstance(item, hitbox.RayBatch) else 1
            if item is None or size + n > QUERY_BATCH:
                if chunk:
                    results.extend(client.query(sid, chunk, timeout=60).results)
                chunk, size = [], 0
            if item is not None:
                chunk.append(item)
                size += n
        got = answers(results)
        assert len(got) == len(case["queries"])
        failures, passed = [], {}
        for q, ex, g in zip(case["queries"], case["expected"], got):
            assert q["id"] == ex["id"]
            why = check(q, ex, g)
            k = kind_of(q)
            p, total = passed.get(k, (0, 0))
            passed[k] = (p + (why is None), total + 1)
            if why is not None:
                failures.append(f"query {q['id']} ({k}): {why}")
        print(f"{os.path.basename(path)}: {len(colliders)} colliders; " +
              ", ".join(f"{k} {p}/{t}" for k, (p, t) in passed.items()))
        assert not failures, f"{len(failures)} wrong answers:\n" + "\n".join(failures[:20])
    finally:
        client.delete_session(sid)


# The judge refuses wrong answers: a missed or extra overlap, a wrong collider or fraction, a bad normal.
def test_judge_refuses_wrong_answers():
    ov = {"overlap": {}}
    res = lambda ids: hitbox.QueryResult(overlaps=[hitbox.OverlapHit(i, 0) for i in ids])  # noqa: E731
    assert check(ov, {"hits": [1], "maybe": [2]}, res([1, 2])) is None
    assert "missed collider 1" in check(ov, {"hits": [1], "maybe": [2]}, res([2]))
    assert "reported collider 3" in check(ov, {"hits": [1]}, res([1, 3]))
    ray = {"raycast": {"translation": [1, 0, 0]}}
    ex = {"hit": 5, "fraction": 0.5, "also": [6]}
    assert check(ray, ex, ([6], [0.50005], [(-1, 0, 0)])) is None
    assert "expected collider 5" in check(ray, ex, ([7], [0.5], [(-1, 0, 0)]))
    assert "fraction" in check(ray, ex, ([5], [0.5002], [(-1, 0, 0)]))
    assert "unit length" in check(ray, ex, ([5], [0.5], [(-0.9, 0, 0)]))
    assert "along the motion" in check(ray, ex, ([5], [0.5], [(1, 0, 0)]))
    assert "got no hit" in check(ray, ex, ([], [], []))
    assert "expected no hit" in check(ray, {"hit": None}, ([5], [0.5], [(-1, 0, 0)]))
