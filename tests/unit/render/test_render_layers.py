"""Image layers by package group (issue 47): the groups of the shipped locks, per-group lock files
whose bytes follow their packages only, and a Dockerfile whose layer stages read only their files."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from envkit.lock import PipPackage, current_lock
from envkit.lock.lockfile import requirements_lock
from envkit.render import render_image
from envkit.render.dockerfile import DockerfileInputs
from envkit.render.layers import LayerGroup, group_lock, group_of, layer_groups
from envkit.spec.load import LoadedSpec, load_spec

REPO = Path(__file__).resolve().parents[3]
HEADER = "# test\n"


def _flagship(name: str = "cuda11.8-paddle2.6") -> tuple[LoadedSpec, dict[str, tuple[PipPackage, ...]]]:
    loaded = load_spec(REPO / "environments" / f"{name}.yaml")
    state = current_lock(loaded, REPO / "images" / name)
    assert state.lock is not None
    return loaded, dict(state.lock.contents.pip)


def _names(groups: tuple[LayerGroup, ...]) -> dict[str, tuple[str, ...]]:
    return {g.name: g.packages for g in groups}


def test_the_flagship_lock_splits_into_cuda_framework_native_python() -> None:
    loaded, pip = _flagship()
    groups = _names(layer_groups(loaded.resolved, pip))
    assert list(groups) == ["cuda", "framework", "native", "python"]
    assert len(groups["cuda"]) == 11 and all(n.startswith("nvidia-") for n in groups["cuda"])
    assert groups["framework"] == ("paddlepaddle-gpu",)
    assert groups["native"] == ("numpy", "pillow", "protobuf", "scipy")
    assert "httpx" in groups["python"] and "typing-extensions" in groups["python"]


@pytest.mark.parametrize(
    ("name", "framework", "extra_cuda", "seeds"),
    [
        ("cuda12.4-torch2.5", ("torch", "triton"), (), ()),
        # torch 2.15's own cuda-* dependencies join NVIDIA's wheels; its setuptools pin is a venv seed
        ("cuda13.2-torch2.15", ("torch", "triton"), ("cuda-bindings", "cuda-toolkit"), ("setuptools",)),
    ],
)
def test_torch_locks_group_triton_with_torch(
    name: str, framework: tuple[str, ...], extra_cuda: tuple[str, ...], seeds: tuple[str, ...]
) -> None:
    loaded, pip = _flagship(name)
    groups = _names(layer_groups(loaded.resolved, pip))
    assert groups["framework"] == framework
    assert set(extra_cuda) <= set(groups["cuda"])
    assert groups.get("venv", ()) == seeds
    assert "numpy" in groups["native"] and "sympy" in groups["python"]


@pytest.mark.parametrize(
    ("name", "urls", "group"),
    [
        ("Pillow", ["https://x/pillow-10.0.0-cp311-cp311-manylinux_2_28_x86_64.whl"], "native"),
        ("six", ["https://x/six-1.16.0-py2.py3-none-any.whl"], "python"),
        # pure on one platform, compiled on another: native (its layer differs per platform)
        (
            "pyyaml",
            ["https://x/PyYAML-6.0-py3-none-any.whl", "https://x/PyYAML-6.0-cp311-cp311-linux_aarch64.whl"],
            "native",
        ),
        ("oldpkg", ["https://x/oldpkg-1.0.tar.gz"], "native"),  # an sdist: built, may compile
        (
            "nvidia_cudnn_cu12",
            ["https://x/nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl"],
            "cuda",
        ),
        ("cuda-python", ["https://x/cuda_python-12.6.0-py3-none-any.whl"], "cuda"),
        ("setuptools", ["https://x/setuptools-80.0.0-py3-none-any.whl"], "venv"),
        ("Torch", ["https://x/torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl"], "framework"),
    ],
)
def test_group_of(name: str, urls: list[str], group: str) -> None:
    assert group_of(name, urls, {"torch"}) == group


def _bump(
    pip: dict[str, tuple[PipPackage, ...]], name: str, version: str, digest: str
) -> dict[str, tuple[PipPackage, ...]]:
    return {
        platform: tuple(
            replace(p, version=version, hashes=(digest,)) if p.name == name else p for p in packages
        )
        for platform, packages in pip.items()
    }


@pytest.mark.parametrize(
    ("bumped", "changed"), [("httpx", "python"), ("scipy", "native"), ("paddlepaddle-gpu", "framework")]
)
def test_a_bump_changes_its_group_lock_only(bumped: str, changed: str) -> None:
    """A layer's lock file (its cache key and its bytes' source) depends on its packages alone."""
    loaded, pip = _flagship()
    after = _bump(pip, bumped, "99.0", "f" * 64)
    before_text = requirements_lock("", pip, ())
    after_text = requirements_lock("", after, ())
    groups = layer_groups(loaded.resolved, pip)
    assert _names(layer_groups(loaded.resolved, after)) == _names(groups)
    for group in groups:
        same = group_lock(before_text, group, HEADER) == group_lock(after_text, group, HEADER)
        assert same is (group.name != changed), group.name
    changed_lock = group_lock(after_text, next(g for g in groups if g.name == changed), HEADER)
    assert f"{bumped}==99.0 \\\n    --hash=sha256:{'f' * 64}\n" in changed_lock


def test_group_locks_partition_the_lock() -> None:
    loaded, pip = _flagship()
    text = (REPO / "images" / "cuda11.8-paddle2.6" / "requirements.lock").read_text()
    pins = [line for line in text.splitlines() if re.match(r"^[A-Za-z0-9]", line)]
    split = [
        line
        for group in layer_groups(loaded.resolved, pip)
        for line in group_lock(text, group, HEADER).splitlines()
        if re.match(r"^[A-Za-z0-9]", line)
    ]
    assert sorted(split) == sorted(pins)
    hashes = sum(1 for line in text.splitlines() if "--hash=" in line)
    assert hashes == sum(
        group_lock(text, g, HEADER).count("--hash=") for g in layer_groups(loaded.resolved, pip)
    )


def test_layer_stages_read_only_their_own_files() -> None:
    """Each layer stage copies its lock file and wheels folder and nothing else of the context; the
    runtime stage copies each stage's /stage in layer order, the seeded venv first."""
    loaded, _ = _flagship("cuda13.2-torch2.15")
    state = current_lock(loaded, REPO / "images" / "cuda13.2-torch2.15")
    inputs = DockerfileInputs.from_lock(loaded.sha256, state, wheelhouse="wheels", resolved=loaded.resolved)
    text = render_image(loaded, inputs).files["Dockerfile"].decode()
    stages = re.split(r"\n(?=FROM )", text)[1:]  # [0]: the generated header
    for stage in stages[1:-1]:
        group = re.match(r"FROM builder AS layer-(\w+)", stage)
        assert group, stage[:60]
        copies = re.findall(r"^COPY (\S+)", stage, re.MULTILINE)
        assert copies == [f"wheels/{group.group(1)}/", f"layers/{group.group(1)}.lock"]
        assert (
            f"--find-links /tmp/envkit/{group.group(1)} -r /tmp/envkit/layers/{group.group(1)}.lock" in stage
        )
    builder = stages[0]
    assert "COPY wheels/venv/ /tmp/envkit/venv/" in builder and "layers/venv.lock" in builder
    assert builder.index("layers/venv.lock") < builder.index("/tmp/envkit-venv.files")
    runtime = re.findall(r"^COPY --from=(\S+) (\S+) (\S+)$", stages[-1], re.MULTILINE)
    assert runtime == [
        ("builder", "/opt/env", "/opt/env"),
        *[(f"layer-{g}", "/stage/", "/opt/env/") for g in ("cuda", "framework", "native", "python")],
    ]
    cuda = next(s for s in stages if s.startswith("FROM builder AS layer-cuda"))
    assert "ln -sfn" in cuda  # the CUDA links are made beside NVIDIA's wheels, in their layer
    assert "ln -sfn" not in builder


def test_a_layer_stage_is_labelled_by_its_last_step() -> None:
    """The build cache is found by the stage's label: set first, a build stopped inside the stage (or a
    step that failed) left a labelled image with no /stage, which the next build took as its cache and
    failed on ("COPY failed: stat stage/: file does not exist", found by a CI run killed mid-build)."""
    from envkit.engine.protocol import LAYER_LABEL

    loaded, _ = _flagship("cuda13.2-torch2.15")
    state = current_lock(loaded, REPO / "images" / "cuda13.2-torch2.15")
    inputs = DockerfileInputs.from_lock(loaded.sha256, state, wheelhouse="wheels", resolved=loaded.resolved)
    text = render_image(loaded, inputs).files["Dockerfile"].decode()
    stages = [s for s in re.split(r"\n(?=FROM )", text) if s.startswith("FROM builder AS layer-")]
    assert len(stages) == 4
    for stage in stages:
        steps = re.findall(r"^[A-Z]+ ", stage, re.MULTILINE)
        assert steps[-1] == "LABEL " and stage.count(LAYER_LABEL) == 1, stage[-300:]
        lines = [line for line in stage.splitlines() if line.strip() and not line.startswith("#")]
        assert lines[-1].startswith(f"LABEL {LAYER_LABEL}=")


def test_conda_and_unlocked_specs_keep_one_environment_layer() -> None:
    loaded = load_spec(REPO / "environments" / "cuda12.6-paddle3.0.yaml")
    text = render_image(loaded).files["Dockerfile"].decode()
    assert "layer-" not in text and "COPY --from=builder /opt/env /opt/env" in text


def test_layered_dockerfile_passes_hadolint(tmp_path: Path) -> None:
    import json
    import subprocess

    from tests.unit.render.test_render import hadolint

    loaded, _ = _flagship("cuda13.2-torch2.15")
    state = current_lock(loaded, REPO / "images" / "cuda13.2-torch2.15")
    inputs = DockerfileInputs.from_lock(loaded.sha256, state, wheelhouse="wheels", resolved=loaded.resolved)
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_bytes(render_image(loaded, inputs).files["Dockerfile"])
    done = subprocess.run(
        [hadolint(), "--no-color", "--format", "json", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )
    findings = json.loads(done.stdout or "[]")
    assert not [f for f in findings if f["level"] == "error" or f["code"] == "DL4006"], findings


def test_reuse_stages_starts_a_layer_stage_from_a_kept_image() -> None:
    from envkit.render.layers import reuse_stages

    text = (
        "FROM base AS builder\nRUN venv\n"
        "\nFROM builder AS layer-cuda\nCOPY wheels/cuda/ /tmp/envkit/cuda/\nRUN pip install cuda\n"
        "\nFROM builder AS layer-python\nCOPY wheels/python/ /tmp/envkit/python/\nRUN pip install six\n"
        "\n# runtime\nFROM base AS runtime\nCOPY --from=layer-cuda /stage/ /opt/env/\n"
    )
    out = reuse_stages(text, {"cuda": "sha256:" + "a" * 64})
    assert out == text.replace(
        "FROM builder AS layer-cuda\nCOPY wheels/cuda/ /tmp/envkit/cuda/\nRUN pip install cuda\n",
        f"FROM sha256:{'a' * 64} AS layer-cuda\n",
    )
    assert "RUN pip install six" in out and "COPY --from=layer-cuda /stage/ /opt/env/" in out
    with pytest.raises(ValueError, match="no layer stage framework"):
        reuse_stages(text, {"framework": "sha256:b"})


def test_ldconfig_follows_the_cuda_group_and_the_recipes_cover_the_groups_above() -> None:
    """The ``ldconfig`` step right after the ``cuda`` group's copy (it indexes that group's links only):
    a change to a group above leaves it and everything below as the engine has them, and each layer
    above has a recipe that makes it again alone (issue 47: the flagship's one-pin rebuild saved the
    whole 6.8 GB image to normalize its few changed MB)."""
    from envkit.render.dockerfile import top_copies

    loaded, _ = _flagship()
    state = current_lock(loaded, REPO / "images" / loaded.spec.name)
    inputs = DockerfileInputs.from_lock(loaded.sha256, state, wheelhouse="wheels", resolved=loaded.resolved)
    inputs = replace(inputs, sbom="sbom.cdx.json")
    runtime = render_image(loaded, inputs).files["Dockerfile"].decode().rsplit("\nFROM ", 1)[1]
    steps = [line.split(" \\")[0] for line in runtime.splitlines() if line[:4] in ("COPY", "RUN ")]
    assert steps[-6:] == [
        "COPY --from=layer-cuda /stage/ /opt/env/",
        "RUN printf '%s\\n' /opt/env/lib/cuda > /etc/ld.so.conf.d/envkit-cuda.conf",
        "COPY --from=layer-framework /stage/ /opt/env/",
        "COPY --from=layer-native /stage/ /opt/env/",
        "COPY --from=layer-python /stage/ /opt/env/",
        "COPY sbom.cdx.json /opt/env/share/envkit/sbom.cdx.json",
    ]
    stages = {"cuda": "sha256:" + "c" * 64, "framework": "sha256:" + "f" * 64, "native": "sha256:" + "a" * 64,
              "python": "sha256:" + "b" * 64}  # fmt: skip
    sbom = ("sbom.cdx.json", b"{}")
    recipes = top_copies(inputs.layers, True, stages, sbom)
    assert [r.dockerfile.splitlines()[0] for r in recipes] == [
        f"FROM {stages['framework']} AS source",
        f"FROM {stages['native']} AS source",
        f"FROM {stages['python']} AS source",
        "FROM scratch",
    ]
    assert all(r.dockerfile.count("\nCOPY ") == 1 and "FROM scratch\n" in r.dockerfile for r in recipes)
    assert recipes[-1].files == (sbom,)
    # a group without a kept stage: only the layers above it can be made alone
    without_native = {k: v for k, v in stages.items() if k != "native"}
    assert len(top_copies(inputs.layers, True, without_native, sbom)) == 2
    # without NVIDIA's wheels (no ldconfig step) every group's copy is a top layer
    assert len(top_copies(inputs.layers, False, stages, None)) == 4
