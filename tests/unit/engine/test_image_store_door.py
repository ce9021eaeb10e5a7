"""Image bytes have one door: every save, load, push and pull of an image goes through an ``ImageStore``.

Read from the source (an AST scan of ``envkit/``), so a new call that moves image bytes around the
store fails here: the Docker SDK's image-byte calls (``get_image``, ``load_image``, ``push``, ``pull``)
appear in ``engine/docker_store.py`` only; outside ``engine/`` a ``.save(`` / ``.load(`` / ``.push(`` /
``.pull(`` is called on an image store (a receiver named ``*store``) or on one of the named things
below that move no image; the names of the old doors (``ImageArchive``, ``ImageTransport``,
``TarLoader``, ``DockerTransport``, ``load_from``) are gone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "envkit"
ADAPTER = "engine/docker_store.py"
SDK_CALLS = {"get_image", "load_image", "push", "pull"}
MOVES = {"save", "load", "push", "pull"}
OLD_NAMES = {"ImageArchive", "ImageTransport", "TarLoader", "DockerTransport", "FakeTransport", "load_from"}
# receivers of .save/.load outside engine/ that move no image bytes: (file, receiver)
NOT_IMAGES = {
    ("audit/flavours.py", "yaml"),
    ("audit/osv_dir.py", "yaml"),
    ("catalog/__init__.py", "yaml"),
    ("catalog/gpu.py", "yaml"),
    ("catalog/known_bad.py", "yaml"),
    ("cli/catalog_cmd.py", "recorder"),  # recorded PyPI pages
    ("comparison/many.py", "reader"),  # probe reports
    ("guard/loop.py", "self.log"),  # the guard's run log
    ("guard/runlog.py", "self"),
    ("inventory/snapshot.py", "payload"),  # the payload's snapshot.py, imported on the host
    ("readiness/wheels.py", "payload"),  # the payload's fatbin reader, imported on the host
    ("reproduce/normalize.py", "memo"),  # the layer memo (a JSON of diff_id pairs)
}


def bypasses(source: str, where: str) -> list[str]:
    """Each call in ``source`` (a file of envkit, ``where`` relative to the package) that moves image
    bytes other than through an ``ImageStore``, or names an old door."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        name = (
            node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        )
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            name = node.name
        if name in OLD_NAMES:
            found.append(f"{where}:{node.lineno}: {name}, an old door for image bytes")  # type: ignore[attr-defined]
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, receiver = node.func.attr, ast.unparse(node.func.value)
        if method in SDK_CALLS and receiver.endswith(("api", "client", "images")) and where != ADAPTER:
            found.append(f"{where}:{node.lineno}: {receiver}.{method}(), the Docker SDK outside {ADAPTER}")
        elif method in MOVES and not where.startswith("engine/"):
            last = receiver.rsplit(".", 1)[-1]
            if not last.endswith("store") and (where, receiver) not in NOT_IMAGES:
                found.append(f"{where}:{node.lineno}: {receiver}.{method}() is not an ImageStore's")
    return found


def test_no_image_bytes_move_around_the_image_store() -> None:
    found = [
        problem
        for path in sorted(PACKAGE.rglob("*.py"))
        for problem in bypasses(path.read_text("utf-8"), path.relative_to(PACKAGE).as_posix())
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ("archive.save(image, path)", "reproduce/normalize.py"),
        ("transport.load(path)", "fleet/task.py"),
        ("engine.pull(ref)", "fleet/task.py"),
        ("self.api.get_image(image, chunk_size=1)", "engine/docker_api.py"),
        ("client.images.pull('x')", "verify/image.py"),
        ("loader.load_from(fh, str(path))", "fleet/image_tar.py"),
        ("class ImageArchive: ...", "engine/protocol.py"),
        ("yaml.load(text)", "verify/image.py"),  # allowed in the files named only
    ],
)
def test_the_scan_finds_a_bypass(source: str, where: str) -> None:
    assert bypasses(source, where)


def test_the_scan_lets_the_store_and_its_adapter_through() -> None:
    assert not bypasses("store.save(image, path)\nself.store.load(fh)\nimage_store.pull(ref)", "fleet/x.py")
    assert not bypasses("self.api.get_image(image, chunk_size=1)\nself.api.push(r)", ADAPTER)
