"""Where the shared development data lives: ``../shared/data`` beside the repository.

The handbook file and the injection CSV are not in the repository (``../shared/data/README.md``);
a checkout and CI keep a copy of ``shared/`` beside the repository root. Resolution, first hit:

1. ``TOLLGATE_SHARED_DATA`` (a folder holding ``handbook/`` and ``injection/``);
2. ``<repository root>/../shared/data``, with the root taken as written (a clone reached
   through a symbolic link keeps its link's parent) and then with links resolved;
3. ``<working directory>/../shared/data`` (commands run from the repository root).

``TOLLGATE_REQUIRE_SHARED_DATA=1`` (CI sets it) turns "absent" into an error, so a test that
checks the evaluation against the file can never be skipped silently.

>>> import os, tempfile
>>> d = Path(tempfile.mkdtemp())
>>> (d / "handbook").mkdir(); _ = (d / "handbook" / HANDBOOK_FILE).write_bytes(b"")
>>> os.environ["TOLLGATE_SHARED_DATA"] = str(d)
>>> handbook_file() == d / "handbook" / HANDBOOK_FILE
True
>>> del os.environ["TOLLGATE_SHARED_DATA"]
"""

from __future__ import annotations

import os
from pathlib import Path

HANDBOOK_FILE = "transactions_2018-04-01_to_2018-08-07.parquet"
INJECTION_TRAIN = "injection/injection_train.csv"
#: The injection data's published test and eval splits: kept back from this machine,
#: read when present (an evaluator's copy of ``../shared/data``).
INJECTION_HELD_OUT = ("injection/injection_test.csv", "injection/injection_eval.csv")
ENV_DIR = "TOLLGATE_SHARED_DATA"
ENV_REQUIRE = "TOLLGATE_REQUIRE_SHARED_DATA"
# engine/offline/shared_data.py -> the repository root, without resolving links (see candidates()).
_REPO_AS_WRITTEN = Path(os.path.abspath(__file__)).parents[2]


class SharedDataMissing(FileNotFoundError):
    """A shared data file is absent while ``TOLLGATE_REQUIRE_SHARED_DATA`` is set."""


def candidates() -> list[Path]:
    """The folders tried, in order (for error messages and tests)."""
    env = os.environ.get(ENV_DIR)
    out = [Path(env)] if env else []
    out += [_REPO_AS_WRITTEN.parent / "shared" / "data", _REPO_AS_WRITTEN.resolve().parent / "shared" / "data",
            Path.cwd().parent / "shared" / "data"]
    return list(dict.fromkeys(out))


def shared_file(relative: str) -> Path | None:
    """``relative`` (e.g. ``handbook/<file>``) under the first candidate folder that has it;
    None when none has it, unless ``TOLLGATE_REQUIRE_SHARED_DATA`` is set (then raises)."""
    for folder in candidates():
        path = folder / relative
        if path.is_file():
            return path
    if os.environ.get(ENV_REQUIRE, "") not in ("", "0"):
        raise SharedDataMissing(f"{relative} not found under any of {[str(c) for c in candidates()]} "
                                f"and {ENV_REQUIRE} is set")
    return None


def injection_train_file() -> Path | None:
    """The injection data's training split (``../shared/data/injection/``), or None when absent."""
    return shared_file(INJECTION_TRAIN)


def injection_held_out_files() -> list[Path]:
    """The published test/eval splits of the injection data that are present (never raises:
    they are absent wherever the training happens)."""
    found = []
    for relative in INJECTION_HELD_OUT:
        for folder in candidates():
            if (folder / relative).is_file():
                found.append(folder / relative)
                break
    return found


def require(path: Path | None, what: str) -> Path:
    """``path``, or a FileNotFoundError that says where ``what`` was looked for."""
    if path is None:
        raise FileNotFoundError(f"{what} not found under any of {[str(c) for c in candidates()]}; "
                                f"set {ENV_DIR} or pass the file")
    return path


def handbook_file() -> Path | None:
    """The handbook's transactions (``../shared/data/handbook/``), or None when absent."""
    return shared_file(f"handbook/{HANDBOOK_FILE}")
