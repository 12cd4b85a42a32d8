"""Class archives shared by the workshop's JVMs, when asked for (the test suite asks).

A JVM spends much of a short life loading and verifying classes. Java 13 and later can
write the classes a run loaded to an archive at exit (``-XX:ArchiveClassesAtExit``) and
map them from it in later runs (``-XX:SharedArchiveFile``): the same server started
again then costs less CPU. With :data:`ARCHIVES_ENV` naming a directory, a server's
first start (per ``java``, class path and main class) writes such an archive when it
stops, and every later start maps it. Without it (the default, the demo's and the
bench's case) nothing changes.

The JVM checks an archive against its own build and class path and runs without it when
they differ; its messages about that are switched off (:data:`QUIET_OPTIONS`), since
some of these JVMs' output is read. A process killed before it ends leaves no archive.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import threading
from pathlib import Path
from typing import List, Optional, Set, Tuple

#: the directory of the archives; unset, no JVM of the workshop shares classes
ARCHIVES_ENV = "SKC_CLASS_ARCHIVES"
#: the JVM's messages about an archive it cannot use, off
QUIET_OPTIONS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
#: the first Java release that writes archives at exit
_FIRST_DYNAMIC = 13

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


def with_archive(command: List[str]) -> Tuple[List[str], Optional[Tuple[Path, Path]]]:
    """``command`` (``java [options] -cp CLASSPATH MAIN ...``) with the options that map
    its archive, or that write it at exit when there is none yet and no other start of
    this process is writing it; the second item is then ``(scratch, archive)`` for
    :func:`keep` once the process has ended."""
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
    with _writing_lock:
        if archive in _writing:
            return command, None
        _writing.add(archive)
    archive.parent.mkdir(parents=True, exist_ok=True)
    scratch = archive.with_name(f"{archive.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
    return [command[0], f"-XX:ArchiveClassesAtExit={scratch}", *QUIET_OPTIONS,
            *command[1:]], (scratch, archive)


def keep(writing: Tuple[Path, Path], returncode: Optional[int]) -> None:
    """After the process of :func:`with_archive` ended with ``returncode``: its archive
    kept when it ended by itself or on SIGTERM (a killed JVM's file may be cut short),
    the scratch file removed in any case."""
    scratch, archive = writing
    try:
        if returncode is not None and returncode != -signal.SIGKILL and scratch.exists():
            os.replace(scratch, archive)
    finally:
        if scratch.exists():
            scratch.unlink()
        with _writing_lock:
            _writing.discard(archive)
