"""The envkit error tree.

Every failure a user can act on is an :class:`EnvkitError` with a ``hint``.
The CLI catches ``EnvkitError`` once, prints ``error: ...`` and ``hint: ...``
and exits with the error's :attr:`exit_code`::

    EnvkitError                      exit 3 unless said otherwise
    ├── UsageError                   exit 2  bad arguments, unknown names
    │   ├── SpecError                exit 2  invalid spec (all problems at once)
    │   ├── _io.TooLarge             exit 2  a file over its size limit (callers name its role)
    │   ├── _io.NotRegular           exit 2  a link, FIFO or device where a file is read; an OSError too
    │   └── _yaml.YamlProblem        exit 2  YAML refused before it is parsed (aliases, depth, size)
    ├── CatalogError                 exit 3  broken catalog data (a bug in envkit)
    │   └── catalog.conda_pypi.MappingInvalid  exit 3  a conda-to-PyPI name mapping copy (a ValueError too)
    ├── LockError                    exit 3
    │   ├── Unsatisfiable            exit 2  the spec's requirements conflict
    │   └── SolverFailed             exit 3  the solver or a channel failed
    ├── EngineError                  exit 3  container engine problems
    │   ├── EngineUnavailable        exit 3
    │   ├── ContainerCommandMissing  exit 3  a container's command does not exist in its image
    │   ├── ContainerTimedOut        exit 3  a container's command ran past the run's time limit
    │   ├── ContainerOutputTooLarge  exit 3  a container's command printed more than a run reads
    │   └── BuildFailed              exit 3  (carries the log tail)
    ├── ProbeError                   exit 3
    │   └── ReportError              exit 2  unreadable or incomparable report
    ├── InventoryError               exit 2  unreadable inventory file
    ├── SbomNotCarried               exit 3  an image without the SBOM its label names
    ├── AuditError                   exit 3  advisory data or service problems
    ├── PackError                    exit 3  a download for a pack failed or did not match the lock
    │   └── PackMismatch             exit 2  a pack file that does not belong to this lock
    ├── FleetError                   exit 3  the batch scheduler (Slurm) refused or failed
    ├── GuardError                   exit 3  the training guard (envkit.guard) could not go on
    │   ├── GuardStopped             exit 1  policy "stop": a non-finite or spiking step
    │   └── DumpError                exit 2  an unreadable, tampered or foreign incident dump
    └── Interrupted                  exit 130 Ctrl-C (no traceback)

Findings (drift, divergence, vulnerabilities) are results, never exceptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "AuditError",
    "BuildFailed",
    "CatalogError",
    "ContainerCommandMissing",
    "ContainerOutputTooLarge",
    "ContainerTimedOut",
    "DumpError",
    "EngineError",
    "EngineUnavailable",
    "EnvkitError",
    "ExitCode",
    "FleetError",
    "GuardError",
    "GuardStopped",
    "Interrupted",
    "InventoryError",
    "LockError",
    "PackError",
    "PackMismatch",
    "ProbeError",
    "Problem",
    "ReportError",
    "SbomNotCarried",
    "SolverFailed",
    "SpecError",
    "Unsatisfiable",
    "UsageError",
]


class ExitCode(IntEnum):
    """Process exit codes shared by every command."""

    OK = 0
    FINDINGS = 1  # drift, divergence, vulnerabilities, stale locks
    USAGE = 2  # bad arguments or invalid input files
    FAILURE = 3  # a tool, engine or service failed
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT


class EnvkitError(Exception):
    """Base class: a message for the user and a hint on what to do."""

    exit_code: ExitCode = ExitCode.FAILURE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_json(self) -> dict[str, object]:
        return {"type": type(self).__name__, "message": self.message, "hint": self.hint}


class UsageError(EnvkitError):
    """Bad input from the user: an option, a spec, a file (exit 2)."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class Problem:
    """One problem found in an input file, located as precisely as possible."""

    file: str
    line: int | None
    field: str | None
    message: str
    hint: str | None = None

    def location(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        if self.field:
            where += f": {self.field}"
        return where

    def __str__(self) -> str:
        text = f"{self.location()}: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "field": self.field,
            "message": self.message,
            "hint": self.hint,
        }


class SpecError(UsageError):
    """An invalid spec; holds every problem found in it, not only the first."""

    def __init__(self, problems: Sequence[Problem], *, hint: str | None = None) -> None:
        self.problems = tuple(problems)
        files = sorted({p.file for p in self.problems})
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(
            f"{', '.join(files)}: {count} {noun}\n{lines}",
            hint=hint or "fix the listed fields; `envkit validate` re-checks all specs",
        )

    def to_json(self) -> dict[str, object]:
        data = super().to_json()
        data["problems"] = [p.to_json() for p in self.problems]
        return data


class CatalogError(EnvkitError):
    """The catalog's data is invalid or does not know what was asked."""


class LockError(EnvkitError):
    """Locking failed or a lock is invalid."""


class Unsatisfiable(LockError):
    """No set of packages satisfies the spec (exit 2)."""

    exit_code = ExitCode.USAGE


class SolverFailed(LockError):
    """The solver could not run: a channel or index unreachable, a tool missing."""


class EngineError(EnvkitError):
    """The container engine failed."""


class EngineUnavailable(EngineError):
    """No container engine answers (no daemon, no permission on its socket)."""


class ContainerCommandMissing(EngineError):
    """The engine is fine; the image has no such executable (runc's ``exec: "X": ... not found``)."""


class ContainerTimedOut(EngineError):
    """A container's command ran past the run's time limit; the container was stopped and removed."""


class ContainerOutputTooLarge(EngineError):
    """A container's command printed more than envkit reads of a run; the container was removed."""


class BuildFailed(EngineError):
    """An image build failed; ``log_tail`` holds the last lines of its log."""

    def __init__(self, message: str, *, hint: str | None = None, log_tail: Sequence[str] = ()) -> None:
        super().__init__(message, hint=hint)
        self.log_tail = tuple(log_tail)


class ProbeError(EnvkitError):
    """The probe could not run (no framework, a payload failure)."""


class ReportError(ProbeError):
    """A probe report is invalid, truncated or cannot be compared (exit 2)."""

    exit_code = ExitCode.USAGE


class InventoryError(EnvkitError):
    """An environment file cannot be read as an inventory (exit 2)."""

    exit_code = ExitCode.USAGE


class SbomNotCarried(EnvkitError):
    """An image carries no SBOM label, or not the SBOM its label names (``why``); ``labelled`` says
    whether it had the label at all (:func:`envkit.sbom.carried.carried_sbom`)."""

    def __init__(self, message: str, *, hint: str | None = None, why: str, labelled: bool) -> None:
        super().__init__(message, hint=hint)
        self.why = why
        self.labelled = labelled


class AuditError(EnvkitError):
    """The audit could not run: no advisory database, a download failed."""


class PackError(EnvkitError):
    """Collecting or writing a pack failed."""


class PackMismatch(PackError):
    """A pack does not fit the lock, or its files are not what its manifest says (exit 2)."""

    exit_code = ExitCode.USAGE


class FleetError(EnvkitError):
    """A fleet run failed, or its store holds something envkit did not write."""


class GuardError(EnvkitError):
    """The training guard (envkit.guard) could not go on (exit 3)."""


class GuardStopped(GuardError):
    """Raised in the training loop by policy ``stop`` (or a skip cap): the message names the report."""

    exit_code = ExitCode.FINDINGS


class DumpError(GuardError):
    """An incident dump is invalid or not the framework's (exit 2)."""

    exit_code = ExitCode.USAGE


class Interrupted(EnvkitError):
    """Ctrl-C: exit 130 like a shell, with no traceback."""

    exit_code = ExitCode.INTERRUPTED

    def __init__(self) -> None:
        super().__init__("interrupted", hint="files are written atomically: rerun the command")
