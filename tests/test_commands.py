"""`python -m photo_datasets COMMAND`: every command behind one entry point, and
the old paths (`python -m photo_datasets.train`, `photo_datasets.pipeline`)
still working as aliases of the moved modules."""

from __future__ import annotations

import importlib
import runpy
import subprocess
import sys

import pytest

from photo_datasets import __main__ as entry

# The old module paths at the top of photo_datasets/, and where each moved.
ALIASES = {**entry.COMMANDS, "pipeline": "photo_datasets.reading.pipeline",
           "models": "photo_datasets.commands.models"}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
  return subprocess.run([sys.executable, "-m", "photo_datasets", *args], capture_output=True,
                        text=True, timeout=120, check=False)


def test_alone_or_with_help_it_lists_the_commands_with_their_first_lines() -> None:
  helped, alone, unknown = _run("--help"), _run(), _run("nope")
  assert helped.returncode == 0 and alone.returncode == 2 and unknown.returncode == 2
  assert alone.stderr == helped.stdout
  assert unknown.stderr.endswith("error: no command 'nope'\n")
  listed = {line.split()[0]: line.split(maxsplit=1)[1]
            for line in helped.stdout.split("commands:\n")[1].splitlines()}
  assert listed == {name: importlib.import_module(module).__doc__.splitlines()[0]
                    for name, module in entry.COMMANDS.items()}


@pytest.mark.parametrize("command", sorted(entry.COMMANDS))
def test_a_command_and_its_old_path_run_the_same_parser(command, monkeypatch, capsys) -> None:
  monkeypatch.setattr(sys, "argv", ["python"])
  with pytest.raises(SystemExit) as new:
    entry.main([command, "--help"])
  new_help = capsys.readouterr().out
  # The alias as `python -m` runs it, not the moved module an earlier import put in its place.
  monkeypatch.delitem(sys.modules, f"photo_datasets.{command}", raising=False)
  monkeypatch.setattr(sys, "argv", ["python", "--help"])
  with pytest.raises(SystemExit) as old:
    runpy.run_module(f"photo_datasets.{command}", run_name="__main__")
  old_help = capsys.readouterr().out
  assert new.value.code == old.value.code == 0
  assert new_help.partition("options:")[2] == old_help.partition("options:")[2] != ""


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_an_old_import_path_is_the_moved_module(name) -> None:
  moved = importlib.import_module(ALIASES[name])
  assert importlib.import_module(f"photo_datasets.{name}") is moved
  assert getattr(importlib.import_module("photo_datasets"), name) is moved
