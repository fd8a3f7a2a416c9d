"""Random operator programs that use sessions and capabilities rightly and
wrongly (drop, stash, reuse, give at held and unheld times).

A model of what the operator holds decides, action by action, whether it is
legal. Every illegal action must raise a typed :class:`timely.TimelyError`
and send nothing; every legal one must be accepted. Downstream, with
``check_progress=True``, no record may arrive at a time its input frontier
has passed, a monitor checks that its input frontier never moves backwards,
and what arrives is exactly what the legal actions sent.
"""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

import timely
from tests.progress.strategies import capped
from timely import Pipeline
from timely.progress import less_equal

# -- programs -----------------------------------------------------------------------

# Actions taken for each message, while it is current.
in_message = st.one_of(
    st.tuples(st.just("retain")),
    st.tuples(st.just("delay"), st.integers(-2, 3)),
    st.tuples(st.just("stash")),
    st.tuples(st.just("session"), st.integers(0, 2)),      # a session on the message
    st.tuples(st.just("give"), st.integers(0, 2)),         # give on the message's session
    st.tuples(st.just("give_at"), st.integers(-2, 3)),     # relative to the message's time
)
# Actions taken after the messages of a scheduling.
after = st.one_of(
    st.tuples(st.just("use_stash"), st.integers(0, 3), st.sampled_from(["session", "retain",
                                                                         "delayed"])),
    st.tuples(st.just("cap_session"), st.integers(0, 3)),
    st.tuples(st.just("give_session"), st.integers(0, 3)),
    st.tuples(st.just("drop"), st.integers(0, 3)),
    st.tuples(st.just("downgrade"), st.integers(0, 3), st.integers(-1, 2)),
    st.tuples(st.just("give_at_abs"), st.integers(0, 6)),
    st.tuples(st.just("container"), st.integers(0, 3)),
    st.tuples(st.just("delay_cap"), st.integers(0, 3), st.integers(-1, 2)),
)
programs = st.tuples(st.lists(in_message, max_size=6), st.lists(after, max_size=6))
epochs = st.lists(st.integers(0, 2), min_size=1, max_size=4)     # messages per epoch


class Interpreter:
    """Runs a program in an operator, against a model of what it holds."""

    def __init__(self, program, out, worker: int):
        self.per_message, self.per_schedule = program
        self.out = out
        self.worker = worker
        self.caps = []            # Capabilities, and the model: [time, live] per cap
        self.model = []
        self.stash = []           # InputCapabilities kept past their message
        self.sessions = []        # (Session, kind, cap index or None)
        self.sent = []            # (time, record) of every legal send
        self.wrong = []           # disagreements with the model
        self.counter = 0

    def record(self):
        self.counter += 1
        return (self.worker, self.counter)

    def attempt(self, legal: bool, what: str, action):
        """Runs ``action``; it must raise a TimelyError exactly when not ``legal``."""
        try:
            result = action()
        except timely.TimelyError as error:
            if legal:
                self.wrong.append(f"{what}: legal, but raised {error!r}")
            return None, False
        except Exception as error:  # noqa: BLE001 - an untyped error is a finding
            self.wrong.append(f"{what}: raised an untyped {error!r}")
            return None, False
        if not legal:
            self.wrong.append(f"{what}: illegal, but accepted")
        return result, True

    def holds(self, t) -> bool:
        return any(live and less_equal(time, t) for time, live in self.model)

    def new_cap(self, cap, time):
        self.caps.append(cap)
        self.model.append([time, True])

    # -- one message -------------------------------------------------------------

    def message(self, cap, data):
        t = cap.time
        out = self.out
        own = None                       # this message's session
        for action in self.per_message:
            kind = action[0]
            if kind == "retain":
                new, ok = self.attempt(True, "retain", cap.retain)
                if ok:
                    self.new_cap(new, t)
            elif kind == "delay":
                target = t + action[1]
                if target < 0:
                    continue
                new, ok = self.attempt(target >= t, f"delayed({target}) at {t}",
                                       lambda: cap.delayed(target))
                if ok:
                    self.new_cap(new, target)
            elif kind == "stash":
                self.stash.append(cap)
            elif kind == "session":
                own, ok = self.attempt(True, "session on the message", lambda: out.session(cap))
                if ok:
                    self.sessions.append((own, "message", None))
            elif kind == "give":
                if own is not None:
                    x = self.record()
                    _, ok = self.attempt(True, "give on the message's session",
                                         lambda: own.give(x))
                    if ok:
                        self.sent.append((t, x))
            elif kind == "give_at":
                target = t + action[1]
                if target < 0:
                    continue
                x = self.record()
                legal = target >= t or self.holds(target)
                _, ok = self.attempt(legal, f"give_at({target}) at message {t}",
                                     lambda: out.give_at(target, [x]))
                if ok:
                    self.sent.append((target, x))

    # -- after the messages ----------------------------------------------------------

    def pick(self, items, i):
        return (i % len(items)) if items else None

    def scheduling(self):
        out = self.out
        for action in self.per_schedule:
            kind = action[0]
            if kind == "use_stash":
                i = self.pick(self.stash, action[1])
                if i is None:
                    continue
                old = self.stash[i]
                how = action[2]
                use = {"session": lambda: out.session(old).give(self.record()),
                       "retain": old.retain,
                       "delayed": lambda: old.delayed(old.time + 1)}[how]
                new, ok = self.attempt(False, f"stashed message capability: {how}", use)
            elif kind == "cap_session":
                i = self.pick(self.caps, action[1])
                if i is None:
                    continue
                session, ok = self.attempt(self.model[i][1], f"session on capability {i}",
                                           lambda: out.session(self.caps[i]))
                if ok:
                    self.sessions.append((session, "capability", i))
            elif kind == "give_session":
                j = self.pick(self.sessions, action[1])
                if j is None:
                    continue
                session, where, i = self.sessions[j]
                legal = where == "capability" and self.model[i][1]
                x = self.record()
                _, ok = self.attempt(legal, f"give on a {where} session", lambda: session.give(x))
                if ok:
                    self.sent.append((self.model[i][0], x))
            elif kind == "drop":
                i = self.pick(self.caps, action[1])
                if i is None:
                    continue
                _, ok = self.attempt(self.model[i][1], f"drop capability {i}", self.caps[i].drop)
                if ok:
                    self.model[i][1] = False
            elif kind == "downgrade":
                i = self.pick(self.caps, action[1])
                if i is None:
                    continue
                time, live = self.model[i]
                target = time + action[2]
                if target < 0:
                    continue
                _, ok = self.attempt(live and target >= time, f"downgrade {i} to {target}",
                                     lambda: self.caps[i].downgrade(target))
                if ok:
                    self.model[i][0] = target
            elif kind == "delay_cap":
                i = self.pick(self.caps, action[1])
                if i is None:
                    continue
                time, live = self.model[i]
                target = time + action[2]
                if target < 0:
                    continue
                new, ok = self.attempt(live and target >= time, f"delay {i} to {target}",
                                       lambda: self.caps[i].delayed(target))
                if ok:
                    self.new_cap(new, target)
            elif kind == "give_at_abs":
                target = action[1]
                x = self.record()
                _, ok = self.attempt(self.holds(target), f"give_at({target})",
                                     lambda: out.give_at(target, [x]))
                if ok:
                    self.sent.append((target, x))
            elif kind == "container":
                i = self.pick(self.caps, action[1])
                if i is None:
                    continue
                buffer = [self.record(), self.record()]
                expect = list(buffer)

                def give(i=i, buffer=buffer):
                    out.session(self.caps[i]).give_container(buffer)
                    buffer.clear()                    # the list is the caller's again

                _, ok = self.attempt(self.model[i][1], f"give_container on capability {i}", give)
                if ok:
                    self.sent.extend((self.model[i][0], x) for x in expect)

    def finish(self):
        """Drops every live capability (the input is done)."""
        for cap, state in zip(self.caps, self.model):
            if state[1]:
                cap.drop()
                state[1] = False


def run(program, per_epoch, workers: int):
    lock = threading.Lock()
    reports: list = []

    def work(worker):
        interpreters = []

        def constructor(cap, info):
            cap.drop()

            def logic(inp, out):
                if not interpreters:
                    interpreters.append(Interpreter(program, out, worker.index))
                it = interpreters[0]
                for c, data in inp:
                    it.message(c, data)
                it.scheduling()
                if inp.frontier.frontier().elements() == []:
                    it.finish()

            return logic

        backwards = []

        def monitor(cap, info):
            cap.drop()
            seen = [[0]]

            def logic(inp, out):
                for c, data in inp:
                    pass
                now = inp.frontier.frontier().elements()
                # Every time of the new frontier is at or after one of the old.
                if not all(any(less_equal(o, n) for o in seen[-1]) for n in now):
                    backwards.append((seen[-1], now))
                seen.append(now)

            return logic

        with worker.dataflow() as scope:
            handle, stream = scope.new_input()
            produced = stream.unary(Pipeline, "Program", constructor)
            produced.unary(Pipeline, "Monitor", monitor)
            captured = produced.capture()
        for epoch, count in enumerate(per_epoch):
            for k in range(count):
                handle.send((worker.index, epoch, k))
            handle.advance_to(epoch + 1)
            worker.step()
            worker.step()
        handle.close()
        worker.drain()
        it = interpreters[0] if interpreters else None
        with lock:
            reports.append((it.wrong if it else [], sorted(it.sent) if it else [], backwards,
                            captured.extract(), worker.index))
        return None

    timely.execute(work, workers=workers, mode="threads", check_progress=True)
    return reports


def check(program, per_epoch, workers):
    reports = run(program, per_epoch, workers)
    sent = sorted(s for _, mine, _, _, _ in reports for s in mine)
    arrived = sorted((t, x) for _, _, _, captured, _ in reports for t, xs in captured for x in xs)
    for wrong, _, backwards, _, index in reports:
        assert wrong == [], f"worker {index}: {wrong}"
        assert backwards == [], f"worker {index}: a frontier moved backwards: {backwards}"
    assert arrived == sent


@settings(max_examples=capped(300))
@given(programs, epochs)
def test_misuse_is_refused_and_use_accepted_one_worker(program, per_epoch):
    check(program, per_epoch, 1)


@settings(max_examples=capped(100))
@given(programs, epochs)
def test_misuse_is_refused_and_use_accepted_two_workers(program, per_epoch):
    check(program, per_epoch, 2)


def test_a_program_with_every_kind_of_misuse():
    """One fixed program, so the property's corners are always exercised."""
    program = (
        [("retain",), ("delay", 2), ("delay", -1), ("stash",), ("session", 0), ("give", 0),
         ("give_at", 1), ("give_at", -1)],
        [("use_stash", 0, "session"), ("use_stash", 1, "retain"), ("use_stash", 2, "delayed"),
         ("cap_session", 0), ("give_session", 0), ("give_session", 1), ("drop", 0),
         ("give_session", 1), ("drop", 0), ("downgrade", 1, 1), ("downgrade", 1, -1),
         ("give_at_abs", 0), ("give_at_abs", 6), ("container", 1), ("delay_cap", 1, -1)],
    )
    check(program, [1, 2, 0, 1], 1)
    check(program, [1, 2, 0, 1], 2)
