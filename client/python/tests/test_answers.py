"""The numpy reader of batch answers (hitbox._answers) against protobuf's, on made-up responses."""
import numpy as np

import hitbox
from hitbox import client as hc
from hitbox._proto.hitbox.v1 import hitbox_pb2 as pb

COLUMNS = ("hit", "id", "user_data", "fraction", "normal", "point", "started_overlapping", "depth",
           "sub_shape", "tag")


def response(rng, n):
    """A QueryResponse of n closest-hit answers: misses, zero fields left out, huge ids, tags."""
    resp = pb.QueryResponse(revision=(1 << 64) - 2)
    for i in range(n):
        r = resp.results.add()
        if rng.random() < 0.5:
            r.tag = int(rng.integers(0, 1 << 63)) * 2 + 1
        if rng.random() < 0.2:
            continue  # no hit
        h = r.hits.add()
        h.id = [0, 1, 300, (1 << 64) - 1][i % 4]
        h.user_data = int(rng.integers(0, 1 << 40)) if rng.random() < 0.5 else 0
        h.fraction = float(rng.random()) if rng.random() < 0.8 else 0.0
        h.normal.x, h.normal.y, h.normal.z = [float(v) if rng.random() < 0.6 else 0.0 for v in rng.normal(size=3)]
        if rng.random() < 0.9:
            h.point.x, h.point.y, h.point.z = rng.normal(size=3) * 1e6
        h.started_overlapping = bool(rng.random() < 0.3)
        h.depth = float(rng.random()) if h.started_overlapping else 0.0
        h.sub_shape = int(rng.integers(0, 1 << 20)) if rng.random() < 0.3 else 0
    return resp


def same(a, b):
    for c in COLUMNS:
        x, y = getattr(a, c), getattr(b, c)
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), c


# Every column equals protobuf's decoding, bit for bit, ids above 2^63 included.
def test_numpy_reader_matches_protobuf():
    rng = np.random.default_rng(3)
    resp = response(rng, 500)
    batch = hitbox.RayBatch(np.zeros((500, 3)), np.ones((500, 3)))
    header, answers = hc._read_answer(resp.SerializeToString(), pb.QueryResponse, 2, [(batch, 500)])
    assert header == {1: (1 << 64) - 2}
    assert "_wire" in vars(answers[0])  # nothing decoded before a column is read
    same(answers[0], hitbox.CastHits(resp.results))
    assert answers[0]._results == []  # read by numpy, not by protobuf


# Bytes the reader does not expect (an unknown field in one answer) fall back to protobuf.
def test_unexpected_bytes_fall_back_to_protobuf():
    rng = np.random.default_rng(4)
    resp = response(rng, 200)
    raw = bytearray()
    for i, r in enumerate(resp.results):
        body = r.SerializeToString() + (b"\x98\x06\x01" if i == 7 else b"")  # field 99 = 1
        raw += b"\x12" + hitbox.batch.varint(len(body)) + body
    batch = hitbox.RayBatch(np.zeros((200, 3)), np.ones((200, 3)))
    _, answers = hc._read_answer(bytes(raw), pb.QueryResponse, 2, [(batch, 200)])
    same(answers[0], hitbox.CastHits(resp.results))
    assert len(answers[0]._results) == 200  # read by protobuf
