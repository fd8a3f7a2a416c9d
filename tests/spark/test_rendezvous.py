"""The driver-side rendezvous, without Spark: rounds, stale rounds, strangers."""

from __future__ import annotations

import json
import multiprocessing
import socket
import threading
import time

import pytest

from timely.spark.rendezvous import DriverRendezvous, Meeting, RendezvousError, driver_gather


def gather_all(server, run, partitions, timeout=20):
    out, errors = {}, {}

    def one(p):
        try:
            out[p] = driver_gather(server.address, server.secret, run, p,
                                   timeout=timeout)(json.dumps({"p": p}))
        except Exception as error:  # noqa: BLE001 - reported below
            errors[p] = error

    threads = [threading.Thread(target=one, args=(p,)) for p in partitions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out, errors


def test_every_task_gets_every_description_in_partition_order():
    server = DriverRendezvous()
    run = server.new_run(3)
    out, errors = gather_all(server, run, [2, 0, 1])
    assert not errors
    expected = [json.dumps({"p": p}) for p in range(3)]
    assert out == {0: expected, 1: expected, 2: expected}
    # the same run meets again (another action, or a retry): a new round
    out, errors = gather_all(server, run, [0, 1, 2])
    assert not errors and out[1] == expected


def _wait_registered(server, run, count):
    for _ in range(500):
        with server.lock:
            if len(server.rounds.get(run, {})) >= count:
                return
        time.sleep(0.01)
    raise AssertionError("the registration never arrived")


def test_a_partition_registering_twice_starts_the_round_over():
    server = DriverRendezvous()
    run = server.new_run(2)
    stale: dict = {}

    def first():
        try:
            driver_gather(server.address, server.secret, run, 0, timeout=20)("{}")
        except RendezvousError as error:
            stale["error"] = error

    t = threading.Thread(target=first)
    t.start()
    _wait_registered(server, run, 1)
    # the retry's partition 0 replaces the stale one, then waits for partition 1
    out, errors = gather_all(server, run, [0], timeout=1)
    assert not out and "timed out" in str(errors[0])
    t.join(30)
    assert isinstance(stale["error"], RendezvousError)


@pytest.mark.parametrize("order", [[1, 0], [0, 1]])
def test_a_killed_task_never_completes_a_round_of_the_retry(order):
    server = DriverRendezvous()
    run = server.new_run(2)
    context = multiprocessing.get_context("fork")
    child = context.Process(target=lambda: driver_gather(server.address, server.secret, run,
                                                          0, timeout=60)("{}"))
    child.start()
    _wait_registered(server, run, 1)
    child.kill()                                      # a task of the failed attempt
    child.join()
    out, errors = {}, {}

    def one(p):
        try:
            out[p] = driver_gather(server.address, server.secret, run, p,
                                   timeout=20)(json.dumps({"p": p}))
        except Exception as error:  # noqa: BLE001 - reported below
            errors[p] = error

    threads = []
    for p in order:                                   # the retry, in either order
        threads.append(threading.Thread(target=one, args=(p,)))
        threads[-1].start()
        time.sleep(0.05)
    for t in threads:
        t.join(30)
    assert not errors
    assert out[0] == out[1] == [json.dumps({"p": 0}), json.dumps({"p": 1})]


def test_a_wrong_secret_or_unknown_run_is_refused():
    server = DriverRendezvous()
    run = server.new_run(1)
    with pytest.raises(RendezvousError):
        driver_gather(server.address, b"not the secret", run, 0, timeout=5)("{}")
    with pytest.raises(RendezvousError):
        driver_gather(server.address, server.secret, "no-such-run", 0, timeout=5)("{}")
    garbage = socket.create_connection(server.address)
    garbage.sendall(b"\xff" * 100)
    garbage.close()
    out, errors = gather_all(server, run, [0])
    assert not errors and out[0] == [json.dumps({"p": 0})]


def test_the_watchdog_fires_when_a_round_does_not_complete_in_time():
    server = DriverRendezvous()
    fired = []
    run = server.new_run(2, timeout=0.5, on_timeout=lambda stage, why: fired.append((stage, why)))
    out, errors = {}, {}

    def one():
        meeting = Meeting(server.address, server.secret, run, 0, timeout=1.5, stage=7)
        try:
            out[0] = meeting.gather("{}")
        except RendezvousError as error:
            errors[0] = error
        finally:
            meeting.close()

    t = threading.Thread(target=one)
    t.start()
    deadline = time.monotonic() + 10
    while not fired and time.monotonic() < deadline:
        time.sleep(0.05)
    server.close()
    t.join(30)
    assert fired and fired[0][0] == 7
    assert "did not start all its tasks within 0.5 s" in fired[0][1]
    assert isinstance(errors[0], RendezvousError) and not out      # the task gave up too


def _met(server, run, stage):
    """Two tasks of ``run`` (in ``stage``) that have met: their Meetings."""
    meetings = [Meeting(server.address, server.secret, run, p, timeout=10, stage=stage)
                for p in range(2)]
    threads = [threading.Thread(target=m.gather, args=(json.dumps({"index": m.partition}),))
               for m in meetings]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return meetings


def test_a_stopped_task_gets_the_failed_peer_s_own_exception_and_the_watchdog_is_armed():
    server = DriverRendezvous()
    fired = []
    run = server.new_run(2, timeout=1.0, on_timeout=lambda stage, why: fired.append(why))
    meetings = _met(server, run, 3)
    try:
        raise ValueError("the real failure")
    except ValueError as error:
        import traceback

        meetings[1].failed(error, traceback.format_exc())
    cause = meetings[0].cause()
    assert cause["partition"] == 1 and cause["type"] == "builtins.ValueError"
    assert cause["message"] == "the real failure" and "raise ValueError" in cause["traceback"]
    meetings[0].close()
    deadline = time.monotonic() + 10
    while not fired and time.monotonic() < deadline:
        time.sleep(0.05)
    server.close()
    assert fired and "task 1 failed (builtins.ValueError)" in fired[0]
    assert "was not retried within 1 s" in fired[0]


def _failing_round(server, run, error, secondary_too=False):
    """One round of two tasks in which task 1 fails with ``error`` (and task
    0, with ``secondary_too``, only because task 1 did)."""
    meetings = _met(server, run, 5)
    try:
        raise error
    except Exception as raised:  # noqa: BLE001 - reported as a task would
        import traceback

        meetings[1].failed(raised, traceback.format_exc())
        if secondary_too:
            meetings[0].failed(RuntimeError("peer went away"), "", secondary=True)
    for m in meetings:
        m.close()


def _wait(fired, count, seconds=5.0):
    deadline = time.monotonic() + seconds
    while len(fired) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)                     # nothing more arrives late


@pytest.mark.parametrize("retries", [0, 1, 2])
def test_the_same_failure_stops_the_stage_after_the_retries_allowed(retries):
    server = DriverRendezvous()
    fired = []
    run = server.new_run(2, timeout=60, on_timeout=lambda stage, why: fired.append((stage, why)),
                         retries=retries)
    for attempt in range(retries + 1):
        assert not fired, f"stopped after {attempt} attempts"
        _failing_round(server, run, ValueError("a bad row: 7"), secondary_too=True)
        _wait(fired, 1 if attempt == retries else 0, 5.0 if attempt == retries else 0.3)
    server.close()
    assert len(fired) == 1
    stage, why = fired[0]
    assert stage == 5
    assert why.startswith("ValueError: a bad row: 7\nTraceback (most recent call last):")
    assert 'raise error' in why and f"spark.timely.retries is {retries}" in why


def test_a_different_failure_is_retried_again():
    server = DriverRendezvous()
    fired = []
    run = server.new_run(2, timeout=60, on_timeout=lambda stage, why: fired.append(why),
                         retries=1)
    _failing_round(server, run, ValueError("first"))
    _failing_round(server, run, ValueError("second"))        # another message: not the same
    _wait(fired, 0, 0.3)
    assert not fired
    _failing_round(server, run, ValueError("second"))
    _wait(fired, 1)
    server.close()
    assert len(fired) == 1 and fired[0].startswith("ValueError: second")


def test_without_a_limit_failures_only_arm_the_watchdog():
    server = DriverRendezvous()
    fired = []
    run = server.new_run(2, timeout=60, on_timeout=lambda stage, why: fired.append(why))
    for _ in range(3):
        _failing_round(server, run, ValueError("again"))
    _wait(fired, 0, 0.3)
    server.close()
    assert not fired
    other = DriverRendezvous()
    try:
        with pytest.raises(ValueError, match="retries is a count"):
            other.new_run(2, retries=-1)
    finally:
        other.close()
