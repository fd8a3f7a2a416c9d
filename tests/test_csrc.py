"""Builds and runs the standalone C checks of csrc/, plain and under sanitizers.
They compile the C sources themselves, whatever build the package has: CI
runs them once (``static``)."""

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.static

ROOT = Path(__file__).resolve().parent.parent
# Each standalone check: its driver and the csrc/ files it covers.
PROGRAMS = {
    "check_progress": [
        ROOT / "tests" / "csrc" / "check_progress.c",
        ROOT / "csrc" / "sort_rows.c",
        ROOT / "csrc" / "mutable_antichain.c",
    ],
    "check_hash": [
        ROOT / "tests" / "csrc" / "check_hash.c",
        ROOT / "csrc" / "hash.c",
    ],
}


def compiler():
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.fail("no C compiler on PATH; the package itself needs one to build")
    return cc


def sanitizer_works(cc, flags, tmp_path):
    probe = tmp_path / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    out = tmp_path / "probe"
    built = subprocess.run([cc, *flags, str(probe), "-o", str(out)], capture_output=True)
    return built.returncode == 0 and subprocess.run([str(out)], capture_output=True).returncode == 0


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize(
    "flags",
    [
        ["-O2"],
        ["-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
         "-fno-sanitize-recover=all"],
    ],
    ids=["plain", "asan-ubsan"],
)
def test_csrc_checks(program, flags, tmp_path):
    cc = compiler()
    if "-fsanitize=address,undefined" in flags and not sanitizer_works(cc, flags, tmp_path):
        pytest.skip(f"{cc} cannot build and run sanitized programs here")
    exe = tmp_path / program
    build = subprocess.run(
        [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *flags, f"-I{ROOT / 'csrc'}",
         *map(str, PROGRAMS[program]), "-o", str(exe), "-lm"],
        capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "checks passed" in run.stdout


@pytest.mark.parametrize("mode", ["spin", "wait"])
@pytest.mark.parametrize(
    "flags, messages",
    [
        (["-O2"], 1_000_000),
        (["-O1", "-g", "-fsanitize=thread"], 100_000),
    ],
    ids=["plain", "tsan"],
)
def test_ring_stress(flags, messages, mode, tmp_path):
    """Two threads pass variable-size messages (some larger than the ring,
    in chunks) through a 4 KiB ring; every byte is checked. With ``wait``, a
    producer that finds the ring full asks for room and sleeps until the
    consumer, told of the request, wakes it: a lost wake-up hangs (and the
    run times out)."""
    cc = compiler()
    if "-fsanitize=thread" in flags and not sanitizer_works(cc, [*flags, "-pthread"], tmp_path):
        pytest.skip(f"{cc} cannot build and run thread-sanitized programs here")
    exe = tmp_path / "check_ring"
    build = subprocess.run(
        [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread", *flags,
         f"-I{ROOT / 'csrc'}", str(ROOT / "tests" / "csrc" / "check_ring.c"),
         str(ROOT / "csrc" / "ring.c"), "-o", str(exe)],
        capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe), str(messages), str(4096 + 192), mode],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"ring checks passed: {messages} messages" in run.stdout
    if mode == "wait":
        slept = int(run.stdout.split("the producer slept ")[1].split()[0])
        assert slept > 0, run.stdout         # the ring did fill, and woke its producer
