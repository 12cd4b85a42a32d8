"""The console of the command line: what reaches stderr at each verbosity.

Default: this project's warnings and errors as ``warning: ...`` lines, the start
decisions (one line per partition, logger ``storm_kafka_compat.decisions``) and
progress; the chatter of Spark, kazoo and kafka-python is dropped (their
failures reach the operator as this project's own errors, which name the
address and the fix). ``-v``: our INFO lines with timestamps, and the other
libraries' warnings. ``-vv``: everything at DEBUG.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Iterable, Optional, Set

if TYPE_CHECKING:
    from rich.status import Status

    from storm_kafka_compat.config import JobConfig

#: libraries whose logs go through our handler from -v on
THIRD_PARTY = ("kazoo", "kafka", "py4j", "confluent_kafka")
#: the logger of the start decisions, shown at the default verbosity
DECISIONS = "storm_kafka_compat.decisions"

_MARK = "_skc_cli"


#: secret values of the loaded CONFIG (passwords, JAAS configs...) that no line may show
_SECRETS: Set[str] = set()


def redact(values: Iterable[str]) -> None:
    """Never print these values: every line of the CLI's handler shows ``***``
    instead (the clients' own -vv logs included: kafka-python logs the raw bytes
    of its requests at DEBUG, a SASL/PLAIN password among them; kazoo logs its
    Auth request with the digest credential). A value is also hidden as the
    clients show it: within a ``repr`` of the text or of its UTF-8 bytes (a
    backslash, a quote or a non-ASCII letter comes out escaped there)."""
    for value in values:
        if value:
            _SECRETS.update({value, repr(value)[1:-1], repr(value.encode("utf-8"))[2:-1]})
    _SECRETS.discard("")


def redacted(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def load_config(path: str) -> "JobConfig":
    """:func:`~storm_kafka_compat.config.load_job_config`, its secrets redacted from
    the console from then on."""
    from storm_kafka_compat.config import load_job_config
    from storm_kafka_compat.config.effective import secret_values
    job = load_job_config(path)
    redact(secret_values(job.kafka) + secret_values(dict(job.spark.conf)))
    auth = job.topology.zookeeper_auth
    if auth is not None and auth.credential:
        # the digest credential is user:password; the password alone is secret too
        redact([auth.credential, auth.credential.partition(":")[2]])
    return job


class _Redacting(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if _SECRETS:
            text = record.getMessage()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            exc_text = record.exc_text or ""
            if any(s in text or s in exc_text for s in _SECRETS):
                record.msg, record.args = redacted(text), ()
                record.exc_text = redacted(exc_text) or None
        return True


class _ShortFormatter(logging.Formatter):
    """``warning: message`` for warnings and errors, the bare message below."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.levelno >= logging.ERROR:
            message += "\n" + self.formatException(record.exc_info)
        if record.levelno >= logging.WARNING:
            return f"{record.levelname.lower()}: {message}"
        return message


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr; a reader that went away makes it /dev/null (cli.render.write)."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        if isinstance(sys.exc_info()[1], BrokenPipeError):
            from storm_kafka_compat.cli.render import discard
            discard(self.stream)
            return
        super().handleError(record)


def configure(verbose: int) -> None:
    """Install the CLI's one stderr handler; idempotent (tests run the CLI many
    times in one process)."""
    handler = _StderrHandler(sys.stderr)
    setattr(handler, _MARK, True)
    if verbose:
        handler.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(_ShortFormatter())
    level = logging.DEBUG if verbose >= 2 else logging.INFO if verbose else logging.WARNING
    # a filter may lower a record's level after the logger let it through (librdkafka's
    # expected warnings on old brokers become DEBUG): the handler checks again
    handler.addFilter(lambda r: r.levelno >= level or r.name == DECISIONS)
    handler.addFilter(_Redacting())
    ours = logging.getLogger("storm_kafka_compat")
    for logger in [ours] + [logging.getLogger(name) for name in THIRD_PARTY]:
        for old in [h for h in logger.handlers if getattr(h, _MARK, False)]:
            logger.removeHandler(old)
    ours.addHandler(handler)
    ours.setLevel(level)
    logging.getLogger(DECISIONS).setLevel(logging.INFO)
    from storm_kafka_compat.engine import spark
    spark.quiet_start = not verbose
    for name in THIRD_PARTY:
        logger = logging.getLogger(name)
        logger.propagate = False            # never Python's last-resort handler
        if verbose:
            logger.addHandler(handler)
            logger.setLevel(logging.DEBUG if verbose >= 2 else logging.WARNING)
        else:
            logger.setLevel(logging.CRITICAL + 1)


class ProgressPrinter:
    """The progress lines of a run: one status line updated in place on a terminal
    (rich), plain lines otherwise (logs, pipes, CI)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self._status: Optional["Status"] = None
        self.last: str = ""

    def __call__(self, line: str) -> None:
        self.last = line
        if not self.tty:
            from storm_kafka_compat.cli.render import err
            err(line)
            return
        if self._status is None:
            from rich.console import Console
            self._status = Console(stderr=True).status(line)
            self._status.start()
        else:
            self._status.update(line)

    def close(self) -> None:
        """Stop the live line, leaving the last one printed."""
        if self._status is not None:
            self._status.stop()
            self._status = None
            from storm_kafka_compat.cli.render import err
            err(self.last)
