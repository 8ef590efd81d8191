"""What every test module needs: no network, the real photos where present,
and the bundled samples built once for the whole session (`samples`).

The fabricators and the build helpers the tests share are in
`photo_datasets.testing`, importable as any module of the package.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import socket
from collections.abc import Callable, Iterator
from typing import Any, NoReturn
from unittest import mock

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from tensorflow_datasets.core.download import downloader

from photo_datasets import testing

REPO = pathlib.Path(__file__).resolve().parents[1]
# Real AIHub photos, never copied into the project (the terms forbid it).
REAL_KFOOD = REPO.parent / "shared" / "realdata" / "kfood"
BUNDLED = {"flowers_dataset": REPO / "flowers_dataset" / "sample",
           "korean_food": REPO / "korean_food" / "sample"}


def _refuse(attempt: Callable[..., str]) -> Callable[..., NoReturn]:
  """A stand-in that fails the test, saying what it tried (`attempt` of the call's arguments)."""

  def refuse(*args: Any, **kwargs: Any) -> NoReturn:
    raise AssertionError(f"a test tried the network: {attempt(*args, **kwargs)}")

  return refuse


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
  """Leaves out `tf.test.TestCase.test_session`, which `DatasetBuilderTestCase`
  subclasses inherit: a context manager TFDS's harness uses, not a test (it only skips)."""
  items[:] = [item for item in items
              if getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
              is not tf.test.TestCase.test_session]


def pytest_configure() -> None:
  """Ctrl-C reaches the suite and the builds its tests start: a suite started
  in the background by a script (`pytest &`) inherits SIGINT ignored, which
  every child keeps, so the tests that press Ctrl-C in a build would see it
  do nothing. A handler (not SIG_IGN) is reset to the default in each child."""
  if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def no_network() -> Iterator[None]:
  """Fails any test that downloads, connects or looks a host up: the suite
  must pass offline, and TFDS's downloader would retry for minutes. A test
  may still patch these itself (to simulate being offline)."""
  download = _refuse(lambda _downloader, url, *args, **kwargs: f"download of {url}")
  connect = _refuse(lambda *args, **kwargs: f"socket.create_connection{args}")
  look_up = _refuse(lambda *args, **kwargs: f"socket.getaddrinfo{args}")
  with mock.patch.object(downloader._Downloader, "_sync_download", download), \
      mock.patch.object(socket, "create_connection", connect), \
      mock.patch.object(socket, "getaddrinfo", look_up):
    yield


@pytest.fixture(scope="session")
def real_kfood() -> pathlib.Path:
  """The folder of real AIHub photos (`<group>/<class>/<file>`); the test is
  skipped where it is absent. Mark such tests `@pytest.mark.real_photos`."""
  if not REAL_KFOOD.is_dir():
    testing.missing("real_photos", f"no real AIHub photos at {REAL_KFOOD}")
  return REAL_KFOOD


class Samples:
  """The bundled samples (`flowers_dataset/sample`, `korean_food/sample`), each
  config built on first use into one data dir shared by the session (so the
  source is scanned once per dataset). Read only: a test that changes a data
  dir works on `copy`."""

  def __init__(self, root: pathlib.Path):
    self.data_dir = os.fspath(root)
    self._built: dict[str, tfds.core.DatasetBuilder] = {}

  def build(self, *names: str) -> str:
    """Builds the configs `names` ("korean_food/64") where not built yet; returns the data dir."""
    for name in names:
      if name not in self._built:
        self._built[name] = testing.build(name, self.data_dir, BUNDLED[name.split("/")[0]])
    return self.data_dir

  def builder(self, name: str) -> tfds.core.DatasetBuilder:
    self.build(name)
    return self._built[name]

  def copy(self, destination: pathlib.Path, *names: str) -> str:
    """A copy of the data dir, with `names` built, that a test may change."""
    shutil.copytree(self.build(*names), destination)
    return os.fspath(destination)


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Samples:
  return Samples(tmp_path_factory.mktemp("samples"))
