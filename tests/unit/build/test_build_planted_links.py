"""Issue 24, class 3: the build log (its name is predictable from the repository) is never written
through a link, and nothing is written when ``.envkit`` leads out of the project.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.build.builder import Builder, BuildOptions
from envkit.engine.testing import FakeEngine
from envkit.errors import EnvkitError
from envkit.spec.load import LoadedSpec

VICTIM = "# the victim's ~/.bashrc\n"


def test_a_planted_build_log_link_is_replaced_and_its_target_untouched(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, tmp_path: Path
) -> None:
    first = builder.build(loaded, BuildOptions(offline=True))
    assert first.log_path is not None
    log = Path(first.log_path)
    victim = tmp_path / "bashrc"
    victim.write_text(VICTIM)
    log.unlink()
    log.symlink_to(victim)  # the name is NAME-<hash12>.log: anyone who can read the repo knows it
    again = builder.build(loaded, BuildOptions(offline=True, nocache=True))
    assert again.log_path == first.log_path
    assert victim.read_text() == VICTIM
    assert not log.is_symlink() and "Step 2/2" in log.read_text()


def test_a_linked_envkit_directory_is_refused_before_anything_is_written(
    builder: Builder, loaded: LoadedSpec, root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside-home")  # not under the project (root is tmp_path)
    (root / ".envkit").symlink_to(outside)
    with pytest.raises(EnvkitError, match="outside"):
        builder.build(loaded, BuildOptions(offline=True))
    assert list(outside.iterdir()) == []
