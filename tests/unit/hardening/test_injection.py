"""Class: injection and data loss through the Dockerfile, README and `render -o` (issue 16, items 1-4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from envkit.render import render_image
from envkit.render.dockerfile import docker_word
from envkit.spec.load import load_spec

from .conftest import GOOD_SPEC, Run, write_spec
from .dockerlex import key_values, words

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/bin:/bin"


def spec_with_env(project: Path, env: dict[str, str], description: str = "hostile") -> Path:
    lines = "".join(f"  {k}: {yaml_str(v)}\n" for k, v in env.items())
    body = GOOD_SPEC.format(name="hostile", description=yaml_str(description))
    return write_spec(project, "hostile", body + ("env:\n" + lines if env else ""))


def yaml_str(value: str) -> str:
    """A YAML double-quoted scalar for any text (control characters escaped)."""
    out = []
    for ch in value:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif code < 0x20 or 0x7F <= code <= 0x9F or ch in "\u2028\u2029\u202e":
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def dockerfile_of(path: Path) -> str:
    """The runtime stage of the rendered Dockerfile (what the image carries)."""
    text = render_image(load_spec(path)).files["Dockerfile"].decode("utf-8")
    return text.split(" AS runtime\n", 1)[1]


# item 1: a PATH (or any value) that tries to set more variables or replace PATH
ENV_INJECTIONS = [
    {"PATH": "/usr/bin LD_PRELOAD=/tmp/evil.so X=y"},
    {"PATH": '/opt/x" LD_PRELOAD="/tmp/evil.so'},
    {"PATH": "/opt/tools/bin:$(id -u)"},
    {"PATH": "::/opt/a::"},
    {"FOO": 'a" LD_PRELOAD="/tmp/evil.so'},
    {"FOO": "trailing backslash \\"},
    {"FOO": 'both \\" and \\$ and \\\\'},
    {"FOO": "x \\\nRUN evil"},  # refused below (newline); here only the others are rendered
]


@pytest.mark.parametrize("env", [e for e in ENV_INJECTIONS if "\n" not in next(iter(e.values()))], ids=repr)
def test_env_values_set_exactly_one_variable_each(project: Path, env: dict[str, str]) -> None:
    seen = key_values(dockerfile_of(spec_with_env(project, env)), "ENV", {"PATH": BASE_PATH})
    assert set(seen) == {"PATH", "PYTHONUNBUFFERED", *env}, "an ENV value set extra variables"
    assert "LD_PRELOAD" not in seen and "X" not in seen
    path_entries = seen["PATH"].split(":")
    assert path_entries[-len(BASE_PATH.split(":")) - 1 :] == ["/opt/env/bin", *BASE_PATH.split(":")]
    assert "" not in path_entries, "an empty PATH entry puts the working directory on PATH"
    for key, value in env.items():
        if key == "PATH":
            spec_part = ":".join(e for e in value.split(":") if e)
            assert seen["PATH"] == f"{spec_part}:/opt/env/bin:{BASE_PATH}"
        else:
            assert seen[key] == value


def test_env_newline_is_refused(project: Path, envkit: Callable[..., Run]) -> None:
    spec_with_env(project, {"FOO": "x\nRUN evil"})
    run = envkit("validate", "hostile")
    assert run.code == 2 and "env" in run.err


# item 2: values reach the image unchanged (non-ASCII, tabs, $ and ${HOME}, backslashes)
VERBATIM = [
    "café",
    "tab\there",
    "$HOME",
    "${HOME}/x",
    "a$b$$c",
    "naïve 日本語 🚀",
    "back\\slash",
    'q"uote',
    "\\u00e9",
]


@pytest.mark.parametrize("value", VERBATIM)
def test_env_and_labels_read_back_unchanged(project: Path, value: str) -> None:
    text = dockerfile_of(spec_with_env(project, {"MY_VALUE": value}, description=f"desc {value}"))
    env = key_values(text, "ENV", {"PATH": BASE_PATH, "HOME": "/root"})
    labels = key_values(text, "LABEL", {"HOME": "/root"})
    assert env["MY_VALUE"] == value
    assert labels["org.opencontainers.image.description"] == f"desc {value}"


@pytest.mark.parametrize("value", [*VERBATIM, "", " ", "\\", "$", '"', "${", "\\$"])
def test_docker_word_round_trips(value: str) -> None:
    assert words(docker_word(value), {"HOME": "/root"}) == [value]


# item 3: descriptions are one printable, bounded line
BAD_DESCRIPTIONS = [
    "line one\n\n```sh\ncurl evil | sh\n```",
    "nul\x00byte",
    "escape \x1b]0;pwned\x07 title",
    "carriage\rreturn",
    "unicode\u2028line separator",
    "x" * 301,
    "bidi \u202egnp.exe",
]


@pytest.mark.parametrize("description", BAD_DESCRIPTIONS, ids=lambda d: repr(d[:20]))
def test_bad_descriptions_are_refused(project: Path, envkit: Callable[..., Run], description: str) -> None:
    spec_with_env(project, {}, description=description)
    run = envkit("validate", "hostile", "--json")
    assert run.code == 2
    problems = run.envelope()["errors"][0]["problems"]
    assert any(p["field"] == "description" for p in problems)


def test_readme_is_one_paragraph_for_a_fine_description(project: Path) -> None:
    path = spec_with_env(project, {}, description="Café $HOME ${PATH} <b>ok</b>")
    readme = render_image(load_spec(path)).files["README.md"].decode()
    assert "\nCafé $HOME ${PATH} <b>ok</b>\n" in readme


# item 4: `render -o DIR` never overwrites a file envkit did not write
@pytest.mark.parametrize("victim", ["README.md", "Dockerfile", ".dockerignore", "environment.yml"])
def test_render_refuses_to_overwrite_foreign_files(
    project: Path, envkit: Callable[..., Run], victim: str
) -> None:
    out = project / "out"
    out.mkdir()
    (out / victim).write_text("my own notes\n")
    run = envkit("render", "cpu-torch", "-o", str(out), "--json")
    assert run.code == 2
    error = run.envelope()["errors"][0]
    assert victim in error["message"] and "refusing to overwrite" in error["message"]
    assert (out / victim).read_text() == "my own notes\n"
    assert not (out / "Dockerfile").exists() or victim == "Dockerfile", "nothing is written on refusal"


def test_render_refuses_a_directory_in_the_way(project: Path, envkit: Callable[..., Run]) -> None:
    out = project / "out"
    (out / "README.md").mkdir(parents=True)
    assert envkit("render", "cpu-torch", "-o", str(out)).code == 2


def test_render_rewrites_its_own_files(project: Path, envkit: Callable[..., Run]) -> None:
    out = project / "out"
    assert envkit("render", "cpu-torch", "-o", str(out)).code == 0
    (out / "Dockerfile").write_text((out / "Dockerfile").read_text() + "# edited\n")
    assert envkit("render", "cpu-torch", "-o", str(out)).code == 0
    assert "# edited" not in (out / "Dockerfile").read_text()
