"""Each policy check with a failing and a passing case."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from envkit.audit.policy import PolicyContext, python_eol, run_policy
from envkit.catalog import load_catalog
from envkit.engine.protocol import ImageInfo
from envkit.inventory.models import Inventory, Package
from envkit.lock import PipPackage, current_lock, lock_environment
from envkit.lock.lockset import set_digest
from envkit.lock.testing import FakeCondaSolver, FakePipResolver
from envkit.render.dockerfile import LOCK_LABEL, DockerfileInputs, labels
from envkit.spec.load import LoadedSpec
from envkit.spec.models import Spec
from envkit.spec.resolve import resolve_spec

TODAY = date(2026, 1, 15)
SHA = "a" * 64
DIGEST = "sha256:" + "b" * 64


def spec(**kw: object) -> Spec:
    data: dict[str, object] = {"name": "env", "python": "3.12", "cuda": "cpu", "installer": "venv"}
    data.update(kw)
    return Spec.model_validate(data)


def ctx(**kw: object) -> PolicyContext:
    base: dict[str, object] = {"catalog": load_catalog(), "today": TODAY}
    base.update(kw)
    return PolicyContext(**base)  # type: ignore[arg-type]


def ids(context: PolicyContext) -> list[str]:
    return sorted(f.id for f in run_policy(context))


LOCKED = {"pip": ["numpy>=1.24"]}  # the spec the lock in context_dir was made from


def _loaded(the_spec: Spec, path: Path, sha: str) -> LoadedSpec:
    """A spec as ``load_spec`` returns it, without a file."""
    return LoadedSpec(the_spec, path, sha, resolve_spec(the_spec, load_catalog()))


def context_dir(tmp_path: Path, lock: bool, dockerfile: str = f"FROM ubuntu:22.04@{DIGEST}\n") -> Path:
    """images/env with a Dockerfile and, when ``lock``, a venv spec's lock made by the fake solvers."""
    folder = tmp_path / "images" / "env"
    folder.mkdir(parents=True)
    (folder / "Dockerfile").write_text(dockerfile, "utf-8")
    if lock:
        pip = FakePipResolver((PipPackage("numpy", "1.26.4", "https://x/numpy.whl", ("c" * 64,)),))
        loaded = _loaded(spec(**LOCKED), Path("environments/env.yaml"), SHA)
        lock_environment(loaded, folder, FakeCondaSolver(), pip)
    return folder


def locked(folder: Path, the_spec: Spec | None = None, sha: str = SHA, **kw: object) -> PolicyContext:
    """A context for ``folder`` with the lock state ``envkit.lock.current_lock`` gives."""
    the_spec = the_spec or spec(**LOCKED)
    state = current_lock(_loaded(the_spec, Path("environments/env.yaml"), sha), folder)
    return ctx(spec=the_spec, spec_sha256=sha, image_dir=folder, lock=state, **kw)


def test_clean_environment_passes_every_check(tmp_path: Path) -> None:
    folder = context_dir(tmp_path, lock=True)
    assert ids(locked(folder)) == []
    # what no solver sees does not stale the lock
    assert ids(locked(folder, spec(**LOCKED, description="another", env={"A": "1"}), sha="d" * 64)) == []


def test_lock_missing(tmp_path: Path) -> None:
    assert ids(locked(context_dir(tmp_path, lock=False))) == ["lock-missing"]


def test_lock_stale(tmp_path: Path) -> None:
    folder = context_dir(tmp_path, lock=True)
    assert ids(locked(folder, spec(pip=["numpy>=1.25"]))) == ["lock-stale"]
    (folder / "requirements.lock").unlink()
    found = run_policy(locked(folder))
    assert [f.id for f in found] == ["lock-stale"] and "requirements.lock is missing" in found[0].message


def test_lock_without_hashes(tmp_path: Path) -> None:
    folder = context_dir(tmp_path, lock=True)
    text = (folder / "requirements.lock").read_text("utf-8")
    header = "".join(text.splitlines(keepends=True)[:2])
    unhashed = f"{header}numpy==1.26.4\nscipy==1.11.0 \\\n    --hash=sha256:{'e' * 64}\n"
    (folder / "requirements.lock").write_text(unhashed, "utf-8")
    found = [f for f in run_policy(locked(folder)) if f.id != "lock-stale"]
    assert [f.id for f in found] == ["lock-no-hashes"]
    assert "numpy" in found[0].message and "scipy" not in found[0].message


def test_spec_unpinned() -> None:
    found = run_policy(ctx(spec=spec(pip=["requests", "numpy>=1.24"], conda=["ffmpeg", "zlib>=1.2"])))
    assert [f.id for f in found] == ["spec-unpinned"]
    assert "requests" in found[0].message and "ffmpeg" in found[0].message and "numpy" not in found[0].message


def test_base_image_not_pinned_by_digest(tmp_path: Path) -> None:
    folder = context_dir(
        tmp_path,
        True,
        "FROM ubuntu:22.04 AS builder\nFROM builder AS x\nFROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\n",
    )
    found = run_policy(locked(folder))
    assert sorted(f.message.split()[2] for f in found) == [
        "nvidia/cuda:11.8.0-runtime-ubuntu22.04",
        "ubuntu:22.04",
    ]
    assert {f.id for f in found} == {"base-image-unpinned"}
    assert ids(ctx(spec=spec(base_image=f"ubuntu:22.04@{DIGEST}"))) == []
    assert ids(ctx(spec=spec(base_image="ubuntu:22.04"))) == ["base-image-unpinned"]


def test_installer_without_checksum(tmp_path: Path) -> None:
    unchecked = f"FROM ubuntu:22.04@{DIGEST}\nRUN curl -fsSL -o /tmp/i.sh https://x/i.sh && bash /tmp/i.sh\n"
    checked = unchecked.replace("&& bash", '&& echo "x  /tmp/i.sh" | sha256sum -c - && bash')
    assert ids(ctx(image_dir=context_dir(tmp_path / "a", False, unchecked))) == ["installer-unverified"]
    assert ids(ctx(image_dir=context_dir(tmp_path / "b", False, checked))) == []
    # the catalog has no verified micromamba installer for aarch64 -> flagged; miniconda x86_64 is verified
    assert ids(ctx(spec=spec(installer="miniconda", python="3.11"))) == []
    catalog = load_catalog()
    if catalog.installer("micromamba", "aarch64") is None:
        assert ids(ctx(spec=spec(installer="micromamba", platforms=["linux-aarch64"]))) == [
            "installer-unverified"
        ]


def image(user: str = "envkit", labels: dict[str, str] | None = None) -> ImageInfo:
    return ImageInfo(id="sha256:1", tags=("t:1",), labels=labels or {}, user=user, size=1)


@pytest.mark.parametrize(
    ("user", "flagged"), [("", True), ("root", True), ("0:0", True), ("envkit", False), ("1000:1000", False)]
)
def test_image_user_root(user: str, flagged: bool) -> None:
    assert ids(ctx(image=image(user), image_ref="t:1")) == (["image-user-root"] if flagged else [])


def test_image_built_from_another_lock(tmp_path: Path) -> None:
    folder = context_dir(tmp_path, lock=True)
    state = current_lock(_loaded(spec(**LOCKED), Path("env.yaml"), SHA), folder)
    # the label the build writes (render's labels from the lock state) is the digest the audit compares
    current = labels(spec(), DockerfileInputs.from_lock(SHA, state))[LOCK_LABEL]
    # ... the digest over the whole lock set, which includes what the image installs from
    names = ("conda-lock.yml", "requirements.lock")
    assert current == set_digest({name: (folder / name).read_bytes() for name in names})
    assert ids(ctx(image=image(labels={LOCK_LABEL: current}), image_dir=folder, lock=state)) == []
    assert ids(ctx(image=image(labels={LOCK_LABEL: "f" * 64}), image_dir=folder, lock=state)) == [
        "image-lock-mismatch"
    ]
    assert ids(ctx(image=image(), image_dir=folder, lock=state)) == ["image-lock-mismatch"]
    # a stale lock is not built from: lock-stale says so, the label is not compared with it
    stale = spec(pip=["numpy>=1.25"])
    assert ids(locked(folder, stale, image=image(labels={LOCK_LABEL: "f" * 64}))) == ["lock-stale"]


def inventory(*pairs: tuple[str, str]) -> Inventory:
    packages = tuple(
        Package(n, n.removeprefix("conda:"), v, "conda" if n.startswith("conda:") else "pip")
        for n, v in pairs
    )
    return Inventory("x", "x.txt", "pip-freeze", packages)


def test_known_bad_combination() -> None:
    found = run_policy(ctx(inventory=inventory(("torch", "2.1.2"), ("numpy", "2.0.1"))))
    assert [(f.id, f.severity) for f in found] == [("known-bad:torch-numpy2", "critical")]
    assert ids(ctx(inventory=inventory(("torch", "2.1.2"), ("numpy", "1.26.4")))) == []


def test_cuda_minimum_driver() -> None:
    gpu = spec(cuda="12.4", installer="miniconda", python="3.11")
    assert ids(ctx(spec=gpu, driver="535.104.05")) == ["cuda-driver"]
    assert ids(ctx(spec=gpu, driver="550.54.14")) == []
    assert ids(ctx(spec=gpu)) == []
    assert ids(ctx(inventory=inventory(("conda:cudatoolkit", "11.8.0")), driver="470.1")) == ["cuda-driver"]


def test_python_end_of_life() -> None:
    assert ids(ctx(spec=spec(python="3.9"))) == ["python-eol"]
    assert ids(ctx(spec=spec(python="3.12"))) == []
    assert ids(ctx(inventory=inventory(("conda:python", "3.8.18")))) == ["python-eol"]
    # a scheduled month-only date counts until that month's last day
    assert python_eol()["3.10"] == date(2026, 10, 31)


def test_known_bad_uses_the_version_python_imports() -> None:
    """conda numpy 1.26 shadowed by pip numpy 2.0: torch 2.1 meets NumPy 2 (pip wins, as on sys.path)."""
    packages = (
        Package("torch", "torch", "2.1.2", "pip"),
        Package("numpy", "numpy", "1.26.4", "conda", build="py311h64a7726_0"),
        Package("numpy", "numpy", "2.0.1", "pip"),
    )
    found = ids(ctx(inventory=Inventory("x", "x.yml", "env-export", packages)))
    assert found == ["known-bad:torch-numpy2"]
