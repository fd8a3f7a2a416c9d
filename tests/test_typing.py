"""The package type-checks, and its types catch users' mistakes.

``mypy timely/`` with the configuration in pyproject.toml finds no error
(strict on the public modules, lenient inside the engine, as the
configuration says). Small user programs are checked the way a user would
check theirs (``mypy --strict``, importing timely as an installed package):
each deliberate mistake (a function of the wrong record type given to
``map``, a record of the wrong type sent, a timestamp that is not one, an
operator logic of the wrong arity) is reported with the expected error and
nothing else, a correct program passes clean, and ``reveal_type`` of a few
operator chains gives the types they should.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.static


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


def test_mypy_is_clean_on_the_package():
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--no-incremental", "timely/"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False, env=_env())
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert done.stdout.startswith("Success: no issues found"), done.stdout[-6000:]


# -- user programs ----------------------------------------------------------------

GOOD = '''
from __future__ import annotations

from typing import Callable

import timely
from timely import Capability, InputHandle, Pipeline, ProbeHandle, Stream, Worker
from timely.dataflow.builder import OperatorInfo
from timely.dataflow.handles import InputHandleCore as OperatorInput
from timely.dataflow.handles import OutputHandle

Logic = Callable[[OperatorInput[str], OutputHandle[int]], None]


def lengths(cap: Capability, info: OperatorInfo) -> Logic:
    cap.drop()

    def logic(input: OperatorInput[str], output: OutputHandle[int]) -> None:
        for held, words in input:
            session = output.session(held)
            for word in words:
                session.give(len(word))

    return logic


def work(worker: Worker) -> list[int]:
    handle: InputHandle[str]
    with worker.dataflow() as scope:
        handle, words = scope.new_input(str)
        counts: Stream[int] = words.unary(Pipeline, "Lengths", lengths)
        probe: ProbeHandle = counts.exchange(lambda n: n).map(lambda n: n * 2).probe()
    for epoch in range(3):
        handle.send("x" * epoch)
        handle.advance_to(epoch + 1)
        worker.step_while(lambda: probe.less_than(handle.time))
    handle.close()
    return [worker.index]


several: list[list[int]] = timely.execute(work, workers=2)
one: list[int] = timely.execute_directly(work)
'''

# Each mistake: the program, and the errors expected in it as (line, text).
BAD = {
    "wrong_record_type": ('''
import timely


def shout(word: str) -> str:
    return word.upper()


def work(worker: timely.Worker) -> None:
    with worker.dataflow() as scope:
        handle, numbers = scope.new_input(int)
        numbers.map(shout)
        handle.send("x")
        scope.to_stream([1, 2, 3]).filter(str.isdigit)
''', [
        (11, 'Argument 1 to "map" of "Stream" has incompatible type "Callable[[str], str]"; '
             'expected "Callable[[int], str]"'),
        (12, 'Argument 1 to "send" of "InputHandle" has incompatible type "str"; expected "int"'),
        (13, 'Argument 1 to "filter" of "Stream" has incompatible type "Callable[[str], bool]"'),
    ]),
    "wrong_timestamp_type": ('''
import timely


def work(worker: timely.Worker) -> None:
    with worker.dataflow() as scope:
        handle, numbers = scope.new_input()
        probe = numbers.probe()
    handle.advance_to("x")
    probe.less_than("x")
''', [
        (8, 'Argument 1 to "advance_to" of "InputHandle" has incompatible type "str"'),
        (9, 'Argument 1 to "less_than" of "ProbeHandle" has incompatible type "str"; '
            'expected "int | tuple[int, ...]"'),
    ]),
    "wrong_logic_arity": ('''
from typing import Any, Callable

import timely
from timely import Capability, Pipeline
from timely.dataflow.builder import OperatorInfo
from timely.dataflow.handles import InputHandleCore


def three(cap: Any, info: Any, extra: Any) -> Any:
    return lambda input, output: None


def one_argument_logic(cap: Capability, info: OperatorInfo) -> Callable[[InputHandleCore[int]], None]:
    return lambda input: None


def two(input: Any, output: Any) -> None:
    pass


def work(worker: timely.Worker) -> None:
    with worker.dataflow() as scope:
        handle, numbers = scope.new_input(int)
        numbers.unary(Pipeline, "Three", three)
        numbers.unary(Pipeline, "OneArgument", one_argument_logic)
        numbers.unary_notify(Pipeline, "Two", [], two)
        numbers.sink(Pipeline, "Sink", two)
''', [
        (24, 'Argument 3 to "unary" of "Stream" has incompatible type '
             '"Callable[[Any, Any, Any], Any]"'),
        (25, 'Argument 3 to "unary" of "Stream" has incompatible type '
             '"Callable[[Capability, OperatorInfo], Callable[[InputHandleCore[int]], None]]"'),
        (26, 'Argument 4 to "unary_notify" of "Stream" has incompatible type '
             '"Callable[[Any, Any], None]"'),
        (27, 'Argument 3 to "sink" of "Stream" has incompatible type '
             '"Callable[[Any, Any], None]"'),
    ]),
    "wrong_result_type": ('''
import timely


def work(worker: timely.Worker) -> int:
    return worker.index


names: list[str] = timely.execute(work, workers=2)
''', [
        (8, 'Argument 1 to "execute" has incompatible type "Callable[[Worker], int]"; '
            'expected "Callable[[Worker], str]"'),
    ]),
}

REVEAL = '''
from __future__ import annotations

import timely
from timely import Batch, Stream, Worker


def keep(batch: Batch) -> Batch:
    return batch


def work(worker: Worker) -> int:
    with worker.dataflow() as scope:
        handle, numbers = scope.new_input(int)
        reveal_type(scope.new_input())
        reveal_type(numbers)
        reveal_type(numbers.map(lambda x: str(x)))
        reveal_type(numbers.filter(lambda x: x > 0).exchange(lambda x: x).inspect(print))
        reveal_type(numbers.flat_map(lambda x: [(x, x)]))
        reveal_type(numbers.concat(scope.to_stream([1, 2])))
        reveal_type(numbers.count())
        reveal_type(numbers.map(float).capture().extract())
        reveal_type(numbers.probe())
        with scope.iterative() as inner:
            reveal_type(numbers.enter(inner).map(str).leave())
        batches: Stream[Batch] = scope.to_stream([Batch(a=[1])])
        reveal_type(batches.map_batch(keep).filter_batch(lambda b: b["a"] > 0))
    return worker.index


reveal_type(timely.execute(work))
reveal_type(timely.execute_directly(work))
'''

S = "timely.dataflow.stream.Stream"
REVEALED = [
    "tuple[timely.dataflow.operators.input.InputHandle[Any], " + S + "[Any]]",
    S + "[int]",
    S + "[str]",
    S + "[int]",
    S + "[tuple[int, int]]",
    S + "[int]",
    S + "[int]",
    "list[tuple[int | tuple[int, ...], list[float]]]",
    "timely.dataflow.operators.probe.ProbeHandle",
    S + "[str]",
    S + "[timely.container.batch.Batch]",
    "list[int]",
    "int",
]

_LINE = re.compile(r"^(?P<file>[^:]+\.py):(?P<line>\d+): (?P<kind>error|note): (?P<text>.*)$")


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """Every program checked in one mypy run: per file name, its
    ``(line, kind, text)`` messages."""
    folder = tmp_path_factory.mktemp("programs")
    programs = {"good": GOOD, "reveal": REVEAL, **{name: text for name, (text, _) in BAD.items()}}
    for name, text in programs.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text).lstrip("\n"))
    config = folder / "mypy.ini"
    config.write_text("[mypy]\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--strict",
         "--no-incremental", "--follow-imports=silent", "--show-error-codes",
         "--cache-dir", str(folder / ".mypy_cache"),
         *sorted(str(folder / f"{name}.py") for name in programs)],
        cwd=folder, capture_output=True, text=True, timeout=600, check=False, env=_env())
    assert done.returncode in (0, 1), done.stdout + done.stderr
    messages: dict[str, list[tuple[int, str, str]]] = {name: [] for name in programs}
    for line in done.stdout.splitlines():
        match = _LINE.match(line)
        if match:
            name = Path(match["file"]).stem
            messages[name].append((int(match["line"]), match["kind"], match["text"]))
    return messages


def test_a_correct_program_passes_strict_checking(checked):
    assert checked["good"] == []


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_mistake_is_reported(checked, case):
    _program, expected = BAD[case]
    errors = [(line, text) for line, kind, text in checked[case] if kind == "error"]
    for line, text in expected:
        assert any(at == line and text in said for at, said in errors), (line, text, errors)
    assert len(errors) == len(expected), errors
    assert all(text.endswith("[arg-type]") for _, text in errors), errors


def test_revealed_types_of_operator_chains(checked):
    notes = [text for _, kind, text in checked["reveal"] if kind == "note"]
    errors = [text for _, kind, text in checked["reveal"] if kind == "error"]
    assert errors == []
    revealed = [re.fullmatch(r'Revealed type is "(.*)"', text)[1] for text in notes]
    assert revealed == REVEALED
