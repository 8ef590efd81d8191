"""What a test does without a prerequisite (`photo_datasets.testing.missing`):
skips on a user's machine, fails where `PHOTO_DATASETS_REQUIRE` names it (`.ci/run`)."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from photo_datasets import testing

REPO = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("required", ["", "chromium", "other"])
def test_a_missing_prerequisite_skips_unless_required(monkeypatch, required):
  monkeypatch.setenv(testing.REQUIRE_ENV, required)
  with pytest.raises(pytest.skip.Exception, match="no real AIHub photos at /nowhere"):
    testing.missing("real_photos", "no real AIHub photos at /nowhere")


@pytest.mark.parametrize("required", ["real_photos", "chromium, real_photos"])
def test_a_required_prerequisite_that_is_missing_fails(monkeypatch, required):
  monkeypatch.setenv(testing.REQUIRE_ENV, required)
  with pytest.raises(pytest.fail.Exception,
                     match="no real AIHub photos at /nowhere, and PHOTO_DATASETS_REQUIRE "
                           "requires real_photos"):
    testing.missing("real_photos", "no real AIHub photos at /nowhere")


def test_ci_requires_the_real_photos_and_chromium_and_lists_the_skips():
  script = (REPO / ".ci" / "run").read_text()
  assert "export PHOTO_DATASETS_REQUIRE=real_photos,chromium" in script
  assert "python -m pytest -q -rs" in script
  assert subprocess.run(["bash", "-n", str(REPO / ".ci" / "run")], check=False).returncode == 0
