"""Shared-memory segments: one owner creates and unlinks, others attach; the
sweep removes the segments of owners that are gone and spares the rest; the
ring layout gives every ordered pair its own ring."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from timely.communication.ring import PARK_FLAG_BYTES, RingReader, RingWriter
from timely.communication.shm import (
    PREFIX,
    RING_BYTES,
    SHM_DIRECTORY,
    Inboxes,
    Segment,
    owner_of,
    segment_name,
    sweep_orphans,
)

ROOT = Path(__file__).resolve().parent.parent.parent


def on_disk(name: str) -> bool:
    return os.path.exists(os.path.join(SHM_DIRECTORY, name))


def test_a_segment_is_named_after_its_owner():
    name = segment_name()
    assert name.startswith(f"{PREFIX}{os.getpid()}-")
    assert owner_of(name) == os.getpid()
    assert owner_of(segment_name(pid=12, tag="ab")) == 12
    assert owner_of("someone-else") is None
    assert owner_of(f"{PREFIX}notapid-x") is None


def test_create_attach_close_unlink():
    owner = Segment.create(4096)
    try:
        assert owner.owner and owner_of(owner.name) == os.getpid()
        assert on_disk(owner.name)
        other = Segment.attach(owner.name)
        assert not other.owner and other.size >= 4096
        owner.buf[:5] = b"hello"
        assert bytes(other.buf[:5]) == b"hello"
        with pytest.raises(PermissionError):
            other.unlink()
        other.close()
        owner.unlink()
        assert not on_disk(owner.name)
        owner.unlink()                    # twice is harmless
        with pytest.raises(FileNotFoundError):
            Segment.attach(owner.name)
        owner.buf[:5] = b"still"          # the mapping outlives the name
    finally:
        owner.close()
        owner.unlink()


def test_a_segment_still_viewed_is_unmapped_once_its_views_are_gone():
    from timely.communication import shm

    first = Segment.create(4096)
    first.unlink()
    view = first.buf[:16]               # as a ring end of a failed computation holds one
    first.close_when_free()             # no BufferError, and nothing for the collector
    assert first in shm._DEFERRED
    view[:2] = b"ok"                    # still mapped while viewed
    view.release()
    second = Segment.create(4096)       # the next segment made unmaps the first
    try:
        assert first not in shm._DEFERRED
        assert first.buf is None            # unmapped
    finally:
        second.close_when_free()
        second.unlink()
    assert shm._DEFERRED == []


ATTACH_AND_EXIT = textwrap.dedent("""
    import sys
    from timely.communication.shm import Segment
    segment = Segment.attach(sys.argv[1])
    segment.buf[:2] = b"ok"
    segment.close()
""")


def test_a_process_that_attaches_and_exits_leaves_the_segment_to_its_owner():
    """Attaching does not hand the segment to the attaching process's
    resource tracker, which would unlink it when that process ends."""
    owner = Segment.create(4096)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-c", ATTACH_AND_EXIT, owner.name], env=env,
                       check=True, timeout=60)
        assert bytes(owner.buf[:2]) == b"ok"
        assert on_disk(owner.name)
    finally:
        owner.close()
        owner.unlink()


DIE_HOLDING_A_SEGMENT = textwrap.dedent("""
    import os
    from multiprocessing import resource_tracker
    from timely.communication.shm import Segment
    segment = Segment.create(4096)
    # An owner killed along with its resource tracker: nobody unlinks.
    resource_tracker.unregister("/" + segment.name, "shared_memory")
    print(segment.name, flush=True)
    os._exit(0)
""")


def test_sweep_removes_a_dead_owners_segment_and_spares_a_live_one():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", DIE_HOLDING_A_SEGMENT], env=env,
                         capture_output=True, text=True, check=True, timeout=60)
    orphan = run.stdout.strip()
    assert owner_of(orphan) is not None and on_disk(orphan)
    mine = Segment.create(4096)
    try:
        removed = sweep_orphans()
        assert orphan in removed
        assert not on_disk(orphan)
        assert mine.name not in removed and on_disk(mine.name)
    finally:
        mine.close()
        mine.unlink()


def test_sweep_looks_only_at_names_it_made(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = tmp_path / f"{PREFIX}{os.getpid()}-aaaa"
    orphan = tmp_path / f"{PREFIX}{dead.pid}-bbbb"
    other = tmp_path / "someone-else"
    odd = tmp_path / f"{PREFIX}x-cccc"
    for path in (mine, orphan, other, odd):
        path.write_bytes(b"")
    assert sweep_orphans(str(tmp_path)) == [orphan.name]
    assert mine.exists() and other.exists() and odd.exists() and not orphan.exists()
    assert sweep_orphans(str(tmp_path / "missing")) == []


def test_every_ordered_pair_has_its_own_ring():
    layout = Inboxes(receivers=3, senders=4, ring_bytes=1024)
    assert layout.size == 12 * 1024 + 3 * PARK_FLAG_BYTES
    offsets = {layout.offset(r, s) for r in range(3) for s in range(4)}
    assert offsets == set(range(0, 12 * 1024, 1024))
    assert layout.offset(1, 0) == 4 * 1024          # receiver-major
    with pytest.raises(IndexError):
        layout.offset(3, 0)
    with pytest.raises(IndexError):
        layout.offset(0, -1)
    # One park flag per receiver, each on a cache line of its own after the rings.
    flags = [layout.flag_offset(r) for r in range(3)]
    assert flags == [12 * 1024 + r * PARK_FLAG_BYTES for r in range(3)]
    assert flags[-1] + PARK_FLAG_BYTES == layout.size
    with pytest.raises(IndexError):
        layout.flag_offset(3)


def test_park_flags_of_a_formatted_layout_start_clear_and_are_shared():
    layout = Inboxes(receivers=2, senders=2, ring_bytes=1024)
    buf = bytearray(b"\xff" * layout.size)
    layout.format(buf)
    owner, sender, other = layout.flag(buf, 1), layout.flag(buf, 1), layout.flag(buf, 0)
    assert not sender.wanted() and not other.wanted()
    owner.announce()
    assert sender.wanted() and not other.wanted()
    owner.clear()
    assert not sender.wanted()
    del owner, sender, other


def test_rings_of_a_formatted_layout_carry_messages_independently():
    layout = Inboxes(receivers=2, senders=2)
    segment = Segment.create(layout.size)
    try:
        layout.format(segment.buf)
        writers = {(r, s): RingWriter(layout.ring(segment.buf, r, s))
                   for r in range(2) for s in range(2)}
        for (r, s), writer in writers.items():
            assert writer.send(f"{s}->{r}".encode())
        readers = {(r, s): RingReader(layout.ring(segment.buf, r, s))
                   for r in range(2) for s in range(2)}
        assert {key: reader.recv() for key, reader in readers.items()} == {
            (r, s): f"{s}->{r}".encode() for r in range(2) for s in range(2)}
        assert layout.ring(segment.buf, 0, 0).nbytes == RING_BYTES
        del writers, readers, writer     # ring ends hold views of the segment
    finally:
        segment.close()
        segment.unlink()


def _minor_faults() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def test_a_prefaulted_ring_takes_no_page_faults_when_written():
    layout = Inboxes(2, 2)
    segment = Segment.create(layout.size)
    try:
        layout.format(segment.buf)
        ring = layout.ring(segment.buf, 1, 0)
        pages = layout.ring_bytes // 4096
        ones, twos = b"\x01" * len(ring), b"\x02" * len(ring)
        before = _minor_faults()
        ring[:] = ones
        cold = _minor_faults() - before
        assert cold >= pages // 2           # a page at a time (or a few, by fault-around)
        layout.prefault(segment, 0, 1)      # starts at an offset that is no page boundary
        before = _minor_faults()
        view = layout.ring(segment.buf, 0, 1)
        view[:] = twos
        warm = _minor_faults() - before
        if warm >= pages // 2:
            pytest.skip(f"this kernel ({os.uname().release}) maps no pages on MADV_POPULATE_WRITE")
        assert warm <= 4
        assert bytes(ring[:4]) == b"\x01" * 4 and bytes(view[-4:]) == b"\x02" * 4
        del ring, view
    finally:
        segment.unlink()
        segment.close_when_free()


def test_prefault_keeps_what_the_segment_holds():
    segment = Segment.create(3 * 4096 + 100)
    try:
        segment.buf[5000:5005] = b"hello"
        segment.prefault(4999, 10)
        segment.prefault()
        segment.prefault(3 * 4096, 1000)    # past the end: only what is there
        assert bytes(segment.buf[5000:5005]) == b"hello"
    finally:
        segment.unlink()
        segment.close_when_free()
