#!/usr/bin/env python3
"""Writes the seeds of the scene_file and case_file targets into fuzz/corpus/.

Usage: python3 fuzz/make_json_seeds.py [CASES_DIR]   (default ../shared/cases)

Each seed is a mode byte then the file (see fuzz/json_file_input.h): 0 plain
.json, 1 JSON the target gzips itself, 2 the bytes of a real .json.gz. Case
seeds are a few colliders and queries cut from the conformance case files
(their expected answers no longer match the cut scene; the loader does not
care), so the seeds stay small.
"""
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def save(target, name, mode, text):
    body = text.encode()
    if mode == 2:
        body = gzip.compress(body, mtime=0)
    path = os.path.join(CORPUS, target, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(bytes([mode]) + body)


def cut(doc, colliders, queries):
    q = doc["queries"][:queries]
    ids = {x["id"] for x in q}
    return {
        "format": doc["format"],
        "scenario": doc["scenario"],
        "colliders": doc["colliders"][:colliders],
        "queries": q,
        "expected": [e for e in doc["expected"] if e["id"] in ids],
    }


def main():
    cases = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "shared", "cases")
    picks = ["mixed.json", "grazing.json", "start_inside.json", "layers.json", "far_from_origin.json"]
    for i, name in enumerate(picks):
        path = os.path.join(cases, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            doc = json.load(f)
        small = cut(doc, 6, 6)
        text = json.dumps(small, separators=(",", ":"))
        stem = name[: -len(".json")]
        save("case_file", "seed-" + stem, i % 3, text)
        # A case file is a valid scene.
        save("scene_file", "seed-case-" + stem, (i + 1) % 3, text)
    scene = {
        "colliders": [
            {"id": 1, "shape": {"sphere": {"radius": 1.5}}},
            {"id": 2, "layer": 3, "shape": {"box": {"half_extents": [1, 2, 0.5]}},
             "position": [4, 0, -1], "rotation": [0, 0, 0.7071067811865476, 0.7071067811865476],
             "user_data": 7},
            {"id": 3, "shape": {"capsule": {"radius": 0.5, "half_height": 1.25}}, "position": [0, 5, 0]},
            {"id": 4, "shape": {"cylinder": {"radius": 2, "half_height": 0}}, "position": [-3, 0, 2]},
        ]
    }
    save("scene_file", "seed-scene", 0, json.dumps(scene))
    save("scene_file", "seed-scene-gz", 2, json.dumps(scene))
    bad = {"colliders": [{"id": 1, "shape": {"sphere": {"radius": 1e308}}},
                         {"id": 2, "shape": {"box": {"half_extents": [5e-324, 1, 1]}},
                          "rotation": [0, 0, 0, 2]},
                         {"id": 1, "shape": {"cone": {}}}]}
    save("scene_file", "seed-scene-bad", 1, json.dumps(bad))


if __name__ == "__main__":
    main()
