"""Decoding of QueryResponse and TickResponse bytes with batch answers read by numpy.

The response's top-level fields are split in one Python pass; each batch's
closest-hit answers (QueryResult{tag, hits[CastHit]}) are then read for all
rows at once: one cursor per row steps through the fields in field-number
order, which is how protobuf serializes them, each step a few numpy gathers.
Single queries and moves are parsed by protobuf. Anything this reader does
not expect (another field order, unknown fields) makes it return None, and
the caller parses the whole response with protobuf instead.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

_SEVEN = np.arange(0, 70, 7, dtype=np.uint64)
_TEN = np.arange(10)
_EIGHT = np.arange(8)


class _Bad(Exception):
    """The bytes are not laid out as this reader expects."""


def split(buf: bytes, results_field: int):
    """(varint header fields {number: value}, results' (start, end) spans, other LEN fields)."""
    header, starts, ends, other = {}, [], [], {}
    i, n = 0, len(buf)
    while i < n:
        k = buf[i]
        i += 1
        if k >= 0x80:
            raise _Bad
        number, wire = k >> 3, k & 7
        v = buf[i]
        i += 1
        if v >= 0x80:
            shift, v = 7, v & 0x7F
            while True:
                b = buf[i]
                i += 1
                v |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
        if wire == 0:
            header[number] = v
        elif wire == 2:
            if number == results_field:
                starts.append(i)
                ends.append(i + v)
            else:
                other[number] = (i, i + v)
            i += v
        else:
            raise _Bad
    if i != n:
        raise _Bad
    return header, starts, ends, other


class _Rows:
    """A cursor per row over a padded copy of the response bytes."""

    def __init__(self, data: np.ndarray, starts, ends):
        self.data = data
        self.pos = np.asarray(starts, dtype=np.int64)
        self.end = np.asarray(ends, dtype=np.int64)

    def at(self, pos, end, key: int, present=None):
        """Rows whose next field (pos < end) has this one-byte key; the data's padding keeps data[end] in range."""
        mask = (self.data[pos] == key) & (pos < end)
        return mask if present is None else mask & present

    def varint(self, pos, end, key: int, present=None):
        """uint64 values of an optional varint field (0 where absent); advances `pos` in place."""
        mask = self.at(pos, end, key, present)
        out = np.zeros(len(pos), dtype=np.uint64)
        if mask.any():
            p = pos[mask] + 1
            b = self.data[p[:, None] + _TEN]
            length = np.argmax(b < 0x80, axis=1) + 1
            if not (b < 0x80).any(axis=1).all():
                raise _Bad
            vals = (b & 0x7F).astype(np.uint64) << _SEVEN
            vals[_TEN[None, :] >= length[:, None]] = 0
            out[mask] = np.bitwise_or.reduce(vals, axis=1)
            pos[mask] = p + length
        return out

    def double(self, pos, end, key: int, present=None, missing=0.0):
        mask = self.at(pos, end, key, present)
        out = np.full(len(pos), missing, dtype=np.float64)
        if mask.any():
            p = pos[mask] + 1
            out[mask] = np.ascontiguousarray(self.data[p[:, None] + _EIGHT]).view("<f8").ravel()
            pos[mask] = p + 8
        return out

    def message(self, pos, end, key: int, present=None):
        """(mask, inner start, inner end) of an optional short (< 128 bytes) message field."""
        mask = self.at(pos, end, key, present)
        length = np.where(mask, self.data[np.minimum(pos + 1, len(self.data) - 1)], 0).astype(np.int64)
        if (length >= 0x80).any():
            raise _Bad
        start = pos + 2
        return mask, start, start + length

    def vec3(self, pos, end, key: int, present=None):
        mask, start, stop = self.message(pos, end, key, present)
        inner = start.copy()
        out = np.stack([self.double(inner, stop, 0x09 + 8 * k, mask) for k in range(3)], axis=1)
        if (inner[mask] != stop[mask]).any():
            raise _Bad
        pos[mask] = stop[mask]
        return out


def cast_columns(data: np.ndarray, starts, ends) -> Optional[dict]:
    """CastHits' arrays from the QueryResult bytes of a batch's rows, or None when unexpected."""
    try:
        r = _Rows(data, starts, ends)
        pos, end = r.pos.copy(), r.end
        tag = r.varint(pos, end, 0x08)
        hit, h0, h1 = _hit_span(r, pos, end)
        cur = h0.copy()
        cols = {
            "tag": tag,
            "hit": hit,
            "id": r.varint(cur, h1, 0x08, hit),
            "user_data": r.varint(cur, h1, 0x10, hit),
            "fraction": r.double(cur, h1, 0x19, hit),
            "normal": r.vec3(cur, h1, 0x22, hit),
            "point": r.vec3(cur, h1, 0x2A, hit),
            "started_overlapping": r.varint(cur, h1, 0x30, hit).astype(bool),
            "depth": r.double(cur, h1, 0x39, hit),
            "sub_shape": r.varint(cur, h1, 0x40, hit).astype(np.uint32),
        }
        if (cur[hit] != h1[hit]).any():
            raise _Bad
        r.varint(pos, end, 0x20)  # truncated: never set for closest hits
        if (pos != end).any():
            raise _Bad
        cols["fraction"][~hit] = np.nan
        return cols
    except (_Bad, IndexError):
        return None


def _hit_span(r: _Rows, pos, end):
    """(has a hit, its start, its end) of QueryResult.hits (field 3), lengths up to 2^14."""
    mask = r.at(pos, end, 0x1A)
    safe = np.minimum(pos + 2, len(r.data) - 1)
    b1 = np.where(mask, r.data[np.minimum(pos + 1, len(r.data) - 1)], 0).astype(np.int64)
    b2 = np.where(mask & (b1 >= 0x80), r.data[safe], 0).astype(np.int64)
    if (b2 >= 0x80).any():
        raise _Bad
    length = np.where(b1 >= 0x80, (b1 & 0x7F) | (b2 << 7), b1)
    start = pos + np.where(b1 >= 0x80, 3, 2)
    stop = start + length
    pos[mask] = stop[mask]
    return mask, np.where(mask, start, pos), np.where(mask, stop, pos)
