"""gtop.core.files against what another user can plant: links, FIFOs, devices, big files,
files of another owner; real files in a temporary folder."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from gtop.core.files import (
    UnsafeFile,
    check_output_path,
    create_new,
    create_unique,
    private_folder,
    read_owned,
    replace_output,
)


def test_create_new_refuses_a_planted_link_and_keeps_its_target(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "out").symlink_to(victim)
    with pytest.raises(FileExistsError):
        create_new(tmp_path / "out")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):
        create_new(tmp_path / "dangling")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "nowhere").exists()


def test_create_new_sets_the_mode_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        fd = create_new(tmp_path / "a", 0o600)
    finally:
        os.umask(old)
    os.close(fd)
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o600


def test_create_unique_names_differ_and_are_private(tmp_path):
    paths = []
    for _ in range(5):
        path, fd = create_unique(tmp_path, "gtop-run-", ".log")
        assert not os.get_inheritable(fd)
        os.close(fd)
        paths.append(path)
    assert len(set(paths)) == 5
    assert all(p.name.startswith("gtop-run-") and p.suffix == ".log" for p in paths)
    assert {stat.S_IMODE(p.stat().st_mode) for p in paths} == {0o600}


def test_private_folder(tmp_path):
    assert private_folder(tmp_path)
    os.chmod(tmp_path, 0o777)
    assert not private_folder(tmp_path)
    os.chmod(tmp_path, 0o700)
    (tmp_path / "link").symlink_to(tmp_path)
    assert not private_folder(tmp_path / "link")
    assert not private_folder("/tmp")  # sticky, world-writable


def test_replace_output_never_writes_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "out.json").symlink_to(victim)
    with pytest.raises(UnsafeFile, match="symbolic link"), replace_output(tmp_path / "out.json"):
        pass
    assert victim.read_text() == "precious"


def test_replace_output_refuses_devices_and_fifos(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "fifo", "/dev/null", tmp_path):
        with pytest.raises(UnsafeFile, match="not a regular file"):
            check_output_path(path)


def test_replace_output_replaces_whole_or_not_at_all(tmp_path):
    out = tmp_path / "out.csv"
    out.write_text("old")
    with replace_output(out, 0o600, binary=False) as f:
        f.write("new")
        assert out.read_text() == "old"  # readers see the old file until the end
    assert out.read_text() == "new"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    with pytest.raises(RuntimeError), replace_output(out) as f:
        f.write(b"half")
        raise RuntimeError("export failed")
    assert out.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_read_owned_refuses_links_fifos_devices_and_other_owners(tmp_path):
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        read_owned(tmp_path / "zero", None, 1 << 20)
    os.mkfifo(tmp_path / "fifo")
    # a FIFO with no writer would block a plain open forever: this returns at once
    done = threading.Event()

    def read_fifo():
        with pytest.raises(UnsafeFile, match="not a regular file"):
            read_owned(tmp_path / "fifo", None, 1 << 20)
        done.set()

    threading.Thread(target=read_fifo, daemon=True).start()
    assert done.wait(5), "read_owned blocked on a FIFO"
    with pytest.raises(UnsafeFile, match="not a regular file"):
        read_owned("/dev/zero", None, 1 << 20)
    f = tmp_path / "map"
    f.write_text("1000 10 fn\n")
    assert read_owned(f, os.geteuid(), 1 << 20) == b"1000 10 fn\n"
    with pytest.raises(UnsafeFile, match=f"belongs to uid {os.geteuid()}, not 12345"):
        read_owned(f, 12345, 1 << 20)
    with pytest.raises(FileNotFoundError):
        read_owned(tmp_path / "missing", None, 10)


def test_read_owned_reads_at_most_the_cap(tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(8 << 20)  # sparse: 8 MiB of zeros
    assert len(read_owned(big, None, 3 << 20)) == 3 << 20
