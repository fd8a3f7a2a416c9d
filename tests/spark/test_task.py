"""Spark task workers without Spark: two tasks in two processes meet through
the driver's rendezvous and exchange data, through rings and socket doorbells
when they share a machine, over TCP when they do not (as on two hosts)."""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback

import pytest

import timely
from timely.communication.shm import PREFIX, SHM_DIRECTORY
from timely.errors import SparkTaskError
from timely.spark._task import TaskWorker, listen, listen_address, machine_identity, parse_ports
from timely.spark.rendezvous import DriverRendezvous, driver_gather

MACHINES = {"one host": lambda i: "host-a", "two hosts": lambda i: f"host-{i}"}


def run_tasks(body, machines, peers=2):
    """Runs ``body(task)`` in ``peers`` forked tasks; returns their results."""
    server = DriverRendezvous()
    run = server.new_run(peers)
    context = multiprocessing.get_context("fork")

    def task_main(i, conn):
        try:
            task = TaskWorker(i, peers, driver_gather(server.address, server.secret, run, i),
                              machine=machines(i))
            try:
                conn.send(("ok", body(task)))
            finally:
                task.allocator.shutdown()
                task.close()
        except BaseException:  # noqa: BLE001 - handed to the test
            conn.send(("error", traceback.format_exc()))
        finally:
            conn.close()

    procs, pipes = [], []
    for i in range(peers):
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=task_main, args=(i, sender))
        process.start()
        sender.close()
        procs.append(process)
        pipes.append(receiver)
    try:
        results = []
        for receiver in pipes:
            assert receiver.poll(60), "a task did not finish"
            status, value = receiver.recv()
            assert status == "ok", value
            results.append(value)
        for process in procs:
            process.join(10)
            assert process.exitcode == 0
        leftover = [n for n in os.listdir(SHM_DIRECTORY)
                    if any(n.startswith(f"{PREFIX}{p.pid}-") for p in procs)]
        assert leftover == []
        return results
    finally:
        for process in procs:
            if process.is_alive():
                process.kill()
        server.listener.close()


def ping(task):
    """Task 1 sends to task 0 while task 0 is parked: task 0's doorbell, rung
    by task 1's process (or by its own link thread), must wake it."""
    allocator = task.allocator
    got = []
    pushers, puller = allocator.allocate(0, lambda: got.append(True))
    waited = None
    message = None
    if task.index == 1:
        time.sleep(0.3)                   # task 0 parks first
        pushers[0].push("ping")
        allocator.release()
    else:
        start = time.monotonic()
        while message is None and time.monotonic() - start < 30:
            allocator.park(30)
            allocator.receive()
            message = puller.pull()
        waited = time.monotonic() - start
    allocator.close_links()
    return {"message": message, "waited": waited, "rings": sorted(allocator.writers),
            "links": len(task.peer_bells), "woken": bool(got)}


@pytest.mark.parametrize("machines", MACHINES.values(), ids=MACHINES.keys())
def test_a_parked_task_is_woken_by_its_peer(machines):
    first, second = run_tasks(ping, machines)
    assert first["message"] == "ping" and first["woken"]
    assert first["waited"] < 10           # woken, not timed out
    shared = machines(0) == machines(1)
    assert first["rings"] == ([1] if shared else [])
    assert second["rings"] == ([0] if shared else [])
    assert first["links"] == second["links"] == (1 if shared else 0)


def exchange(task):
    worker = timely.Worker(task.allocator)
    with worker.dataflow() as scope:
        handle, stream = scope.new_input()
        out = stream.exchange(lambda x: x).map(lambda x: (x, worker.index)).capture()
    for epoch in range(3):
        if worker.index == 0:
            handle.send_batch(list(range(epoch * 10, epoch * 10 + 10)))
        handle.advance_to(epoch + 1)
    handle.close()
    worker.drain()
    worker.close()
    task.allocator.close_links()
    return out.extract()


@pytest.mark.parametrize("machines", MACHINES.values(), ids=MACHINES.keys())
def test_tasks_exchange_data(machines):
    results = run_tasks(exchange, machines)
    for index, result in enumerate(results):
        for _time, records in result:
            assert all(x % 2 == index and w == index for x, w in records)
    merged = sorted(x for result in results for _time, records in result for x, _ in records)
    assert merged == list(range(30))


def test_the_machine_identity_is_the_boot_and_the_network_namespace():
    identity = machine_identity()
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    assert identity == f"{boot}/net:{os.stat('/proc/self/ns/net').st_ino}"


def test_a_task_decides_its_listen_address_and_port():
    assert listen_address("10.1.2.3", "127.0.0.1") == "10.1.2.3"
    saved = os.environ.pop("SPARK_LOCAL_IP", None)
    try:
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.5"
        assert listen_address(None, "127.0.0.1") == "127.0.0.5"
        del os.environ["SPARK_LOCAL_IP"]
        # the local end of the route to the driver
        assert listen_address(None, "127.0.0.1") == "127.0.0.1"
    finally:
        if saved is not None:
            os.environ["SPARK_LOCAL_IP"] = saved
    taken = listen("127.0.0.1", None)
    port = taken.getsockname()[1]
    try:
        other = listen("127.0.0.1", (port, port + 50))
        assert port < other.getsockname()[1] <= port + 50
        other.close()
        with pytest.raises(SparkTaskError, match="spark.timely.ports"):
            listen("127.0.0.1", (port, port))
    finally:
        taken.close()
    with pytest.raises(ValueError):
        parse_ports("9-2")
