"""Class archives shared by the workshop's JVMs, when asked for (the test suite asks).

A JVM spends much of a short life loading and verifying classes. Java 17 and later can
write the classes a running JVM has loaded to an archive (``jcmd PID VM.cds
dynamic_dump``, the JVM started with ``-XX:+RecordDynamicDumpInfo``) and map them from
it in later runs (``-XX:SharedArchiveFile``): the same server started again then costs
less CPU. With :data:`ARCHIVES_ENV` naming a directory, a server's first start (per
``java``, class path and main class) writes such an archive once it is ready, and
every later start maps it. Without it (the default, the demo's and the bench's case)
nothing changes.

The JVM checks an archive against its own build and class path and runs without it when
they differ; its messages about archives are switched off (:data:`QUIET_OPTIONS`), since
some of these JVMs' output is read. An archive is written to a scratch file and renamed
whole, so a process killed mid-dump leaves none.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
from pathlib import Path
from typing import List, NamedTuple, Optional, Set, Tuple

#: the directory of the archives; unset, no JVM of the workshop shares classes
ARCHIVES_ENV = "SKC_CLASS_ARCHIVES"
#: the JVM's messages about archives (one it cannot use, classes it leaves out), off
QUIET_OPTIONS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
#: the first Java release whose running JVM writes an archive when asked
_FIRST_DYNAMIC = 17

#: archives this process is writing (one writer per archive and process at a time)
_writing: Set[Path] = set()
_writing_lock = threading.Lock()


def java_release(java: str) -> Optional[int]:
    """The feature release of the JDK or runtime ``java`` belongs to (``17``), read from
    its ``release`` file; None when there is none to read."""
    home = Path(os.path.realpath(java)).parent.parent
    try:
        text = (home / "release").read_text(errors="replace")
    except OSError:
        return None
    found = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', text, re.MULTILINE)
    return int(found.group(1)) if found else None


def archive_path(java: str, classpath: str, main: str) -> Optional[Path]:
    """Where the archive of ``main`` run by ``java`` on ``classpath`` is kept, or None
    when archives are not asked for or this ``java`` cannot write them."""
    directory = os.environ.get(ARCHIVES_ENV)
    if not directory:
        return None
    release = java_release(java)
    if release is None or release < _FIRST_DYNAMIC:
        return None
    key = hashlib.sha1("\0".join([os.path.realpath(java), classpath, main]).encode())
    for entry in classpath.split(os.pathsep):
        try:
            stat = os.stat(entry)
        except OSError:
            continue
        key.update(f"{entry}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    name = re.sub(r"[^A-Za-z0-9]+", "-", main.rsplit(".", 1)[-1]).strip("-").lower()
    return Path(directory) / f"{name}-{key.hexdigest()[:16]}.jsa"


class Writing(NamedTuple):
    """A start that will write its archive: the ``jcmd`` beside its ``java``, the
    scratch file and the archive's name."""

    jcmd: str
    scratch: Path
    archive: Path


def with_archive(command: List[str]) -> Tuple[List[str], Optional[Writing]]:
    """``command`` (``java [options] -cp CLASSPATH MAIN ...``) with the options that map
    its archive, or that let :func:`dump` write it when there is none yet, ``java`` has
    a ``jcmd`` beside it and no other start of this process is writing it (the second
    item then says where)."""
    try:
        at = command.index("-cp")
        classpath, main = command[at + 1], command[at + 2]
    except (ValueError, IndexError):
        return command, None
    archive = archive_path(command[0], classpath, main)
    if archive is None:
        return command, None
    if archive.exists():
        return [command[0], f"-XX:SharedArchiveFile={archive}", *QUIET_OPTIONS,
                *command[1:]], None
    jcmd = Path(os.path.realpath(command[0])).with_name("jcmd")
    if not os.access(jcmd, os.X_OK):
        return command, None
    with _writing_lock:
        if archive in _writing:
            return command, None
        _writing.add(archive)
    scratch = archive.with_name(f"{archive.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
    return [command[0], "-XX:+RecordDynamicDumpInfo", *QUIET_OPTIONS, *command[1:]], \
        Writing(str(jcmd), scratch, archive)


def dump(writing: Writing, pid: int, timeout_s: float = 60.0) -> bool:
    """Write the archive of the running JVM ``pid`` started with :func:`with_archive`
    (the classes it has loaded so far: call it once the server is ready) and let the
    claim go; True when the archive is there."""
    try:
        writing.archive.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([writing.jcmd, str(pid), "VM.cds", "dynamic_dump",
                               str(writing.scratch)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout_s)
        if done.returncode == 0 and writing.scratch.exists():
            os.replace(writing.scratch, writing.archive)
    except (OSError, subprocess.TimeoutExpired):
        pass                            # no archive: the next start tries again
    finally:
        release(writing)
    return writing.archive.exists()


def release(writing: Writing) -> None:
    """The claim of :func:`with_archive` let go (the process ended, or :func:`dump`
    is done); a scratch file left behind removed."""
    try:
        writing.scratch.unlink()
    except FileNotFoundError:
        pass
    with _writing_lock:
        _writing.discard(writing.archive)
