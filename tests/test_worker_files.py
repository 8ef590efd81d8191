"""The files workers append to: each write read back as written, whatever writes beside it."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from photo_datasets.building import worker_files

THREADS = 4
APPENDS = 1_500


def _payload(thread: int, index: int) -> bytes:
  """Distinct bytes of varying length: a write placed at another's offset reads back wrong."""
  return f"{thread}:{index}:".encode() * (1 + (index * 7 + thread) % 13)


def _append_from_threads(module, folder: str) -> list[tuple[bytes, object]]:
  """`THREADS` threads appending `APPENDS` payloads each to one stem at once; each payload and
  where `module.append` says it lies."""
  start = threading.Barrier(THREADS)
  written: list[list[tuple[bytes, object]]] = [[] for _ in range(THREADS)]
  failed: list[BaseException] = []

  def run(thread: int) -> None:
    try:
      start.wait()
      for index in range(APPENDS):
        data = _payload(thread, index)
        written[thread].append((data, module.append(folder, "converted", data)))
    except BaseException as e:  # Reported by the test's thread.
      failed.append(e)

  threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join()
  if failed:
    raise failed[0]
  return [pair for pairs in written for pair in pairs]


def test_threads_appending_at_once_each_read_back_their_own_bytes(tmp_path):
  """As Beam's SDK harness runs several bundles on threads of one process."""
  folder = str(tmp_path)
  try:
    written = _append_from_threads(worker_files, folder)
    wrong = [data for data, where in written if where.read() != data]
    assert not wrong, f"{len(wrong)} of {len(written)} writes read back other bytes"
    assert len({where.path for _, where in written}) == THREADS  # A file per thread.
  finally:
    worker_files.close(folder)
  # Every thread's file closed by this process's `close`, and each holds exactly its bytes.
  assert not [key for key in worker_files._OPEN if os.path.dirname(key[2]) == folder]
  by_path: dict[str, int] = {}
  for data, where in written:
    by_path[where.path] = by_path.get(where.path, 0) + len(data)
  assert {path: os.path.getsize(path) for path in by_path} == by_path


def test_names_differ_where_host_and_process_id_are_the_same(tmp_path, monkeypatch):
  """Containers on one host's network share its name and may reuse each other's process ids:
  a process that never opened the first file (as in another container) writes another."""
  folder = str(tmp_path)
  monkeypatch.setattr(socket, "gethostname", lambda: "host")
  first = worker_files.append(folder, "keypoints", b"first")
  monkeypatch.setattr(worker_files, "_OPEN", {})  # The other container's process.
  second = worker_files.append(folder, "keypoints", b"second")
  worker_files.close(folder)
  assert first.path != second.path
  assert os.path.basename(first.path).startswith(f"keypoints-host-{os.getpid()}-")
  assert (first.read(), second.read()) == (b"first", b"second")
  assert second.offset == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_a_forked_child_writes_its_own_file(tmp_path):
  folder = str(tmp_path)
  parent = worker_files.append(folder, "000", b"parent")
  reader, writer = os.pipe()
  pid = os.fork()
  if pid == 0:  # The child: where its append went, through the pipe.
    try:
      child = worker_files.append(folder, "000", b"child")
      worker_files.close(folder)
      os.write(writer, f"{child.path}\n{child.offset}".encode())
    finally:
      os._exit(0)
  os.close(writer)
  with os.fdopen(reader) as pipe:
    child_path, child_offset = pipe.read().split("\n")
  os.waitpid(pid, 0)
  again = worker_files.append(folder, "000", b"again")  # The parent's file is still open.
  worker_files.close(folder)
  assert child_path != parent.path and int(child_offset) == 0
  assert again.path == parent.path and again.offset == len(b"parent")
  assert worker_files.Written(child_path, 0, 5).read() == b"child"
  assert parent.read() + again.read() == b"parentagain"
