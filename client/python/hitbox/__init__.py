"""hitbox: the Python client of the Hitbox collision service (docs/python.md).

    import hitbox
    with hitbox.Client("127.0.0.1:50051") as client:
        session = client.create_session()
        client.add_colliders(session.session_id, [hitbox.Collider(1, hitbox.Sphere(1.0))])
        hit = client.raycast(session.session_id, (-5, 0, 0), (10, 0, 0))
"""
from hitbox.batch import CastHits, MoveBatch, MoveHits, RayBatch, SweepBatch
from hitbox.client import (Client, ClientOptions, RetryPolicy, Rewound, TickStream, TlsOptions,
                           WatchEventStream, make_channel)
from hitbox.errors import HitboxError
from hitbox.types import (Aabb, Add, AddWatch, ApplyResult, Box, Capsule, CastHit, CastQuery,
                          Collider, ColliderSnapshot, Compound, CompoundChild, Contact, ConvexHull,
                          Cylinder, Heightfield, MapInfo, Mesh, Move, MoveContact, MoveQuery,
                          MoveResult, MoveSettings, OverlapHit, OverlapQuery, Pose,
                          QueryBatchResult, QueryFilter, QueryResult, RayQuery, Remove,
                          RemoveWatch, Replace, SessionInfo, SessionLimits, Sphere, TickResult,
                          Watch, WatchEvent, WatchEventBatch, WatchEventKind, WatchInfo,
                          axis_angle)
from hitbox import errors

__all__ = [name for name in dir() if not name.startswith("_")]
