"""The session-wide guard of conftest.py: the suite never reaches the network."""

from __future__ import annotations

import socket

import pytest
from tensorflow_datasets.core.download import downloader

URL = "http://download.tensorflow.org/example_images/flower_photos.tgz"


def test_connections_and_name_lookups_fail_the_test():
  with pytest.raises(AssertionError,
                     match=r"tried the network: socket.create_connection\(\('example.com', 80\)"):
    socket.create_connection(("example.com", 80), 1)
  with pytest.raises(AssertionError,
                     match=r"tried the network: socket.getaddrinfo\('example.com', 443\)"):
    socket.getaddrinfo("example.com", 443)


def test_tfds_downloads_fail_the_test(tmp_path):
  with pytest.raises(AssertionError, match=f"tried the network: download of {URL}"):
    downloader._Downloader._sync_download(object(), URL, str(tmp_path))
