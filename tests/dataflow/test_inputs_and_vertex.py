"""Unordered inputs, to_stream, and Naiad-style vertices."""

from __future__ import annotations

import pytest

import timely
from timely import Exchange, Vertex


def test_unordered_input_sends_at_any_held_time():
    def work(worker):
        with worker.dataflow() as scope:
            (handle, cap), stream = scope.new_unordered_input()
            probe = stream.probe()
            out = stream.capture()
        late = cap.delayed(7)
        handle.session(late).give("seven")
        handle.session(cap.delayed(2)).give_iterator(["two", "deux"])
        cap.downgrade(5)
        handle.session(cap).give("five")
        with pytest.raises(timely.CapabilityError):
            cap.delayed(1)
        worker.step_while(lambda: probe.less_than(5))
        frontier = probe.frontier().elements()
        cap.drop()
        del late
        worker.drain()
        return frontier, out.extract()

    frontier, out = timely.execute_directly(work)
    assert frontier == [5]
    assert out == [(2, ["deux", "two"]), (5, ["five"]), (7, ["seven"])]


def test_to_stream_and_input_from():
    def work(worker):
        with worker.dataflow() as scope:
            a = scope.to_stream(range(4)).capture()
            handle = timely.InputHandle()
            b = scope.input_from(handle).capture()
        handle.send_batch(iter(["x", "y"]))
        handle.flush()
        handle.close()
        worker.drain()
        return a.extract(), b.extract()

    assert timely.execute_directly(work) == ([(0, [0, 1, 2, 3])], [(0, ["x", "y"])])


class Select(Vertex):
    def __init__(self, selector):
        self.selector = selector

    def on_recv(self, input, batch, time):
        self.send(0, [self.selector(m) for m in batch], time)


class Count(Vertex):
    pacts = [Exchange(lambda record: 0)]

    def __init__(self):
        self.counts = {}

    def on_recv(self, input, batch, time):
        if time not in self.counts:
            self.counts[time] = 0
            self.notify_at(time)
        self.counts[time] += len(batch)

    def on_notify(self, time):
        self.send(0, [self.counts.pop(time)], time)


def test_select_and_count_vertices():
    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            counts = stream.vertex(Select(len)).vertex(Count()).capture()
        for epoch, words in enumerate([["a", "bb"], [], ["ccc"] * 5]):
            handle.send_batch(words)
            handle.advance_to(epoch + 1)
        handle.close()
        worker.drain()
        return counts.extract()

    assert timely.execute_directly(work) == [(0, [2]), (2, [5])]


class Echo(Vertex):
    """Two inputs, two outputs; notifications at later times; errors on misuse."""

    inputs = 2
    outputs = 2

    def __init__(self):
        self.errors = []
        self.notified = []

    def on_recv(self, input, batch, time):
        self.send(input, batch, time + 1)
        self.notify_at(time + 10)
        try:
            self.send(0, batch, time - 1 if time else 0)
            if time:
                self.errors.append("sent back in time")
        except timely.CapabilityError:
            pass

    def on_notify(self, time):
        self.notified.append(time)
        self.send(1, [f"done {time}"], time)


def test_vertex_with_several_inputs_and_outputs():
    echo = Echo()

    def work(worker):
        with worker.dataflow() as scope:
            h1, s1 = scope.new_input()
            h2, s2 = scope.new_input()
            out0, out1 = s1.vertex(echo, s2)
            c0, c1 = out0.capture(), out1.capture()
        h1.advance_to(1)
        h1.send("a")
        h2.advance_to(2)
        h2.send("b")
        h1.close()
        h2.close()
        worker.drain()
        return c0.extract(), c1.extract()

    c0, c1 = timely.execute_directly(work)
    assert echo.errors == []
    assert c0 == [(2, ["a"])]
    assert c1 == [(3, ["b"]), (11, ["done 11"]), (12, ["done 12"])]
    assert echo.notified == [11, 12]


def test_vertex_calls_outside_callbacks_are_errors():
    v = Select(str)

    def work(worker):
        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            stream.vertex(v)
        with pytest.raises(timely.CapabilityError, match="inside on_recv"):
            v.send(0, [1], 0)
        handle.close()
        worker.drain()

    timely.execute_directly(work)
