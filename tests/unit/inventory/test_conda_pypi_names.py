"""Class 3 (issue 26), part: conda ``pyqt`` is PyPI ``PyQt5`` (parselmouth's conda-forge mapping)."""

from __future__ import annotations

from envkit.drift import diff_inventories
from envkit.inventory import parse_inventory
from envkit.inventory.names import project_of

ROWS = (
    "# Name  Version  Build  Channel\n"
    "pyqt  5.15.9  py311hf0fb5b6_5  conda-forge\n"
    "pyqt5  5.15.10  pypi_0  pypi\n"
    "python  3.11.9  hb806964_0_cpython  conda-forge\n"
)


def test_conda_pyqt_is_pypi_pyqt5() -> None:
    assert project_of("pyqt", "conda", "py311hf0fb5b6_5") == "pyqt5" == project_of("PyQt5", "pip")
    assert project_of("pyqt-impl", "conda", "py311h_0") == "pyqt5"


def test_a_pip_pyqt5_over_conda_pyqt_is_a_shadowing_warning() -> None:
    inv = parse_inventory(ROWS, path="conda-list.txt", label="env", format="conda-list")
    shadow = [f for f in diff_inventories([inv]).findings if f.rule == "pip-shadows-conda"]
    assert len(shadow) == 1 and shadow[0].package == "pyqt5"
    assert "conda pyqt 5.15.9 and pip pyqt5 5.15.10" in shadow[0].message


# ---- the shipped conda-forge mapping (parselmouth) -----------------------------------------


def test_pyqt_comes_from_the_mapping_not_from_the_hand_list() -> None:
    from envkit.catalog.conda_pypi import load_mapping
    from envkit.inventory.names import load_names

    assert "pyqt" not in load_names().renames
    assert load_mapping()["pyqt"] == "pyqt5"


# real entries of files/compressed_mapping.json @345e9bf whose conda name differs from the PyPI one
MAPPED = {
    "py-xgboost": "xgboost",
    "dask-core": "dask",
    "pyarrow-core": "pyarrow",
    "ray-core": "ray",
    "cupy-core": "cupy",
    "python-zstd": "zstd",
    "libopencv": "opencv-python",
    "pytorch_geometric": "torch-geometric",
    "sentencepiece-python": "sentencepiece",
    "nvidia-apex": "apex",
}


def test_real_renames_of_the_mapping() -> None:
    for conda, pypi in MAPPED.items():
        assert project_of(conda, "conda", "py311h1234567_0") == pypi, conda
        assert project_of(conda, "conda", None) == pypi, conda


def test_overrides_win_over_the_mapping() -> None:
    from envkit.catalog.conda_pypi import load_mapping

    mapping = load_mapping()
    # what the mapping itself says for the hand-listed pairs: the same
    assert (mapping["pytorch"], mapping["py-opencv"], mapping["pytables"]) == (
        "torch",
        "opencv-python",
        "tables",
    )
    # parselmouth: pytorch-gpu / faiss-cpu null (metapackages), jaxlib -> jax-cuda12-pjrt
    assert (mapping["pytorch-gpu"], mapping["faiss-cpu"], mapping["jaxlib"]) == (
        None,
        None,
        "jax-cuda12-pjrt",
    )
    assert project_of("pytorch-gpu", "conda", None) == "torch"
    assert project_of("faiss-cpu", "conda", "py311h_0") == "faiss-cpu"
    assert project_of("jaxlib", "conda", "cuda12py311h_200") == "jaxlib"
    assert project_of("pytorch", "conda", "py3.11_cuda12.1_cudnn8.9.2_0") == "torch"


def test_without_build_strings_the_mapping_tells_libraries_from_python_packages() -> None:
    # `conda env export --no-builds`: before the mapping the name's shape decided (lib* = C library)
    assert project_of("libcst", "conda", None) == "libcst"  # mapping: libcst (a Python package)
    assert project_of("openjpeg", "conda", None) == "conda:openjpeg"  # mapping: null (C library)
    assert project_of("c-ares", "conda", None) == "conda:c-ares"
    # a build string still decides for unmapped and same-named packages
    assert project_of("numpy", "conda", "py311h64a7726_0") == "numpy"
    assert project_of("openjpeg", "conda", "h5fbd93e_0") == "conda:openjpeg"


EXPORT = """\
name: tools
channels: [conda-forge]
dependencies:
  - python=3.11
  - py-xgboost=2.0.3
  - libcst=1.1.0
  - pip
  - pip:
    - xgboost==2.1.0
    - libcst==1.1.0
"""


def test_a_no_builds_export_shadows_through_the_mapping() -> None:
    inv = parse_inventory(EXPORT, path="environment.yml", label="env", format="env-export")
    shadow = {f.package: f for f in diff_inventories([inv]).findings if f.rule == "pip-shadows-conda"}
    assert set(shadow) == {"xgboost", "libcst"}
    assert "conda py-xgboost 2.0.3 and pip xgboost 2.1.0" in shadow["xgboost"].message


def test_the_shipped_copy_is_the_recorded_download() -> None:
    import gzip
    import hashlib
    import json
    from importlib import resources

    data = resources.files("envkit.catalog").joinpath("data")
    record = json.loads(data.joinpath("conda_pypi.source.json").read_text("utf-8"))
    body = gzip.decompress(data.joinpath("conda_pypi.json.gz").read_bytes())
    assert hashlib.sha256(body).hexdigest() == record["sha256"] and len(body) == record["bytes"]
    assert "BSD 3-Clause" in data.joinpath("conda_pypi.LICENSE").read_text("utf-8")
    assert "prefix-dev/parselmouth" in data.joinpath("conda_pypi.README.md").read_text("utf-8")
