"""What a requirements file says beyond its pins: platform markers, the install command its comment
gives, a GPU package with no CUDA named, a companion from another torch release. Each from a real
corpus file (tests/corpus/init/requirements/) and hostile variants of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envkit.adopt import AdoptOptions, plan_adoption, read_evidence
from envkit.adopt.adoption import Adoption
from envkit.adopt.evidence import AdoptError
from envkit.catalog import load_catalog

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "init" / "requirements"


def adopt_file(path: Path) -> Adoption:
    found, _ = read_evidence(str(path))
    return plan_adoption(found, load_catalog(), AdoptOptions())


def adopt_text(tmp_path: Path, text: str, name: str = "requirements.txt") -> Adoption:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return adopt_file(path)


def facts(adoption: Adoption) -> tuple[str, str, str]:
    return adoption.detected.get("torch", ""), adoption.detected["cuda"], adoption.detected["python"]


# --- platform markers -------------------------------------------------------------------------


def test_the_linux_line_of_a_marker_split_file_is_read_not_the_last_one() -> None:
    """nunif-iw3: torch for darwin, linux and win32 on three lines; the win32 line came last and the
    cpu index first, so the spec was torch 2.12.0 *cpu*. Linux reads the linux line: cu130."""
    adoption = adopt_file(CORPUS / "nunif-iw3-requirements-torch.txt")
    assert facts(adoption)[:2] == ("2.12.0", "13.0")
    lost = " | ".join(str(x) for x in adoption.lost)
    assert 'sys_platform == "win32"' in lost and 'sys_platform == "darwin"' in lost
    assert "does not hold on Linux" in lost


@pytest.mark.parametrize(
    ("marker", "kept"),
    [
        ('sys_platform == "linux"', True),
        ("platform_system == 'Linux'", True),
        ('sys_platform != "darwin"', True),
        ('sys_platform == "darwin"', False),
        ("platform_system == 'Windows'", False),
        ('os_name == "nt"', False),
        ('python_version < "3.11"', True),  # decided with the Python, not here
        ('extra == "gpu"', True),
        ('sys_platform == "win32" or python_version >= "3.12"', True),
    ],
)
def test_only_a_platform_marker_that_cannot_hold_on_linux_sets_a_line_aside(
    tmp_path: Path, marker: str, kept: bool
) -> None:
    text = f"torch==2.4.1+cu121; {marker}\n"
    if kept:
        assert facts(adopt_text(tmp_path, text))[:2] == ("2.4.1", "12.1")
        return
    with pytest.raises(AdoptError) as e:  # the only torch line is another platform's: no torch-less spec
        adopt_text(tmp_path, text)
    assert "does not hold on Linux" in e.value.message and "would lose torch" in e.value.message


def test_an_aarch64_only_line_is_set_aside_on_x86_64(tmp_path: Path) -> None:
    text = 'torch==2.4.1+cu121; platform_machine == "x86_64"\ntorch==2.4.1; platform_machine == "aarch64"\n'
    assert facts(adopt_text(tmp_path, text))[:2] == ("2.4.1", "12.1")


# --- the install command a comment gives ----------------------------------------------------


def test_the_install_command_in_the_comment_names_the_index_and_the_python() -> None:
    """autovoice: `torch==2.5.1` alone is PyPI's cu124 wheel; the header says the file is installed
    with `--index-url .../cu121` and verified on Python 3.12.12."""
    adoption = adopt_file(CORPUS / "autovoice-requirements-cu121.txt")
    assert facts(adoption) == ("2.5.1", "12.1", "3.12")
    assert any("the install command the file states" in n for n in adoption.notes)


def test_the_paddle_index_of_the_install_comment_is_read() -> None:
    adoption = adopt_file(CORPUS / "universal-paddle-requirements-gpu.txt")
    assert (adoption.detected["paddle"], adoption.detected["cuda"]) == ("3.3.1", "12.6")
    assert any("base.txt" in x.item for x in adoption.lost)  # the include that is not there


@pytest.mark.parametrize(
    "comment",
    [
        "# pip install -r other.txt --index-url https://download.pytorch.org/whl/cu121",  # another file
        "# For CUDA 11.8 use --index-url https://download.pytorch.org/whl/cu121",  # no install command
        "# pip install -r requirements.txt",  # no index
        "# pip install -r requirements.txt --index-url 'https://download.pytorch.org/whl/cu121",  # quotes
    ],
)
def test_a_comment_that_is_not_this_files_install_command_with_an_index_is_not_read(
    tmp_path: Path, comment: str
) -> None:
    adoption = adopt_text(tmp_path, f"{comment}\ntorch==2.5.1\n")
    assert facts(adoption)[:2] == ("2.5.1", "12.4")  # PyPI's wheel, as the file alone installs


def test_a_hostile_install_comment_is_not_read(tmp_path: Path) -> None:
    text = "# pip install -r requirements.txt --index-url https://x.example/$(rm -rf ~)\ntorch==2.5.1\n"
    adoption = adopt_text(tmp_path, text)
    assert facts(adoption)[:2] == ("2.5.1", "12.4")
    assert any("shell syntax in a comment" in x.why for x in adoption.lost)
    assert not any("x.example" in n for n in adoption.notes)


# --- a GPU package whose CUDA is not named ------------------------------------------------------


def test_paddle_gpu_3_without_an_index_asks_for_the_cuda_never_writes_cpu(tmp_path: Path) -> None:
    """PyPI has no GPU wheel of paddle 3.x: the spec was `paddle 3.3.1, cpu` with exit 0."""
    source = tmp_path / "gpu.txt"
    text = (CORPUS / "universal-paddle-requirements-gpu.txt").read_text("utf-8")
    source.write_text("".join(x for x in text.splitlines(True) if not x.startswith("#")), "utf-8")
    with pytest.raises(AdoptError) as e:
        adopt_file(source)
    assert "paddlepaddle-gpu==3.3.1" in e.value.message and "no CUDA version" in e.value.message
    assert "--cuda" in (e.value.hint or "")


def test_paddle_gpu_2_6_is_still_pypis_cuda_11_8(tmp_path: Path) -> None:
    assert adopt_text(tmp_path, "paddlepaddle-gpu==2.6.1\n").detected["cuda"] == "11.8"


# --- a companion of another torch release -------------------------------------------------------


def test_a_companion_of_another_release_is_refused_with_both_pins(tmp_path: Path) -> None:
    """drivellava: torch==2.1.2 beside torchaudio==2.2.0 (whose wheel requires torch==2.2.0)."""
    source = tmp_path / "requirements-torch.txt"
    shutil.copy(CORPUS / "drivellava-requirements-torch.txt", source)
    with pytest.raises(AdoptError) as e:
        read_evidence(str(source))
    assert "torchaudio==2.2.0" in e.value.message and "torch==2.1.2" in e.value.message


@pytest.mark.parametrize(
    "text",
    [
        "torch==2.1.2\ntorchvision==0.16.2\ntorchaudio==2.1.2\n",  # one release
        "torch==2.1.2+cu121\ntorchvision==0.16.2+cu121\n",  # local versions
        "torch==2.13.0\ntorchaudio==2.11.0\n",  # no pairing recorded: torchaudio 2.11 requires no torch
        "torch>=2.1\ntorchaudio==2.2.0\n",  # a range: pip picks the torch that fits
    ],
)
def test_companions_of_the_same_release_or_unjudged_are_accepted(tmp_path: Path, text: str) -> None:
    source = tmp_path / "requirements.txt"
    source.write_text(text, "utf-8")
    read_evidence(str(source))


def test_a_mismatched_torchvision_is_refused_too(tmp_path: Path) -> None:
    source = tmp_path / "requirements.txt"
    source.write_text("torch==2.5.1+cu121\ntorchvision==0.19.1+cu121\n", "utf-8")
    with pytest.raises(AdoptError, match="torchvision"):
        read_evidence(str(source))
