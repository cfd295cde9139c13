"""hitbox.Client: the Python client of the Hitbox collision service (hitbox.v1.Hitbox).

Mirrors the C++ client (docs/client.md): sessions, changes, queries, moves,
rewind, maps and health on a Client; tick streams on a TickStream whose
tick(changes, queries) returns the tick's answer. Every failure raises a
hitbox.errors.HitboxError subclass with the server's message, which names the
field that was wrong.

Deadlines: every call has one (ClientOptions.timeout, or `timeout=` per
call), covering retries and backoff.

Retries: UNAVAILABLE is retried with exponential backoff and jitter
(RetryPolicy) for idempotent calls only: get_session, list_sessions,
get_colliders, list_colliders, query (unless a move applies to a collider),
list_maps, get_map, check_health, and create_session with an explicit id.
create_session without an id, delete_session, apply_changes and tick streams
are never retried.

Tokens: the Client remembers the token of every session it created and sends
it (`authorization: Bearer <token>`) on that session's calls and tick streams;
set_session_token gives it one made elsewhere; ClientOptions.token (e.g. the
admin token) is sent on every other call.

Thread safety: a Client may be used from any number of threads; a TickStream
runs one tick at a time (concurrent tick() calls wait for each other).
"""
from __future__ import annotations

import queue
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import grpc

import numpy as np

from hitbox import _answers, _wire
from hitbox import types as t
from hitbox.batch import CastHits, MoveBatch, MoveHits, RayBatch, SweepBatch
from hitbox.errors import HitboxError, InvalidArgument, error_for, from_rpc_error
from hitbox._proto.grpc.health.v1 import health_pb2
from hitbox._proto.hitbox.v1 import collision_pb2 as cpb
from hitbox._proto.hitbox.v1 import hitbox_pb2 as pb

_SERVICE = "/hitbox.v1.Hitbox/"
_QUERY_FIELD = 2  # QueryRequest.queries
_TICK_QUERY_FIELD = 4  # TickRequest.queries
# Ray and sweep batches of this many rows or more are read by numpy (hitbox._answers):
# about 4x faster than protobuf's field reads from 1,000 rows, equal near 200, slower at 64.
_NUMPY_ROWS = 128


@dataclass
class RetryPolicy:
    """How UNAVAILABLE is retried on idempotent calls.

    Attempt n (n >= 2) waits min(max_backoff, initial_backoff * multiplier^(n-2))
    seconds, scaled by a random factor in [1 - jitter, 1 + jitter], never past
    the call's deadline. max_attempts counts the first; 1 disables retries.
    """

    max_attempts: int = 5
    initial_backoff: float = 0.05
    max_backoff: float = 2.0
    multiplier: float = 2.0
    jitter: float = 0.2


@dataclass
class TlsOptions:
    """TLS of the channel: ca_file (PEM; None: the system's roots), cert_file + key_file
    for mutual TLS, server_name the server's certificate must carry instead of the host."""

    ca_file: Optional[str] = None
    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    server_name: Optional[str] = None


@dataclass
class ClientOptions:
    """Options of a Client, fixed at construction.

    timeout: seconds, the deadline of a call that sets none (retries included);
    token: sent on calls with no session token of their own (the admin token);
    tls: None for plaintext; max_message_bytes: largest message sent or
    received; wait_for_ready: calls wait (up to their deadline) for the channel
    to connect instead of failing fast with UNAVAILABLE; reconnect backoff of
    the channel in seconds; on_retry(method, failed_attempt, error, wait_s).
    """

    timeout: float = 5.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    token: str = ""
    tls: Optional[TlsOptions] = None
    max_message_bytes: int = 64 << 20
    wait_for_ready: bool = False
    min_reconnect_backoff: float = 0.1
    max_reconnect_backoff: float = 2.0
    jitter_seed: Optional[int] = None
    on_retry: Optional[object] = None


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{what}: cannot read {path!r}: {e.strerror}") from None


def make_channel(address: str, options: ClientOptions) -> grpc.Channel:
    """The channel Client(address) uses: message limits, reconnect backoff, TLS."""
    opts = [("grpc.max_receive_message_length", options.max_message_bytes),
            ("grpc.max_send_message_length", options.max_message_bytes),
            ("grpc.initial_reconnect_backoff_ms", max(1, int(options.min_reconnect_backoff * 1000))),
            ("grpc.min_reconnect_backoff_ms", max(1, int(options.min_reconnect_backoff * 1000))),
            ("grpc.max_reconnect_backoff_ms", max(1, int(options.max_reconnect_backoff * 1000)))]
    tls = options.tls
    if tls is None:
        return grpc.insecure_channel(address, options=opts)
    if (tls.cert_file is None) != (tls.key_file is None):
        raise ValueError("tls: cert_file and key_file go together (mutual TLS), or neither")
    creds = grpc.ssl_channel_credentials(
        root_certificates=_read(tls.ca_file, "tls.ca_file") if tls.ca_file else None,
        private_key=_read(tls.key_file, "tls.key_file") if tls.key_file else None,
        certificate_chain=_read(tls.cert_file, "tls.cert_file") if tls.cert_file else None)
    if tls.server_name:
        opts.append(("grpc.ssl_target_name_override", tls.server_name))
    return grpc.secure_channel(address, creds, options=opts)


def _identity(b: bytes) -> bytes:
    return b


def _encode_queries(queries, field: int, container, at_tick=None):
    """The wire bytes of `queries` as repeated field `field`, and the layout of their answers.

    Consecutive single queries are serialized by protobuf in one container
    message; batches write their own bytes. Returns (bytes, [(kind, count)]).
    """
    parts, layout = [], []
    pending = None
    if isinstance(queries, (RayBatch, SweepBatch, MoveBatch, t.OverlapQuery, t.CastQuery,
                            t.RayQuery, t.MoveQuery)):
        raise TypeError("queries: expected a list of queries and batches, got a single "
                        f"{type(queries).__name__} (wrap it in a list)")
    for i, q in enumerate(queries):
        if isinstance(q, (RayBatch, SweepBatch, MoveBatch)):
            if pending is not None:
                parts.append(pending.SerializeToString())
                pending = None
            parts.append(q.encode(field, at_tick))
            layout.append((q, len(q)))
        else:
            if pending is None:
                pending = container()
            _wire.set_query(pending.queries.add(), q, f"queries[{i}]", at_tick)
            layout.append((None, 1))
    if pending is not None:
        parts.append(pending.SerializeToString())
    return b"".join(parts), layout


def _decode_results(results, layout) -> list:
    """Answers from parsed QueryResult messages (the protobuf path)."""
    out, k = [], 0
    for kind, count in layout:
        if kind is None:
            out.append(_wire.result_from(results[k]))
        elif isinstance(kind, MoveBatch):
            out.append(MoveHits(results[k:k + count]))
        else:
            out.append(CastHits(results[k:k + count]))
        k += count
    return out


def _read_answer(raw: bytes, cls, results_field: int, layout):
    """(header {field number: value}, answers) of QueryResponse / TickResponse bytes, or (message, None).

    Batches of rays and sweeps are read by numpy (_answers), the rest by
    protobuf; a response with other fields (a tick's error) or a layout the
    reader does not expect comes back parsed whole as `cls`, answers None. So
    does one without a ray or sweep batch of _NUMPY_ROWS rows or more: below
    that, protobuf's field reads cost less than numpy's fixed ~150 calls.
    """
    if not any(isinstance(kind, (RayBatch, SweepBatch)) and count >= _NUMPY_ROWS
               for kind, count in layout):
        return cls.FromString(raw), None
    try:
        header, starts, ends, other = _answers.split(raw, results_field)
    except (_answers._Bad, IndexError):
        other = True
    if other or len(starts) != sum(count for _, count in layout):
        return cls.FromString(raw), None
    data = np.frombuffer(raw + bytes(16), dtype=np.uint8)
    parse = cpb.QueryResult.FromString
    out, k = [], 0
    for kind, count in layout:
        if kind is None:
            out.append(_wire.result_from(parse(raw[starts[k]:ends[k]])))
        elif isinstance(kind, MoveBatch):
            out.append(MoveHits([parse(raw[a:b]) for a, b in zip(starts[k:k + count], ends[k:k + count])]))
        elif count >= _NUMPY_ROWS:
            out.append(CastHits.from_wire(raw, data, starts[k:k + count], ends[k:k + count]))
        else:
            out.append(CastHits([parse(raw[a:b]) for a, b in zip(starts[k:k + count], ends[k:k + count])]))
        k += count
    return header, out


def _explain(err: HitboxError, layout) -> HitboxError:
    """Adds which batch row the server's "queries[k]" is, when k falls in a batch."""
    m = re.search(r"queries\[(\d+)\]", err.message)
    if not m or not any(kind is not None for kind, _ in layout):
        return err
    k, start = int(m.group(1)), 0
    for i, (kind, count) in enumerate(layout):
        if start <= k < start + count:
            where = (f"queries[{i}]" if kind is None
                     else f"row {k - start} of queries[{i}] ({type(kind).__name__})")
            return type(err)(f"{err.message} [the server's queries[{k}] is {where}]",
                             code=err.code, method=err.method)
        start += count
    return err


def _applies(queries) -> bool:
    return any((isinstance(q, t.MoveQuery) and q.apply_to_id is not None) or
               (isinstance(q, MoveBatch) and q.applies) for q in queries)


class Client:
    """Client of one Hitbox server: Client("127.0.0.1:50051") or Client(channel=...)."""

    def __init__(self, address: Optional[str] = None, options: Optional[ClientOptions] = None, *,
                 channel: Optional[grpc.Channel] = None):
        self.options = options or ClientOptions()
        if (address is None) == (channel is None):
            raise ValueError("Client: give an address or a channel (not both)")
        self.address = address or ""
        self._channel = channel if channel is not None else make_channel(address, self.options)
        self._owns_channel = channel is None
        self._tokens: dict = {}
        self._tokens_lock = threading.Lock()
        self._rng = random.Random(self.options.jitter_seed)
        self._rng_lock = threading.Lock()
        ch = self._channel

        def unary(name, req, resp):
            return ch.unary_unary(_SERVICE + name, request_serializer=req,
                                  response_deserializer=resp.FromString)

        ser = lambda m: m.SerializeToString()  # noqa: E731
        self._create = unary("CreateSession", ser, pb.SessionInfo)
        self._get = unary("GetSession", ser, pb.SessionInfo)
        self._list = unary("ListSessions", ser, pb.ListSessionsResponse)
        self._delete = unary("DeleteSession", ser, pb.DeleteSessionResponse)
        self._apply = unary("ApplyChanges", ser, pb.ApplyChangesResponse)
        self._get_colliders = unary("GetColliders", ser, pb.GetCollidersResponse)
        self._query = ch.unary_unary(_SERVICE + "Query", request_serializer=_identity,
                                     response_deserializer=_identity)
        self._list_maps = unary("ListMaps", ser, pb.ListMapsResponse)
        self._get_map = unary("GetMap", ser, pb.MapInfo)
        self._list_colliders = ch.unary_stream(_SERVICE + "ListColliders", request_serializer=ser,
                                               response_deserializer=pb.ListCollidersResponse.FromString)
        self._watch_events = ch.unary_stream(
            _SERVICE + "WatchEvents", request_serializer=ser,
            response_deserializer=pb.WatchEventsResponse.FromString)
        self._tick = ch.stream_stream(_SERVICE + "Tick", request_serializer=_identity,
                                      response_deserializer=_identity)
        self._health = ch.unary_unary("/grpc.health.v1.Health/Check", request_serializer=ser,
                                      response_deserializer=health_pb2.HealthCheckResponse.FromString)

    def close(self) -> None:
        """Closes the channel this Client made (an injected channel stays open)."""
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- Tokens, deadlines, retries ------------------------------------------

    def set_session_token(self, session_id: str, token: str) -> None:
        """Sends `token` on later calls on `session_id`; an empty token forgets it."""
        with self._tokens_lock:
            if token:
                self._tokens[session_id] = token
            else:
                self._tokens.pop(session_id, None)

    def session_token(self, session_id: str) -> str:
        """The token sent for `session_id` (its own, else ClientOptions.token)."""
        with self._tokens_lock:
            return self._tokens.get(session_id, self.options.token)

    def _metadata(self, session_id: str):
        token = self.session_token(session_id) if session_id else self.options.token
        return (("authorization", "Bearer " + token),) if token else None

    def _backoff(self, failed_attempt: int) -> float:
        p = self.options.retry
        wait = min(p.max_backoff, p.initial_backoff * max(1.0, p.multiplier) ** (failed_attempt - 1))
        with self._rng_lock:
            u = self._rng.uniform(-1.0, 1.0)
        return max(0.0, wait * (1.0 + min(max(p.jitter, 0.0), 1.0) * u))

    def _run(self, method: str, rpc, request, *, session_id: str = "", retryable: bool,
             timeout: Optional[float], wait_for_ready: Optional[bool] = None):
        timeout = self.options.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        ready = self.options.wait_for_ready if wait_for_ready is None else wait_for_ready
        metadata = self._metadata(session_id)
        attempts = max(1, self.options.retry.max_attempts)
        n = 1
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise error_for(grpc.StatusCode.DEADLINE_EXCEEDED,
                                f"the deadline passed before attempt {n} could be sent", method)
            try:
                return rpc(request, timeout=left, metadata=metadata, wait_for_ready=ready)
            except grpc.RpcError as e:
                err = from_rpc_error(e, method)
            if err.code != grpc.StatusCode.UNAVAILABLE or not retryable or n >= attempts:
                raise err
            wait = self._backoff(n)
            if time.monotonic() + wait >= deadline:
                raise err
            if self.options.on_retry is not None:
                self.options.on_retry(method, n, err, wait)
            time.sleep(wait)
            n += 1

    # --- Server ----------------------------------------------------------------

    def check_health(self, service: str = "", *, timeout: Optional[float] = None) -> str:
        """The server's health: "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN"."""
        r = self._run("Check", self._health, health_pb2.HealthCheckRequest(service=service),
                      retryable=True, timeout=timeout)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(r.status)

    # --- Sessions --------------------------------------------------------------

    def create_session(self, session_id: str = "", *, limits: Optional[t.SessionLimits] = None,
                       map_id: str = "", timeout: Optional[float] = None) -> t.SessionInfo:
        """Creates an empty session (no id: the server picks one) and remembers its token."""
        req = pb.CreateSessionRequest(session_id=session_id, map_id=map_id)
        if limits is not None:
            _wire.limits_to(req.limits, limits)
        info = _wire.session_from(self._run("CreateSession", self._create, req,
                                            retryable=bool(session_id), timeout=timeout))
        if info.token:
            self.set_session_token(info.session_id, info.token)
        return info

    def get_session(self, session_id: str, *, timeout: Optional[float] = None) -> t.SessionInfo:
        """Describes one session (NotFound when unknown)."""
        return _wire.session_from(self._run("GetSession", self._get,
                                            pb.GetSessionRequest(session_id=session_id),
                                            session_id=session_id, retryable=True, timeout=timeout))

    def list_sessions(self, *, timeout: Optional[float] = None) -> list:
        """Every session of the server, sorted by id (the admin token, once tokens are enforced)."""
        r = self._run("ListSessions", self._list, pb.ListSessionsRequest(), retryable=True,
                      timeout=timeout)
        return [_wire.session_from(s) for s in r.sessions]

    def delete_session(self, session_id: str, *, timeout: Optional[float] = None) -> None:
        """Deletes a session and its colliders (NotFound when unknown). Never retried."""
        self._run("DeleteSession", self._delete, pb.DeleteSessionRequest(session_id=session_id),
                  session_id=session_id, retryable=False, timeout=timeout)

    # --- Maps ------------------------------------------------------------------

    def list_maps(self, *, timeout: Optional[float] = None) -> list:
        """Every shared map of the server, sorted by id (empty: none)."""
        r = self._run("ListMaps", self._list_maps, pb.ListMapsRequest(), retryable=True,
                      timeout=timeout)
        return [_wire.map_from(m) for m in r.maps]

    def get_map(self, map_id: str, *, timeout: Optional[float] = None) -> t.MapInfo:
        """One map (NotFound when unknown)."""
        return _wire.map_from(self._run("GetMap", self._get_map, pb.GetMapRequest(map_id=map_id),
                                        retryable=True, timeout=timeout))

    # --- Colliders ---------------------------------------------------------------

    def apply_changes(self, session_id: str, changes: Sequence, *,
                      expected_revision: Optional[int] = None, tick: Optional[int] = None,
                      timeout: Optional[float] = None) -> t.ApplyResult:
        """Applies a batch of changes (Add, Replace, Move, Remove, AddWatch, RemoveWatch) atomically.

        expected_revision: apply only at that revision (else FailedPrecondition);
        tick: the game tick the changes belong to (lag compensation). Never retried.
        """
        req = pb.ApplyChangesRequest(session_id=session_id)
        for i, c in enumerate(changes):
            _wire.set_change(req.changes.add(), c, f"changes[{i}]")
        if expected_revision is not None:
            req.expected_revision = t.uint64(expected_revision, "expected_revision")
        if tick is not None:
            req.tick = t.uint64(tick, "tick")
        r = self._run("ApplyChanges", self._apply, req, session_id=session_id, retryable=False,
                      timeout=timeout)
        return t.ApplyResult(r.revision, r.collider_count, _wire.events_from(r.events),
                             r.events_truncated)

    def add_colliders(self, session_id: str, colliders: Iterable[t.Collider], **kw) -> t.ApplyResult:
        """Adds new colliders (one atomic batch)."""
        return self.apply_changes(session_id, [t.Add(c) for c in colliders], **kw)

    def move_collider(self, session_id: str, collider_id: int, pose: t.Pose, **kw) -> t.ApplyResult:
        """Sets the pose of one existing collider."""
        return self.apply_changes(session_id, [t.Move(collider_id, pose)], **kw)

    def remove_colliders(self, session_id: str, collider_ids: Iterable[int], **kw) -> t.ApplyResult:
        """Removes colliders by id (any unknown id: NotFound, nothing removed)."""
        return self.apply_changes(session_id, [t.Remove(i) for i in collider_ids], **kw)

    def get_colliders(self, session_id: str, collider_ids: Iterable[int], *,
                      timeout: Optional[float] = None) -> t.ColliderSnapshot:
        """Reads colliders by id, in the requested order (any unknown id: NotFound)."""
        req = pb.GetCollidersRequest(session_id=session_id)
        req.ids.extend(t.uint64(i, f"collider_ids[{k}]") for k, i in enumerate(collider_ids))
        r = self._run("GetColliders", self._get_colliders, req, session_id=session_id,
                      retryable=True, timeout=timeout)
        return t.ColliderSnapshot(r.revision, [_wire.collider_from(c) for c in r.colliders])

    def list_colliders(self, session_id: str, *, page_size: int = 0, include_map: bool = False,
                       timeout: Optional[float] = None) -> t.ColliderSnapshot:
        """The whole set sorted by id (all pages collected); include_map: the map's too."""
        req = pb.ListCollidersRequest(session_id=session_id, page_size=page_size,
                                      include_map=include_map)

        def collect(request, **kw):  # the whole stream is one attempt: idempotent
            revision, colliders = 0, []
            for page in self._list_colliders(request, **kw):
                revision = page.revision
                colliders.extend(_wire.collider_from(c) for c in page.colliders)
            return t.ColliderSnapshot(revision, colliders)

        return self._run("ListColliders", collect, req, session_id=session_id, retryable=True,
                         timeout=timeout)

    # --- Queries -----------------------------------------------------------------

    def query(self, session_id: str, queries: Sequence, *, timeout: Optional[float] = None,
              _at_tick: Optional[float] = None) -> t.QueryBatchResult:
        """Answers queries, in order, at one revision: results[i] answers queries[i].

        Each entry is an OverlapQuery, CastQuery, RayQuery or MoveQuery (answered
        by a QueryResult) or a RayBatch / SweepBatch (CastHits) or MoveBatch
        (MoveHits). Retried on UNAVAILABLE unless a move applies to a collider.
        """
        body, layout = _encode_queries(queries, _QUERY_FIELD, pb.QueryRequest, _at_tick)
        req = pb.QueryRequest(session_id=session_id).SerializeToString() + body
        try:
            raw = self._run("Query", self._query, req, session_id=session_id,
                            retryable=not _applies(queries), timeout=timeout)
        except HitboxError as e:
            raise _explain(e, layout) from None
        header, results = _read_answer(raw, pb.QueryResponse, 2, layout)
        if results is None:
            return t.QueryBatchResult(header.revision, _decode_results(header.results, layout))
        return t.QueryBatchResult(header.get(1, 0), results)

    def overlap(self, session_id: str, shape, pose: t.Pose = t.Pose(), *,
                filter: Optional[t.QueryFilter] = None, want_contact: bool = False,
                timeout: Optional[float] = None) -> list:
        """Colliders `shape` at `pose` overlaps (touching counts), sorted by id (OverlapHit)."""
        return self.query(session_id, [t.OverlapQuery(shape, pose, filter, want_contact)],
                          timeout=timeout).results[0].overlaps

    def sweep(self, session_id: str, shape, pose: t.Pose, translation, *,
              filter: Optional[t.QueryFilter] = None, contact_offset: float = 0.0,
              timeout: Optional[float] = None) -> Optional[t.CastHit]:
        """The first collider `shape` hits moving from `pose` by `translation`; None: nothing."""
        hits = self.query(session_id, [t.CastQuery(shape, pose, translation, filter, False,
                                                   contact_offset)], timeout=timeout).results[0].hits
        return hits[0] if hits else None

    def sweep_all(self, session_id: str, shape, pose: t.Pose, translation, *,
                  filter: Optional[t.QueryFilter] = None, timeout: Optional[float] = None) -> list:
        """Every collider hit along the sweep, sorted by (fraction, id)."""
        return self.query(session_id, [t.CastQuery(shape, pose, translation, filter, True)],
                          timeout=timeout).results[0].hits

    def raycast(self, session_id: str, origin, translation, *,
                filter: Optional[t.QueryFilter] = None,
                timeout: Optional[float] = None) -> Optional[t.CastHit]:
        """The first collider the ray origin -> origin + translation hits; None: nothing."""
        hits = self.query(session_id, [t.RayQuery(origin, translation, filter)],
                          timeout=timeout).results[0].hits
        return hits[0] if hits else None

    def move(self, session_id: str, query: t.MoveQuery, *,
             timeout: Optional[float] = None) -> t.MoveResult:
        """Character movement (collide-and-slide); with apply_to_id the server moves that collider too."""
        if not isinstance(query, t.MoveQuery):
            raise TypeError(f"query: expected a hitbox.MoveQuery, got {type(query).__name__}")
        return self.query(session_id, [query], timeout=timeout).results[0].move

    def rewind(self, tick: float) -> "Rewound":
        """The query calls against the world as it was at `tick` (within the session's history)."""
        return Rewound(self, float(tick))

    # --- Watches -------------------------------------------------------------------
    # Watches are added and removed as changes (AddWatch, RemoveWatch) in
    # apply_changes or a tick; their events come back in ApplyResult and TickResult.

    def watch_events(self, session_id: str, watch_ids: Iterable[int] = (), *,
                     timeout: Optional[float] = None) -> "WatchEventStream":
        """Opens a WatchEvents stream: the session's watch events as batches apply.

        Iterate it for WatchEventBatch values (one per applied batch with
        events for `watch_ids`; empty: every watch). It ends raising NotFound
        when the session goes, DeadlineExceeded after `timeout` (seconds, of
        the whole stream); cancel() or close() ends it quietly. Never retried.
        """
        ids = [t.uint64(i, f"watch_ids[{k}]") for k, i in enumerate(watch_ids)]
        req = pb.WatchEventsRequest(session_id=session_id, watch_ids=ids)
        return WatchEventStream(self._watch_events(req, timeout=timeout,
                                                   metadata=self._metadata(session_id),
                                                   wait_for_ready=self.options.wait_for_ready))

    # --- Tick stream ---------------------------------------------------------------

    def open_tick_stream(self, session_id: str, *, timeout: Optional[float] = None,
                         wait_for_ready: Optional[bool] = None) -> "TickStream":
        """Opens a Tick stream on `session_id` (timeout: of the whole stream; None: none)."""
        return TickStream(self, session_id, timeout,
                          self.options.wait_for_ready if wait_for_ready is None else wait_for_ready)


class Rewound:
    """Client queries at a past tick: client.rewind(1017.4).raycast(session, origin, translation).

    Queries that carry their own at_tick keep it.
    """

    def __init__(self, client: Client, tick: float):
        self._client, self.tick = client, tick

    def query(self, session_id: str, queries: Sequence, **kw) -> t.QueryBatchResult:
        return self._client.query(session_id, queries, _at_tick=self.tick, **kw)

    def overlap(self, session_id: str, shape, pose: t.Pose = t.Pose(), *, filter=None,
                want_contact: bool = False, **kw) -> list:
        return self.query(session_id, [t.OverlapQuery(shape, pose, filter, want_contact)],
                          **kw).results[0].overlaps

    def sweep(self, session_id: str, shape, pose: t.Pose, translation, *, filter=None,
              **kw) -> Optional[t.CastHit]:
        hits = self.query(session_id, [t.CastQuery(shape, pose, translation, filter)], **kw).results[0].hits
        return hits[0] if hits else None

    def raycast(self, session_id: str, origin, translation, *, filter=None, **kw) -> Optional[t.CastHit]:
        hits = self.query(session_id, [t.RayQuery(origin, translation, filter)], **kw).results[0].hits
        return hits[0] if hits else None


_END = object()


class WatchEventStream:
    """A WatchEvents stream (Client.watch_events): iterate for WatchEventBatch values.

    wait_registered() returns once the server has registered the stream: the
    events of every batch applied after that reach it. Use as a context
    manager, or call close().
    """

    def __init__(self, call):
        self._call = call
        self._closed = False

    def wait_registered(self) -> None:
        """Blocks until the server has registered the stream (its headers came)."""
        try:
            self._call.initial_metadata()
        except grpc.RpcError as e:
            raise from_rpc_error(e, "WatchEvents") from None

    def __iter__(self):
        return self

    def __next__(self) -> t.WatchEventBatch:
        try:
            m = next(self._call)
        except grpc.RpcError as e:
            if self._closed and e.code() == grpc.StatusCode.CANCELLED:
                raise StopIteration from None
            raise from_rpc_error(e, "WatchEvents") from None
        return t.WatchEventBatch(m.revision, _wire.events_from(m.events), m.events_truncated)

    def cancel(self) -> None:
        """Ends the stream; iterating then stops."""
        self._closed = True
        self._call.cancel()

    close = cancel

    def __enter__(self) -> "WatchEventStream":
        return self

    def __exit__(self, *exc) -> None:
        self.cancel()

    def __del__(self):
        if getattr(self, "_call", None) is not None and not self._closed:
            self._call.cancel()


class TickStream:
    """A bidirectional Tick stream bound to one session: tick(changes, queries) -> TickResult.

    Each tick sends its changes (applied atomically first) and queries and
    waits for its answer. A tick the server refuses raises its error (the
    TickResponse.error, e.g. InvalidArgument naming changes[2]) and the stream
    goes on. When the stream itself ends (server gone: Unavailable; session
    deleted: NotFound; deadline; cancel()), that tick and every later one
    raise the stream's status; it never reconnects: open a new stream. Use as
    a context manager, or call close().
    """

    def __init__(self, client: Client, session_id: str, timeout: Optional[float],
                 wait_for_ready: bool):
        self.session_id = session_id
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._next_tick = 1
        self._error: Optional[HitboxError] = None
        self._call = client._tick(iter(self._requests.get, _END), timeout=timeout,
                                  metadata=client._metadata(session_id),
                                  wait_for_ready=wait_for_ready)

    def tick(self, changes: Sequence = (), queries: Sequence = ()) -> t.TickResult:
        """Sends the next tick (numbered after the last; a new stream's from 1) and returns its answer."""
        with self._lock:
            return self._tick_locked(self._next_tick, changes, queries)

    def tick_at(self, tick: int, changes: Sequence = (), queries: Sequence = ()) -> t.TickResult:
        """Sends game tick `tick` (ticks of a stream must increase), for lag compensation."""
        tick = t.uint64(tick, "tick")
        with self._lock:
            if tick < self._next_tick:
                raise InvalidArgument(f"tick {tick}: the ticks of a stream must increase (the next "
                                      f"is at least {self._next_tick})", method="Tick")
            return self._tick_locked(tick, changes, queries)

    def _tick_locked(self, tick: int, changes, queries) -> t.TickResult:
        if self._error is not None:
            raise self._error
        # Every tick names the session: a first tick refused with NOT_FOUND binds nothing,
        # so the next one must name it again.
        req = pb.TickRequest(session_id=self.session_id, tick=tick)
        for i, c in enumerate(changes):
            _wire.set_change(req.changes.add(), c, f"changes[{i}]")
        body, layout = _encode_queries(queries, _TICK_QUERY_FIELD, pb.TickRequest)
        self._requests.put(req.SerializeToString() + body)
        self._next_tick = tick + 1
        try:
            resp = next(self._call)
        except grpc.RpcError as e:
            self._error = from_rpc_error(e, "Tick")
        except StopIteration:
            self._error = error_for(grpc.StatusCode.UNAVAILABLE, "the stream ended", "Tick")
        if self._error is not None:
            self._requests.put(_END)  # lets grpcio's request thread finish
            raise self._error
        header, results = _read_answer(resp, pb.TickResponse, 3, layout)
        if results is not None:  # the numpy path reads only answers without events
            return t.TickResult(header.get(1, 0), header.get(2, 0), results, [],
                                bool(header.get(6, 0)))
        if header.HasField("error"):
            raise _explain(error_for(header.error.code, header.error.message, "Tick"), layout)
        return t.TickResult(header.tick, header.revision, _decode_results(header.results, layout),
                            _wire.events_from(header.events), header.events_truncated)

    @property
    def done(self) -> bool:
        """True once the stream has ended."""
        return self._error is not None or self._call.done()

    def close(self) -> None:
        """Half-closes the stream and waits for its end; raises its status unless OK or already raised."""
        with self._lock:
            if self._error is not None:
                return
            self._requests.put(_END)
            try:
                for _ in self._call:
                    pass
            except grpc.RpcError as e:
                self._error = from_rpc_error(e, "Tick")
                raise self._error from None
            self._error = error_for(grpc.StatusCode.FAILED_PRECONDITION,
                                    "the stream was closed", "Tick")

    def cancel(self) -> None:
        """Cancels the stream; later ticks raise Cancelled."""
        self._call.cancel()
        self._requests.put(_END)

    def __del__(self):
        # A stream dropped without close(): end the call and grpcio's request thread.
        if getattr(self, "_error", 1) is None:
            self._call.cancel()
            self._requests.put(_END)

    def __enter__(self) -> "TickStream":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.cancel()
