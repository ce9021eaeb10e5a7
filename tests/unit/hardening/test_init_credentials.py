"""``envkit init --from``: no credential from a source reaches the spec, its comments or the output.

Finding 9 of the third review: ``ENV PIP_INDEX_URL=https://user:password@…`` and ``ENV HF_TOKEN=…``
were copied into the spec's ``env:`` (so into the rendered Dockerfile and the image's config), a
GitLab ``?private_token=`` survived into ``mirrors.pypi``, and a token in a URL's path (Cloudsmith
style) was carried. ENV values and every URL are now treated as ``-i`` URLs were: credentials
stripped, or the value not carried, with a "not carried" line saying what was dropped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from envkit.cli import main

SECRET = "Zq9xK2mW7pL4vN8r"  # 16 letters and digits, mixed case: the shape of an entitlement token


def _adopt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> tuple[int, str, dict[str, object]]:
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path / "repo"))
    (tmp_path / "repo").mkdir(exist_ok=True)
    (tmp_path / name).write_text(text)
    code = main(["init", "--from", str(tmp_path / name), "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert SECRET not in out + err, out + err
    specs = sorted((tmp_path / "repo").rglob("*.yaml"))
    spec = specs[0].read_text() if specs else ""
    assert SECRET not in spec, spec
    return code, spec, json.loads(out)


def _lost(result: dict[str, object]) -> str:
    data = result["result"]
    assert isinstance(data, dict)
    return json.dumps(data["not_carried"])


def test_dockerfile_env_credentials_stay_out_of_the_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The finding: both values were in the spec's env: (and so in the image)."""
    text = (
        "FROM python:3.11-slim\n"
        f"ENV PIP_INDEX_URL=https://deploy:{SECRET}@pypi.corp.example/simple\n"
        f"ENV HF_TOKEN=hf_{SECRET}\n"
        "ENV OMP_NUM_THREADS=1\n"
        "RUN pip install six==1.16.0\n"
    )
    code, spec, result = _adopt(tmp_path, monkeypatch, capsys, "Dockerfile", text)
    assert code == 0
    env = yaml.safe_load(spec)["env"]
    assert env["OMP_NUM_THREADS"] == "1"
    assert env["PIP_INDEX_URL"] == "https://pypi.corp.example/simple"  # carried without them
    assert "HF_TOKEN" not in env
    lost = _lost(result)
    assert "a credential by its name" in lost and "removed from its URL" in lost


def test_gitlab_private_token_is_not_carried_into_the_mirror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"https://gitlab.example/api/v4/projects/42/packages/pypi/simple?private_token={SECRET}"
    code, spec, result = _adopt(tmp_path, monkeypatch, capsys, "requirements.txt", f"-i {url}\nsix==1.16.0\n")
    assert code == 0
    assert (
        yaml.safe_load(spec)["mirrors"]["pypi"]
        == "https://gitlab.example/api/v4/projects/42/packages/pypi/simple"
    )
    assert "private_token" in _lost(result)


def test_a_token_in_the_index_path_is_not_carried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cloudsmith style: the token is a path segment; the URL cannot be cleaned, so it is not carried."""
    url = f"https://dl.cloudsmith.io/{SECRET}/acme/internal/python/simple/"
    code, spec, result = _adopt(tmp_path, monkeypatch, capsys, "requirements.txt", f"-i {url}\nsix==1.16.0\n")
    assert code == 0
    assert "mirrors" not in yaml.safe_load(spec)
    assert "access token in the path" in _lost(result)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("Dockerfile", f"FROM python:3.11\nENV WANDB_API_KEY={SECRET}\n"),
        ("Dockerfile", f"FROM python:3.11\nENV AWS_SECRET_ACCESS_KEY={SECRET}\n"),
        ("Dockerfile", f"FROM python:3.11\nENV HF_TOKEN {SECRET}\n"),  # the legacy form
        ("Dockerfile", f"FROM python:3.11\nENV PIP_PASSWORD={SECRET} PIP_USER=x\n"),
        ("Dockerfile", f"FROM python:3.11\nENV GITHUB=ghp_{SECRET}abcd\n"),  # a known shape, innocent name
        ("Dockerfile", f"FROM python:3.11\nENV AWS_KEY_ID=AKIA{SECRET.upper()}\n"),
        (
            "Dockerfile",
            f'FROM python:3.11\nENV PIP_EXTRA_INDEX_URL="https://a.example/simple https://u:{SECRET}@b.example/simple"\n',
        ),
        ("Dockerfile", f"FROM python:3.11\nENV CONDA_CHANNEL=https://conda.anaconda.org/t/{SECRET}/acme\n"),
        ("Dockerfile", f"FROM python:3.11\nENV IDX=https://pypi.fury.io/{SECRET}/acme/\n"),
        ("Dockerfile", f"FROM python:3.11\nENV IDX=https://gitlab.example/simple?job_token={SECRET}\n"),
        ("Dockerfile", f"FROM python:3.11\nENV S3=https://b.s3.example/x?X-Amz-Security-Token={SECRET}\n"),
        (
            "Dockerfile",
            f"FROM python:3.11\nARG TOKEN={SECRET}\nENV PIP_INDEX_URL=https://__token__:$TOKEN@h.example/simple\n",
        ),
        (
            "Dockerfile",
            f"FROM python:3.11\nARG HF_TOKEN={SECRET}\nRUN huggingface-cli login --token $HF_TOKEN\n",
        ),
        ("Dockerfile", f"FROM python:3.11\nRUN huggingface-cli login --token {SECRET}\n"),
        (
            "Dockerfile",
            f'FROM python:3.11\nRUN curl -H "Authorization: Bearer {SECRET}" https://x.example/a\n',
        ),
        (
            "Dockerfile",
            f"FROM python:3.11\nRUN pip config set global.index-url https://u:{SECRET}@h.example/simple\n",
        ),
        (
            "Dockerfile",
            f"FROM python:3.11\nRUN pip install -i https://h.example/simple?private_token={SECRET} six\n",
        ),
        (
            "Dockerfile",
            "FROM python:3.11\nRUN pip install --extra-index-url "
            f"https://dl.cloudsmith.io/{SECRET}/a/b/python/simple/ six\n",
        ),
        ("requirements.txt", f"--extra-index-url https://pypi.fury.io/{SECRET}/acme/\nsix==1.16.0\n"),
        ("requirements.txt", f"--index-url=https://h.example/simple?Private-Token={SECRET}\nsix==1.16.0\n"),
        ("requirements.txt", f"-i https://h.example/{SECRET.lower()}1234/simple\nsix==1.16.0\n"),  # hex-ish
        ("requirements.txt", f"six==1.16.0 --proxy https://u:{SECRET}@proxy.example:3128\n"),
        ("environment.yml", f"name: x\ndependencies:\n  - python=3.11\nvariables:\n  HF_TOKEN: {SECRET}\n"),
        (
            "environment.yml",
            f"name: x\ndependencies:\n  - python=3.11\nvariables:\n  IDX: https://u:{SECRET}@h.example/simple\n",
        ),
        (
            "environment.yml",
            f"name: x\nchannels:\n  - https://conda.anaconda.org/t/{SECRET}/acme\n"
            "dependencies:\n  - python=3.11\n",
        ),
        (
            "environment.yml",
            "name: x\ndependencies:\n  - python=3.11\n  - pip:\n"
            f"    - --index-url https://h.example/simple?private_token={SECRET}\n    - six==1.16.0\n",
        ),
    ],
)
def test_credential_variants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> None:
    code, spec, _ = _adopt(tmp_path, monkeypatch, capsys, name, text)  # SECRET nowhere: checked there
    assert code in (0, 2)
    if code == 0:
        assert main(["validate", yaml.safe_load(spec)["name"]]) == 0
        capsys.readouterr()


@pytest.mark.parametrize(
    "url",
    [
        "https://download.pytorch.org/whl/cu121",
        "https://www.paddlepaddle.org.cn/packages/stable/cu118/",
        "https://pypi.org/simple",
        "https://nexus.corp.example/repository/pypi-group/simple",
        "https://pkgs.dev.azure.com/org/project/_packaging/feed/pypi/simple/",
        "https://files.pythonhosted.org/packages/3a/4f/" + "ab12" * 15 + "/numpy-1.26.4.whl",
    ],
)
def test_ordinary_urls_are_not_taken_for_credentials(url: str) -> None:
    """The path rule is narrow: names, flavours and (outside an index) digests are no tokens."""
    from envkit._safe import redact, url_credentials

    assert url_credentials(url) is None and redact(url) == url
    if "files.pythonhosted" not in url:
        assert url_credentials(url, index=True) is None
