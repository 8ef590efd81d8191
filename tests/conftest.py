"""What every test module needs: no network, and the real photos where present.

The fabricators and the build helpers the tests share are in
`photo_datasets.testing`, importable as any module of the package.
"""

from __future__ import annotations

import pathlib
import socket
from collections.abc import Callable, Iterator
from typing import Any, NoReturn
from unittest import mock

import pytest
from tensorflow_datasets.core.download import downloader

REPO = pathlib.Path(__file__).resolve().parents[1]
# Real AIHub photos, never copied into the project (the terms forbid it).
REAL_KFOOD = REPO.parent / "shared" / "realdata" / "kfood"


def _refuse(attempt: Callable[..., str]) -> Callable[..., NoReturn]:
  """A stand-in that fails the test, saying what it tried (`attempt` of the call's arguments)."""

  def refuse(*args: Any, **kwargs: Any) -> NoReturn:
    raise AssertionError(f"a test tried the network: {attempt(*args, **kwargs)}")

  return refuse


@pytest.fixture(scope="session", autouse=True)
def no_network() -> Iterator[None]:
  """Fails any test that downloads, connects or looks a host up: the suite
  must pass offline, and TFDS's downloader would retry for minutes. A test
  may still patch these itself (to simulate being offline)."""
  download = _refuse(lambda _downloader, url, *args, **kwargs: f"download of {url}")
  connect = _refuse(lambda *args, **kwargs: f"socket.create_connection{args}")
  look_up = _refuse(lambda *args, **kwargs: f"socket.getaddrinfo{args}")
  with mock.patch.object(downloader._Downloader, "_sync_download", download), \
      mock.patch.object(socket, "create_connection", connect), mock.patch.object(socket, "getaddrinfo", look_up):
    yield


@pytest.fixture(scope="session")
def real_kfood() -> pathlib.Path:
  """The folder of real AIHub photos (`<group>/<class>/<file>`); the test is
  skipped where it is absent. Mark such tests `@pytest.mark.real_photos`."""
  if not REAL_KFOOD.is_dir():
    pytest.skip(f"no real AIHub photos at {REAL_KFOOD}")
  return REAL_KFOOD
