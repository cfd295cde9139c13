"""Batches of rays, sweeps and moves built from numpy arrays, answered as numpy arrays.

A batch is one entry of a query list (Client.query, TickStream.tick) that
stands for N queries of one kind. Its wire bytes are written straight from the
arrays: every query of a batch has the same byte layout (doubles as fixed64,
per-query integers as 10-byte varints, which every protobuf parser reads), so
encoding is a few numpy column copies instead of N protobuf messages. Its
answer is a CastHits or MoveHits of arrays, one row per query.

Batches answer the closest hit only (all_hits: use RayQuery / CastQuery).
"""
from __future__ import annotations

import functools
import struct
from typing import Optional

import numpy as np

from hitbox import types as t
from hitbox._proto.hitbox.v1 import geometry_pb2 as gpb


# --- Protobuf wire format helpers -------------------------------------------


def varint(n: int) -> bytes:
    """The canonical varint of a non-negative int."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@functools.lru_cache(maxsize=None)
def key(field: int, wire_type: int) -> bytes:
    """The key (tag) of a field: its number and wire type as a varint."""
    return varint((field << 3) | wire_type)


_F64, _LEN, _VARINT = 1, 2, 0
_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)


class _Record:
    """A fixed-width record layout: constant bytes and per-row columns.

    Columns: ("f", float64[N, K]) K doubles, each after its own one-byte key
    (a Vec3's or Quat's fields 1..K); ("d", float64[N]) one bare double;
    ("v", uint64[N, K]) K 10-byte varints. Rendering copies a template row
    holding every constant byte, then writes each column with one numpy copy.
    """

    def __init__(self):
        self.pieces = []  # (kind, data, width)
        self.width = 0

    def const(self, b: bytes):
        self.width += len(b)
        if self.pieces and self.pieces[-1][0] == "b":
            b = self.pieces.pop()[1] + b
        self.pieces.append(("b", b, len(b)))

    def _column(self, kind: str, data: np.ndarray, width: int):
        self.pieces.append((kind, data, width))
        self.width += width

    def varints(self, columns: np.ndarray):
        """K uint64 values per row, each as a 10-byte varint (columns: uint64[N, K])."""
        self._column("v", columns, 10 * columns.shape[1])

    def message(self, field: int, inner: "_Record"):
        self.const(key(field, _LEN) + varint(inner.width))
        for piece in inner.pieces:
            if piece[0] == "b":
                self.const(piece[1])
            else:
                self._column(*piece)

    def double(self, field: int, value):
        if isinstance(value, np.ndarray):
            self.const(key(field, _F64))
            self._column("d", value, 8)
        else:
            self.const(key(field, _F64) + struct.pack("<d", value))

    def uint(self, field: int, value):
        if isinstance(value, np.ndarray):
            self.const(key(field, _VARINT))
            self.varints(value.reshape(-1, 1))
        else:
            self.const(key(field, _VARINT) + varint(value))

    def doubles(self, field: int, value, k: int = 3):
        """A Vec3 (k = 3) or Quat (k = 4) message: an (N, k) array or k constant numbers."""
        self.const(key(field, _LEN) + varint(9 * k))
        if isinstance(value, np.ndarray):
            self._column("f", value, 9 * k)
        else:
            self.const(b"".join(key(i + 1, _F64) + struct.pack("<d", float(value[i]))
                                for i in range(k)))

    def render(self, n: int) -> np.ndarray:
        """The N records as a uint8[N, width] array."""
        template = bytearray()
        for kind, data, width in self.pieces:
            if kind == "b":
                template += data
            elif kind == "f":
                for i in range(data.shape[1]):
                    template += key(i + 1, _F64) + bytes(8)
            else:
                template += bytes(width)
        out = np.empty((n, self.width), dtype=np.uint8)
        out[:] = np.frombuffer(bytes(template), dtype=np.uint8)
        off = 0
        for kind, data, width in self.pieces:
            if kind == "f":
                k = data.shape[1]
                cells = out[:, off:off + width].reshape(n, k, 9)
                cells[:, :, 1:] = np.ascontiguousarray(data, dtype="<f8").view(np.uint8).reshape(n, k, 8)
            elif kind == "d":
                out[:, off:off + 8] = np.ascontiguousarray(data, dtype="<f8").view(np.uint8).reshape(n, 8)
            elif kind == "v":
                k = data.shape[1]
                b = ((data[:, :, None] >> _SHIFTS) & np.uint64(0x7F)).astype(np.uint8)
                b[:, :, :9] |= 0x80  # continuation bits; the 10th byte holds bit 63
                out[:, off:off + width] = b.reshape(n, width)
            off += width
        return out


# --- Argument checks -----------------------------------------------------------


def _rows(a, cols: int, what: str, n: Optional[int] = None) -> np.ndarray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != cols or (n is not None and arr.shape[0] != n):
        want = f"({n if n is not None else 'N'}, {cols})"
        raise ValueError(f"{what}: expected an {want} array of numbers, got shape {arr.shape}")
    return arr


def _row_or_const(a, cols: int, what: str, n: int):
    """An (N, cols) array, or `cols` numbers shared by every row (returned as a tuple)."""
    if a is None:
        return None
    arr = np.asarray(a, dtype=np.float64)
    if arr.shape == (cols,):
        return tuple(arr.tolist())
    return _rows(arr, cols, what, n)


def _ids(a, what: str, n: int, allow_2d: bool = False) -> Optional[np.ndarray]:
    """uint64[N] (or [N, K]) ids; refuses floats (ids above 2^53 would be rounded) and negatives."""
    if a is None:
        return None
    if not isinstance(a, np.ndarray):
        # Python ints go through object arrays: np.asarray([1, 2**64 - 1]) would make
        # float64 and round the big id.
        obj = np.array(a, dtype=object)
        flat = obj.ravel()
        for k, x in enumerate(flat):
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
                raise TypeError(f"{what}: expected integer ids, got {type(x).__name__} {x!r} "
                                f"(floats lose ids above 2^53)")
            if not 0 <= int(x) < 1 << 64:
                raise ValueError(f"{what}: id {int(x)} is outside [0, 2^64)")
        a = np.array([int(x) for x in flat], dtype=np.uint64).reshape(obj.shape)
    arr = a
    if arr.size and arr.dtype.kind not in "ui":
        raise TypeError(f"{what}: expected integer ids, got {arr.dtype} (floats lose ids above 2^53)")
    if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
        raise ValueError(f"{what}: ids must not be negative")
    arr = arr.astype(np.uint64)
    if arr.ndim == 1 and arr.shape[0] == n:
        return arr.reshape(n, 1) if allow_2d else arr
    if allow_2d and arr.ndim == 2 and arr.shape[0] == n:
        return arr
    raise ValueError(f"{what}: expected {'(N,) or (N, K)' if allow_2d else '(N,)'} ids with "
                     f"N = {n}, got shape {arr.shape}")


def _scalar_or_rows(a, what: str, n: int, integer: bool):
    if a is None or np.isscalar(a):
        if integer and a is not None:
            return t.uint32(a, what)
        return None if a is None else float(a)
    arr = np.asarray(a)
    if arr.shape != (n,):
        raise ValueError(f"{what}: expected a number or an (N,) array with N = {n}, got shape {arr.shape}")
    if integer:
        if arr.size and (arr.dtype.kind not in "ui" or arr.min() < 0 or arr.max() > 0xFFFFFFFF):
            raise ValueError(f"{what}: expected integers in [0, 2^32)")
        return arr.astype(np.uint64)
    return arr.astype(np.float64)


def _filter(rec: _Record, field: int, mask, ignore_ids, max_hits: int):
    if mask is None and ignore_ids is None and not max_hits:
        return
    f = _Record()
    if mask is not None:
        f.uint(1, mask)
    if ignore_ids is not None and ignore_ids.shape[1]:
        f.const(key(2, _LEN) + varint(10 * ignore_ids.shape[1]))  # packed repeated uint64
        f.varints(ignore_ids)
    if max_hits:
        f.uint(3, max_hits)
    rec.message(field, f)


def _shape_bytes(shape, what: str) -> bytes:
    from hitbox import _wire
    m = gpb.Shape()
    _wire.set_shape(m, shape, what)
    return m.SerializeToString()


class _Batch:
    """What every batch has: N, per-query tags and at_tick, and the encoded records."""

    n: int
    _record: _Record

    def __len__(self) -> int:
        return self.n

    def _common(self, rec: _Record, tags, at_tick, from_colliders):
        if tags is not None:
            rec.uint(4, tags)
        if at_tick is not None:
            rec.double(20, at_tick)
        if from_colliders is not None:
            rec.uint(26, from_colliders)

    def encode(self, field: int, at_tick=None) -> bytes:
        """The batch as N entries of repeated Query field `field` (at_tick: the Rewind default)."""
        rec = self._record
        if at_tick is not None and self._at_tick is None:
            rec = _Record()
            rec.pieces, rec.width = list(self._record.pieces), self._record.width
            rec.double(20, float(at_tick))
        outer = _Record()
        outer.message(field, rec)
        return outer.render(self.n).tobytes() if self.n else b""


class RayBatch(_Batch):
    """N rays: origins[i] -> origins[i] + translations[i] (world, metres), closest hit each.

    mask: layer bits, one for all or an (N,) array; ignore_ids: (N,) or (N, K)
    ids each ray never reports (e.g. the shooter's own collider); tags: (N,)
    uint64 echoed; at_tick: a past tick (lag compensation), one or (N,).
    """

    def __init__(self, origins, translations, *, mask=None, ignore_ids=None, max_hits: int = 0,
                 tags=None, at_tick=None):
        o = _rows(origins, 3, "RayBatch.origins")
        self.n = n = o.shape[0]
        d = _rows(translations, 3, "RayBatch.translations", n)
        mask = _scalar_or_rows(mask, "RayBatch.mask", n, True)
        ignore = _ids(ignore_ids, "RayBatch.ignore_ids", n, allow_2d=True)
        tags = _ids(tags, "RayBatch.tags", n)
        self._at_tick = at_tick = _scalar_or_rows(at_tick, "RayBatch.at_tick", n, False)
        ray = _Record()
        ray.doubles(1, o)
        ray.doubles(2, d)
        _filter(ray, 3, mask, ignore, t.uint32(max_hits, "RayBatch.max_hits"))
        rec = _Record()
        rec.message(3, ray)  # Query.raycast
        self._common(rec, tags, at_tick, None)
        self._record = rec
        self.translations = d


class SweepBatch(_Batch):
    """N sweeps of one convex `shape` from positions[i] by translations[i] (no rotation), closest hit each.

    rotations: 4 numbers (x, y, z, w) for all or an (N, 4) array; from_colliders:
    (N,) collider ids whose shape and pose are swept instead (shape and
    positions then None); contact_offset: skin in metres; the rest as RayBatch.
    """

    def __init__(self, shape, positions, translations, *, rotations=None, mask=None,
                 ignore_ids=None, max_hits: int = 0, contact_offset: float = 0.0, tags=None,
                 at_tick=None, from_colliders=None):
        d = _rows(translations, 3, "SweepBatch.translations")
        self.n = n = d.shape[0]
        from_ids = _ids(from_colliders, "SweepBatch.from_colliders", n)
        mask = _scalar_or_rows(mask, "SweepBatch.mask", n, True)
        ignore = _ids(ignore_ids, "SweepBatch.ignore_ids", n, allow_2d=True)
        tags = _ids(tags, "SweepBatch.tags", n)
        self._at_tick = at_tick = _scalar_or_rows(at_tick, "SweepBatch.at_tick", n, False)
        cast = _Record()
        if from_ids is None:
            if shape is None or positions is None:
                raise ValueError("SweepBatch: shape and positions are required without from_colliders")
            cast.const(key(1, _LEN) + varint(len(sb := _shape_bytes(shape, "SweepBatch.shape"))) + sb)
            pose = _Record()
            pose.doubles(1, _rows(positions, 3, "SweepBatch.positions", n))
            rot = _row_or_const(rotations, 4, "SweepBatch.rotations", n)
            if rot is not None:
                pose.doubles(2, rot, 4)
            cast.message(2, pose)
        elif shape is not None or positions is not None or rotations is not None:
            raise ValueError("SweepBatch: with from_colliders, leave shape, positions and rotations out")
        cast.doubles(3, d)
        _filter(cast, 4, mask, ignore, t.uint32(max_hits, "SweepBatch.max_hits"))
        if contact_offset:
            cast.double(6, float(contact_offset))
        rec = _Record()
        rec.message(2, cast)  # Query.cast
        self._common(rec, tags, at_tick, from_ids)
        self._record = rec
        self.translations = d


class MoveBatch(_Batch):
    """N character moves of one convex `shape` from positions[i] by displacements[i].

    apply_to_ids: (N,) colliders the server moves to each final pose (then the
    call is never retried); settings: one MoveSettings for all; from_colliders
    as SweepBatch; the rest as RayBatch.
    """

    def __init__(self, shape, positions, displacements, *, apply_to_ids=None, settings=None,
                 mask=None, ignore_ids=None, tags=None, at_tick=None, from_colliders=None):
        d = _rows(displacements, 3, "MoveBatch.displacements")
        self.n = n = d.shape[0]
        from_ids = _ids(from_colliders, "MoveBatch.from_colliders", n)
        apply_ids = _ids(apply_to_ids, "MoveBatch.apply_to_ids", n)
        mask = _scalar_or_rows(mask, "MoveBatch.mask", n, True)
        ignore = _ids(ignore_ids, "MoveBatch.ignore_ids", n, allow_2d=True)
        tags = _ids(tags, "MoveBatch.tags", n)
        self._at_tick = at_tick = _scalar_or_rows(at_tick, "MoveBatch.at_tick", n, False)
        move = _Record()
        if from_ids is None:
            if shape is None or positions is None:
                raise ValueError("MoveBatch: shape and positions are required without from_colliders")
            move.const(key(1, _LEN) + varint(len(sb := _shape_bytes(shape, "MoveBatch.shape"))) + sb)
            pose = _Record()
            pose.doubles(1, _rows(positions, 3, "MoveBatch.positions", n))
            move.message(2, pose)
        elif shape is not None or positions is not None:
            raise ValueError("MoveBatch: with from_colliders, leave shape and positions out")
        move.doubles(3, d)
        _filter(move, 4, mask, ignore, 0)
        if settings is not None:
            from hitbox import _wire
            from hitbox._proto.hitbox.v1 import collision_pb2 as cpb
            m = cpb.Query()
            _wire.set_query(m, t.MoveQuery(shape=t.Sphere(1), settings=settings), "MoveBatch")
            sb = m.move.settings.SerializeToString()
            move.const(key(5, _LEN) + varint(len(sb)) + sb)
        if apply_ids is not None:
            move.uint(6, apply_ids)
        rec = _Record()
        rec.message(30, move)  # Query.move
        self._common(rec, tags, at_tick, from_ids)
        self._record = rec
        self.applies = apply_ids is not None


# --- Answers ----------------------------------------------------------------------


def _vecs(msgs, n: int) -> np.ndarray:
    """float64[n, 3] of Vec3 messages (None: zeros), built from one list of tuples."""
    zero = (0.0, 0.0, 0.0)
    return np.array([zero if v is None else (v.x, v.y, v.z) for v in msgs],
                    dtype=np.float64).reshape(n, 3)


class _Columns:
    """Arrays decoded from the answers' messages when first read, then kept."""

    _COLUMNS: dict = {}

    def __init__(self, results):
        self._results = results
        self._n = len(results)

    def __getattr__(self, name):
        decode = type(self)._COLUMNS.get(name)
        if decode is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        value = decode(self)
        setattr(self, name, value)
        return value

    def __len__(self) -> int:
        return self._n


def _scalar(name: str, dtype, missing=0):
    def decode(self):
        return np.fromiter((missing if h is None else getattr(h, name) for h in self._first),
                           dtype=dtype, count=self._n)
    return decode


class CastHits(_Columns):
    """Closest hits of a RayBatch or SweepBatch, row i answering query i.

    hit: bool[N] (False: nothing within the translation; the other arrays then
    hold 0, fraction NaN); id, user_data: uint64[N]; fraction: float64[N] in
    [0, 1]; normal, point: float64[N, 3]; started_overlapping: bool[N];
    depth: float64[N]; sub_shape: uint32[N]; tag: uint64[N]. Each array is
    decoded from the answer when first read.
    """

    @property
    def _first(self):
        first = self.__dict__.get("_first_hits")
        if first is None:
            first = self.__dict__["_first_hits"] = [h[0] if h else None
                                                    for h in (r.hits for r in self._results)]
        return first

    _COLUMNS = {
        "hit": lambda self: np.fromiter((h is not None for h in self._first), dtype=bool,
                                        count=self._n),
        "id": _scalar("id", np.uint64),
        "user_data": _scalar("user_data", np.uint64),
        "fraction": _scalar("fraction", np.float64, np.nan),
        "normal": lambda self: _vecs((None if h is None else h.normal for h in self._first), self._n),
        "point": lambda self: _vecs((None if h is None else h.point for h in self._first), self._n),
        "started_overlapping": _scalar("started_overlapping", bool, False),
        "depth": _scalar("depth", np.float64),
        "sub_shape": _scalar("sub_shape", np.uint32),
        "tag": lambda self: np.fromiter((r.tag for r in self._results), dtype=np.uint64, count=self._n),
    }

    @classmethod
    def from_wire(cls, raw: bytes, data: np.ndarray, starts, ends) -> "CastHits":
        """CastHits of the QueryResult bytes raw[starts[i]:ends[i]] (data: raw padded, as uint8).

        The first array read decodes them all with numpy (hitbox._answers);
        bytes that reader does not expect are parsed by protobuf instead.
        """
        self = cls([])
        self._n = len(starts)
        self.__dict__["_wire"] = (raw, data, starts, ends)
        return self

    def __getattr__(self, name):
        wire = self.__dict__.pop("_wire", None)
        if wire is not None and name in CastHits._COLUMNS:
            from hitbox import _answers
            from hitbox._proto.hitbox.v1 import collision_pb2 as cpb
            raw, data, starts, ends = wire
            columns = _answers.cast_columns(data, starts, ends)
            if columns is not None:
                self.__dict__.update(columns)
            else:
                self._results = [cpb.QueryResult.FromString(raw[a:b]) for a, b in zip(starts, ends)]
            return getattr(self, name)
        return super().__getattr__(name)

    def __repr__(self) -> str:
        return f"CastHits({int(self.hit.sum())} hits of {len(self)})"


class MoveHits(_Columns):
    """Answers of a MoveBatch, row i answering move i.

    position, displacement: float64[N, 3] (world, metres); on_ground, stepped,
    blocked: bool[N]; ground_id: uint64[N]; ground_normal: float64[N, 3] (zero
    when not on ground); contact_count: int64[N]; tag: uint64[N]; contacts(i):
    move i's contacts. Each array is decoded from the answer when first read.
    """

    @property
    def _first(self):
        moves = self.__dict__.get("_moves")
        if moves is None:
            moves = self.__dict__["_moves"] = [r.move for r in self._results]
        return moves

    _COLUMNS = {
        "position": lambda self: _vecs((m.position for m in self._first), self._n),
        "displacement": lambda self: _vecs((m.displacement for m in self._first), self._n),
        "on_ground": _scalar("on_ground", bool),
        "ground_id": _scalar("ground_id", np.uint64),
        "ground_normal": lambda self: _vecs((m.ground_normal for m in self._first), self._n),
        "stepped": _scalar("stepped", bool),
        "blocked": _scalar("blocked", bool),
        "contact_count": lambda self: np.fromiter((len(m.contacts) for m in self._first),
                                                  dtype=np.int64, count=self._n),
        "tag": lambda self: np.fromiter((r.tag for r in self._results), dtype=np.uint64, count=self._n),
    }

    def contacts(self, i: int) -> list:
        """The surfaces move i touched, in order (MoveContact)."""
        from hitbox import _wire
        return _wire.move_from(self._results[i].move).contacts

    def __repr__(self) -> str:
        return f"MoveHits({len(self)} moves, {int(self.on_ground.sum())} on ground)"
