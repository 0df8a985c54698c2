"""Files gtop writes where others may plant links: ``gtop run``'s log of the target's
output (a new 0600 file with a name nobody can guess, not in a folder others can write)
and a recording with the two files SQLite keeps beside it."""

from __future__ import annotations

import os
import pwd
import stat
import time
from pathlib import Path

import pytest

from gtop.cli.common import UserError
from gtop.cli.live import target_output
from gtop.cli.parser import parse_args


def open_log(monkeypatch, cwd: Path, state: Path) -> None:
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    target_output(parse_args(["run", "--", "true"]))["stdout"].close()


def logs(folder: Path) -> list[Path]:
    return sorted(folder.glob("gtop-run-*.log"))


def test_log_in_a_private_cwd_is_new_0600_and_unguessable(monkeypatch, tmp_path, capsys):
    cwd = tmp_path / "work"
    cwd.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    # plant links at every name the old scheme could pick in the next seconds
    now = time.time()
    for dt in range(-2, 10):
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + dt))
        (cwd / f"gtop-run-{stamp}.log").symlink_to(victim)
    open_log(monkeypatch, cwd, tmp_path / "state")
    assert victim.read_text() == "precious"
    made = [p for p in logs(cwd) if not p.is_symlink()]
    assert len(made) == 1, made
    assert stat.S_IMODE(made[0].stat().st_mode) == 0o600
    assert str(made[0].name) in capsys.readouterr().err


def test_log_goes_to_the_state_folder_when_cwd_is_shared(monkeypatch, tmp_path, capsys):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp
    open_log(monkeypatch, shared, tmp_path / "state")
    assert logs(shared) == []
    made = logs(tmp_path / "state" / "gtop")
    assert len(made) == 1
    assert stat.S_IMODE((tmp_path / "state" / "gtop").stat().st_mode) == 0o700
    assert str(made[0]) in capsys.readouterr().err


def test_the_state_folder_is_in_the_effective_users_home_not_home(monkeypatch, tmp_path):
    """As root under sudo, $HOME may still be the invoking user's home."""
    from gtop.core.files import state_folder

    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = state_folder()
    assert tmp_path not in folder.parents
    assert folder.parent.parent.parent == Path(pwd.getpwuid(os.geteuid()).pw_dir)


def test_a_state_folder_others_can_write_is_refused(monkeypatch, tmp_path, capsys):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    state = tmp_path / "state"
    (state / "gtop").mkdir(parents=True)
    os.chmod(state / "gtop", 0o777)
    with pytest.raises(UserError, match="writable by others"):
        open_log(monkeypatch, shared, state)


def test_a_recording_never_writes_through_links_planted_beside_it(tmp_path):
    """SQLite opens FILE-wal and FILE-shm by name: links planted there (in /tmp, by
    another user) are refused, with --force too (it replaces only regular files), never
    written through."""
    from gtop.core.files import UnsafeFile
    from gtop.recordings.writer import RecordingWriter

    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "x.gtop"
    for suffix in ("-wal", "-shm"):
        Path(f"{out}{suffix}").symlink_to(victim)
        with pytest.raises(FileExistsError):
            RecordingWriter(out, {})
        assert not out.exists()  # nothing half-made is left
        Path(f"{out}{suffix}").unlink()
    Path(f"{out}-wal").symlink_to(victim)
    with pytest.raises(UnsafeFile):
        RecordingWriter(out, {}, overwrite=True)
    assert Path(f"{out}-wal").is_symlink() and not out.exists()
    Path(f"{out}-wal").unlink()
    Path(f"{out}-wal").write_text("stale")  # a regular leftover is what --force replaces
    writer = RecordingWriter(out, {}, overwrite=True)
    writer.close()
    assert victim.read_text() == "precious"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
