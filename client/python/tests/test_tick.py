"""TickStream against a real hitboxd: ticks, both error channels, tick numbers, the stream's end."""
import numpy as np
import pytest

import hitbox
from hitbox import errors


def arena(client, session):
    client.add_colliders(session, [
        hitbox.Collider(1, hitbox.Box((20, 0.5, 20)), hitbox.Pose((0, -0.5, 0))),
        hitbox.Collider(100, hitbox.Capsule(0.4, 0.5), hitbox.Pose((0, 0.91, 0)), layer=1),
        hitbox.Collider(101, hitbox.Capsule(0.4, 0.5), hitbox.Pose((3, 0.91, 0)), layer=1)])


# Changes then queries per tick: the queries see the tick's changes; ticks numbered 1, 2, ...
def test_ticks(client, session):
    arena(client, session)
    with client.open_tick_stream(session) as stream:
        r = stream.tick([hitbox.Move(100, hitbox.Pose((0, 0.91, 5)))],
                        [hitbox.RayQuery((0, 1, 10), (0, 0, -10), hitbox.QueryFilter(mask=2))])
        assert (r.tick, r.revision) == (1, 2)
        assert r.results[0].hits[0].id == 100
        assert r.results[0].hits[0].point[2] == pytest.approx(5.4)
        r = stream.tick([], [
            hitbox.MoveBatch(None, None, [(0, -0.1, 0.1), (0.1, -0.1, 0)], apply_to_ids=[100, 101],
                             from_colliders=[100, 101]),
            hitbox.SweepBatch(None, None, [(0, 0, -10)], from_colliders=[100], mask=2),
            hitbox.OverlapQuery(hitbox.Sphere(10), filter=hitbox.QueryFilter(mask=2))])
        moves, sweeps, over = r.results
        assert r.tick == 2 and list(moves.on_ground) == [True, True]
        assert moves.position[0] == pytest.approx((0, 0.91, 5.1), abs=0.02)
        assert sweeps.hit[0] == False  # noqa: E712  (it never reports itself; 101 is off its path)
        assert [h.id for h in over.overlaps] == [100, 101]
        got = client.get_colliders(session, [100]).colliders[0].pose.position
        assert got == pytest.approx(tuple(moves.position[0]))


# A refused tick raises its TickResponse.error and the stream goes on; the session is unchanged.
def test_refused_tick_goes_on(client, session):
    arena(client, session)
    stream = client.open_tick_stream(session)
    before = client.get_session(session).revision
    with pytest.raises(errors.NotFound, match=r"changes\[0\]"):
        stream.tick([hitbox.Move(999, hitbox.Pose())])
    with pytest.raises(errors.InvalidArgument, match=r"queries\[1\].*row 0 of queries\[1\]"):
        stream.tick([], [hitbox.RayQuery((0, 0, 0), (1, 0, 0)),
                         hitbox.RayBatch([(0, 0, 0)], [(np.inf, 0, 0)])])
    assert client.get_session(session).revision == before
    r = stream.tick([], [hitbox.RayBatch([(1.5, 5, 0)], [(0, -10, 0)])])
    assert r.results[0].id[0] == 1 and not stream.done
    stream.close()
    with pytest.raises(errors.FailedPrecondition):
        stream.tick()


# tick_at carries game ticks (lag compensation); they must increase, checked before sending.
def test_tick_numbers_and_rewind(client, session):
    arena(client, session)
    with client.open_tick_stream(session) as stream:
        assert stream.tick_at(1000, [hitbox.Move(100, hitbox.Pose((0, 0.91, 0)))]).tick == 1000
        stream.tick_at(1001, [hitbox.Move(100, hitbox.Pose((10, 0.91, 0)))])
        with pytest.raises(errors.InvalidArgument, match="must increase"):
            stream.tick_at(1000)
        r = stream.tick([], [hitbox.RayQuery((0, 5, 0), (0, -10, 0), hitbox.QueryFilter(mask=2),
                                             at_tick=1000),
                             hitbox.RayBatch([(0, 5, 0)] * 2, [(0, -10, 0)] * 2, mask=2,
                                             at_tick=[1000.0, 1001.0])])
        assert r.tick == 1002 and r.results[0].hits[0].id == 100
        assert list(r.results[1].hit) == [True, False]


# The stream's own status: a deleted session ends it with NotFound, raised by this and later ticks.
def test_stream_ends_when_session_deleted(client):
    client.create_session("doomed")
    stream = client.open_tick_stream("doomed")
    stream.tick()
    client.delete_session("doomed")
    with pytest.raises(errors.NotFound, match="deleted"):
        stream.tick()
    assert stream.done
    with pytest.raises(errors.NotFound):
        stream.tick()


# The stream's status when the server goes away: Unavailable, never a hang.
def test_stream_ends_when_server_stops():
    from conftest import Hitboxd
    d = Hitboxd()
    with hitbox.Client(d.address, hitbox.ClientOptions(wait_for_ready=True)) as c:
        c.create_session("s")
        stream = c.open_tick_stream("s")
        stream.tick()
        d.kill()
        with pytest.raises(errors.Unavailable):
            stream.tick()
        with pytest.raises(errors.Unavailable):
            stream.tick()


# A stream opened before its session exists: the first tick is refused (NotFound, a tick
# error), and once the session is made the same stream binds to it.
def test_stream_binds_once_session_exists(client):
    stream = client.open_tick_stream("later")
    with pytest.raises(errors.NotFound):
        stream.tick()
    assert not stream.done
    client.create_session("later")
    try:
        assert stream.tick([hitbox.Add(hitbox.Collider(1, hitbox.Sphere(1)))]).revision == 1
        stream.close()
    finally:
        client.delete_session("later")


# cancel() ends the stream: later ticks raise Cancelled.
def test_cancel(client, session):
    stream = client.open_tick_stream(session)
    stream.tick()
    stream.cancel()
    with pytest.raises(errors.Cancelled):
        stream.tick()
    assert stream.done
