"""Watches through the Python client against a real hitboxd: AddWatch and
RemoveWatch changes, events on apply and tick answers, a WatchEvents stream,
the session's watches, and a batch refused for its watch work."""
import pytest

import hitbox
from hitbox import errors

ENTER, EXIT = hitbox.WatchEventKind.ENTER, hitbox.WatchEventKind.EXIT


def balls(client, session, xs, first=1):
    client.add_colliders(session, [hitbox.Collider(first + i, hitbox.Sphere(0.5), hitbox.Pose((x, 0, 0)))
                                   for i, x in enumerate(xs)])


def brief(events):
    return [(e.watch_id, e.collider_id, e.kind) for e in events]


# A new watch reports ENTER at once; moves in and out on a tick report ENTER
# and EXIT with the tick; removing the watch reports EXIT for what it held.
def test_events_on_apply_and_tick(client, session):
    balls(client, session, [0, 10])
    r = client.apply_changes(session, [hitbox.AddWatch(hitbox.Watch(7, hitbox.Sphere(2.0)))], tick=3)
    assert brief(r.events) == [(7, 1, ENTER)]
    assert r.events[0].tick == 3 and r.events[0].sub_shape == 0 and not r.events_truncated
    with client.open_tick_stream(session) as stream:
        t = stream.tick_at(4, [hitbox.Move(1, hitbox.Pose((-9, 0, 0))),
                               hitbox.Move(2, hitbox.Pose((1, 0, 0)))])
        assert brief(t.events) == [(7, 1, EXIT), (7, 2, ENTER)]
        assert all(e.tick == 4 for e in t.events)
        t = stream.tick_at(5, [hitbox.Move(1, hitbox.Pose((-8, 0, 0)))])
        assert t.events == [] and not t.events_truncated
        t = stream.tick_at(6, [hitbox.RemoveWatch(7)])
        assert brief(t.events) == [(7, 2, EXIT)]
    assert client.get_session(session).watches == []


# An attached watch follows its collider, never holds it, goes with it; the
# session lists its watches with where they are and what is inside.
def test_attached_watch_and_session_info(client, session):
    balls(client, session, [0, 10, 20])
    w = hitbox.Watch(5, hitbox.Sphere(3.0), hitbox.Pose((1, 0, 0)), attach_to=1, mask=1, ignore_ids=[3])
    assert client.apply_changes(session, [hitbox.AddWatch(w)]).events == []
    r = client.move_collider(session, 1, hitbox.Pose((8, 0, 0)))
    assert brief(r.events) == [(5, 2, ENTER)]
    info = client.get_session(session).watches
    assert len(info) == 1 and info[0].watch == w
    assert info[0].world_pose.position == (9.0, 0.0, 0.0)
    assert (info[0].inside, info[0].inside_count) == ([2], 1)
    r = client.remove_colliders(session, [1])
    assert brief(r.events) == [(5, 2, EXIT)]
    assert client.get_session(session).watches == []


# A WatchEvents stream gets every applied batch's events for its watches, in
# order, with the revision; it ends with NotFound when the session goes.
def test_watch_events_stream(client, session):
    balls(client, session, [0, 10])
    client.apply_changes(session, [hitbox.AddWatch(hitbox.Watch(1, hitbox.Sphere(2.0))),
                                   hitbox.AddWatch(hitbox.Watch(2, hitbox.Sphere(2.0), hitbox.Pose((10, 0, 0))))])
    everything = client.watch_events(session, timeout=30)
    only_two = client.watch_events(session, [2], timeout=30)
    everything.wait_registered()
    only_two.wait_registered()
    answers = [client.move_collider(session, 1, hitbox.Pose((9, 0, 0))),
               client.move_collider(session, 2, hitbox.Pose((30, 0, 0)))]
    got = [next(everything), next(everything)]
    assert [b.revision for b in got] == [a.revision for a in answers]
    assert [b.events for b in got] == [a.events for a in answers]
    assert brief(got[0].events) == [(1, 1, EXIT), (2, 1, ENTER)]
    assert brief(next(only_two).events) == [(2, 1, ENTER)]
    assert brief(next(only_two).events) == [(2, 2, EXIT)]
    client.delete_session(session)
    with pytest.raises(errors.NotFound):
        next(everything)
    with pytest.raises(errors.NotFound):
        next(only_two)


# cancel() ends a stream quietly.
def test_watch_events_cancel(client, session):
    with client.watch_events(session, timeout=30) as stream:
        stream.wait_registered()
        stream.cancel()
        assert list(stream) == []


# Bad watch changes: the client names the entry before sending; the server
# refuses an unknown watch and changes nothing.
def test_bad_watch_changes(client, session):
    with pytest.raises(TypeError, match=r"changes\[0\]\.add_watch: expected a hitbox.Watch"):
        client.apply_changes(session, [hitbox.AddWatch(hitbox.Sphere(1))])
    with pytest.raises(TypeError, match=r"changes\[0\]\.add_watch\.id"):
        client.apply_changes(session, [hitbox.AddWatch(hitbox.Watch(1.5, hitbox.Sphere(1)))])
    with pytest.raises(errors.NotFound, match=r"changes\[0\]\.remove_watch: watch 9"):
        client.apply_changes(session, [hitbox.RemoveWatch(9)])
    with pytest.raises(errors.NotFound, match=r"attach_to: collider 4"):
        client.apply_changes(session, [hitbox.AddWatch(hitbox.Watch(1, hitbox.Sphere(1), attach_to=4))])
    assert client.get_session(session).revision == 0


# A batch moving a collider that carries many watches needs more watch work
# than the session's budget: refused whole, the session unchanged.
def test_watch_work_over_budget_is_refused(client):
    sid = "py-watch-budget"
    client.create_session(sid, limits=hitbox.SessionLimits(max_pair_tests_per_message=2000))
    try:
        balls(client, sid, [-100] + [float(i % 7) for i in range(40)])
        client.apply_changes(sid, [hitbox.AddWatch(hitbox.Watch(w, hitbox.Sphere(2.0),
                                                                hitbox.Pose((0.05 * (w % 40), 0, 0)),
                                                                attach_to=1))
                                   for w in range(1, 1001)])
        before = client.get_session(sid)
        with pytest.raises(errors.ResourceExhausted, match="updating the watches after this batch"):
            client.move_collider(sid, 1, hitbox.Pose((3, 0, 0)))
        after = client.get_session(sid)
        assert after.revision == before.revision
        assert [w.inside_count for w in after.watches] == [0] * 1000
        assert client.get_colliders(sid, [1]).colliders[0].pose.position == (-100.0, 0.0, 0.0)
    finally:
        client.delete_session(sid)
