"""Storm's multilang protocol, the messages only: JSON documents each followed by a line
``end``, in both directions (Storm's ``JsonSerializer``; ``storm.py``'s ``readMsg`` and
``sendMsgToParent``).

To the script: the handshake ``{"conf", "context", "pidDir"}``; tuples
``{"id", "comp", "stream", "task", "tuple"}`` (a heartbeat is task -1 on stream
``__heartbeat``, answered by ``{"command": "sync"}``); after an emit, the list of task ids
it went to. From the script: ``{"pid"}``, then commands ``emit`` (``tuple``, ``anchors``,
``stream``, ``task`` for a direct emit, ``need_task_ids``, true unless said), ``ack``,
``fail``, ``error``, ``log``, ``metrics``, ``sync``.

Pure: bytes in, dicts out; :mod:`.shell` owns the subprocess.
"""

from __future__ import annotations

import json
from typing import IO, Any, Dict, List, Optional, Union

__all__ = ["encode", "read_message", "handshake", "tuple_message", "HEARTBEAT",
           "ProtocolError", "END"]

END = b"end\n"

#: the heartbeat tuple Storm's ShellBolt sends; the script answers ``sync`` once every
#: tuple before it has been processed
HEARTBEAT: Dict[str, Any] = {"id": "-1", "comp": None, "stream": "__heartbeat", "task": -1,
                             "tuple": []}


class ProtocolError(Exception):
    """The script closed its output or wrote something that is not a multilang message."""


def encode(message: Union[Dict[str, Any], List[int]]) -> bytes:
    """One message as the bytes on the wire (``default=str`` for values JSON lacks)."""
    return json.dumps(message, default=str).encode("utf-8") + b"\n" + END


def tuple_message(tid: str, component: str, stream: str, task: int,
                  values: Any) -> bytes:
    """A tuple for the script (``task`` is the emitting task)."""
    return encode({"id": tid, "comp": component, "stream": stream, "task": task,
                   "tuple": list(values)})


def handshake(conf: Dict[str, Any], context: Dict[str, Any], pid_dir: str) -> bytes:
    """The first message: the topology's configuration, the task's context, where to
    write the pid file."""
    return encode({"conf": conf, "context": context, "pidDir": pid_dir})


def read_message(stream: IO[bytes], what: str = "the script") -> Any:
    """The next message (lines up to ``end``), decoded.

    Raises
    ------
    ProtocolError
        End of stream, or text that is not JSON.
    """
    lines: List[bytes] = []
    while True:
        line = stream.readline()
        if not line:
            raise ProtocolError(f"{what} closed its output (it exited, or crashed: see its "
                                f"stderr above)")
        if line == END or line == b"end":
            break
        lines.append(line)
    text = b"".join(lines).decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        shown: Optional[str] = text if len(text) < 200 else text[:200] + "..."
        raise ProtocolError(f"{what} wrote {shown!r}, which is not a multilang message "
                            f"(JSON then a line 'end'); a print() to stdout breaks the "
                            f"protocol: log instead") from None
