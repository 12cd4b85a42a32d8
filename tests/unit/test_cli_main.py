import logging

from storm_kafka_compat.cli.main import main


def test_repeated_main_calls_keep_one_log_handler(capsys, tmp_path):
    missing = str(tmp_path / "missing.yaml")
    for _ in range(3):
        assert main(["config", "check", missing]) == 2   # runs the group callback
    assert "missing.yaml" in capsys.readouterr().err
    root = logging.getLogger("storm_kafka_compat")
    assert sum(1 for h in root.handlers if getattr(h, "_skc_cli", False)) == 1


def test_unknown_command_is_a_usage_error(capsys):
    assert main(["no-such-command"]) == 2
    assert "no-such-command" in capsys.readouterr().err


def test_version(capsys):
    from storm_kafka_compat import __version__
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"storm-kafka-compat {__version__}"


def _commands(group, prefix=()):
    import click
    for name, command in group.commands.items():
        path = prefix + (name,)
        yield path, command
        if isinstance(command, click.Group):
            yield from _commands(command, path)


def test_every_command_and_option_has_help_text():
    import click

    from storm_kafka_compat.cli.main import cli
    missing = []
    for path, command in _commands(cli):
        if not (command.help or command.short_help):
            missing.append(" ".join(path))
        for param in command.params:
            if isinstance(param, click.Option) and not param.help:
                missing.append(f"{' '.join(path)} {param.opts[0]}")
    assert missing == []


def test_the_default_console_is_short_and_shows_the_decisions(capsys):
    from storm_kafka_compat.cli.console import DECISIONS, configure
    configure(0)
    logging.getLogger("storm_kafka_compat.x").info("not shown")
    logging.getLogger("storm_kafka_compat.x").warning("careful")
    logging.getLogger(DECISIONS).info("orders/0 at /r/s/partition_0: resuming")
    logging.getLogger("kazoo.client").warning("Connection dropped: socket connection error")
    err = capsys.readouterr().err.splitlines()
    assert err == ["warning: careful", "orders/0 at /r/s/partition_0: resuming"]
    configure(1)
    logging.getLogger("kazoo.client").warning("Connection dropped")
    logging.getLogger("storm_kafka_compat.x").info("now shown")
    err = capsys.readouterr().err
    assert "WARNING kazoo.client: Connection dropped" in err and "INFO" in err
    configure(0)


def test_the_configs_secrets_never_reach_the_console(tmp_path, capsys):
    """A secret of the CONFIG's kafka mapping is redacted from every line the CLI
    prints: its -vv log (kafka-python logs SASL/PLAIN request bytes at DEBUG) and
    its errors."""
    import logging

    import yaml

    from storm_kafka_compat.cli import console
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump({
        "spout": {"topic": "t", "zkRoot": "/r", "id": "s"},
        "hosts": {"bootstrap": "127.0.0.1:9"}, "topology": {"name": "n"},
        "bolt": "tests.bolts:record",
        "kafka": {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                  "sasl_plain_username": "u", "sasl_plain_password": "p4ss-Wd1"}}))
    console.configure(2)
    try:
        console.load_config(str(config))
        logging.getLogger("kafka.protocol.parser").debug("Send: %r", b"\x00u\x00p4ss-Wd1")
        logging.getLogger("storm_kafka_compat.x").error("failed", exc_info=ValueError("p4ss-Wd1"))
        assert console.redacted("Error: bad p4ss-Wd1") == "Error: bad ***"
    finally:
        console.configure(0)
    err = capsys.readouterr().err
    assert "p4ss-Wd1" not in err and err.count("***") == 2


def test_the_zookeeper_digest_password_never_reaches_the_console_at_vv(tmp_path, capsys):
    """kazoo logs its Auth request at DEBUG with the digest credential (issue 26): at -vv
    the line is shown with the credential masked, however the password is spelled (a
    backslash, a quote or a non-ASCII letter comes out escaped in its repr)."""
    import yaml
    from kazoo.protocol.serialization import Auth

    from storm_kafka_compat.cli import console
    password = "S3c'r\\et-pässwörd"
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump({
        "spout": {"topic": "t", "zkRoot": "/r", "id": "s"},
        "hosts": {"static": {0: "127.0.0.1:9"}}, "bolt": "tests.bolts:record",
        "topology": {"name": "n", "storm.zookeeper.auth.scheme": "digest",
                     "storm.zookeeper.auth.payload": f"alice:{password}"}}))
    console.configure(2)
    try:
        console.load_config(str(config))
        # exactly what kazoo.protocol.connection does when it authenticates
        logging.getLogger("kazoo.client").log(logging.DEBUG, "Sending request(xid=%s): %s", -4,
                                              Auth(0, "digest", f"alice:{password}"))
        logging.getLogger("kazoo.client").debug("sent %r", f"alice:{password}".encode())
        logging.getLogger("storm_kafka_compat.x").warning("password was %s", password)
    finally:
        console.configure(0)
    err = capsys.readouterr().err
    # repr quotes with " as the password holds a '
    assert """Sending request(xid=-4): Auth(auth_type=0, scheme='digest', auth="***")""" in err
    assert 'sent b"***"' in err and "password was ***" in err
    for shown in (password, repr(password)[1:-1], repr(password.encode())[2:-1], "pässwörd",
                  "S3c"):
        assert shown not in err, shown


def test_run_refuses_a_bolt_that_cannot_be_imported_before_anything_starts(tmp_path, capsys):
    """Issue 26, item 1: a bolt that cannot be imported is a configuration error (exit
    2) said at once, before ZooKeeper, Kafka or Spark are touched (none run here)."""
    import time

    import yaml
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump({
        "spout": {"topic": "t", "zkRoot": "/r", "id": "s"},
        "hosts": {"static": {0: "127.0.0.1:9"}}, "topology": {"name": "n"},
        "bolt": "no_such_module_26:bolt"}))
    started = time.monotonic()
    assert main(["run", str(config)]) == 2
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert err.startswith("Error: bolt='no_such_module_26:bolt': module 'no_such_module_26' "
                          "cannot be imported"), err
    bad_scheme = yaml.safe_load(config.read_text())
    bad_scheme["bolt"] = "tests.bolts:record"
    bad_scheme["spout"]["scheme"] = "tests.bolts:no_such_scheme"
    config.write_text(yaml.safe_dump(bad_scheme))
    assert main(["run", str(config)]) == 2
    assert "no_such_scheme" in capsys.readouterr().err


def test_output_to_a_reader_that_went_away_is_dropped_not_an_error() -> None:
    """`run ... | tee log` and a Ctrl-C that ends tee too: the summary written after
    the commit must not turn a clean stop into exit 1 (issue 26, item 5)."""
    import os

    from storm_kafka_compat.cli.render import table, write
    read_end, write_end = os.pipe()
    out = os.fdopen(write_end, "w")
    os.close(read_end)                               # the reader is gone
    try:
        write("first line\n", out)                   # EPIPE: the stream becomes /dev/null
        table([{"A": 1}], ("A",), out)               # and later writes go nowhere
        assert os.path.samestat(os.fstat(out.fileno()), os.stat(os.devnull))
    finally:
        out.close()


def test_the_commands_demo_keep_prints_can_be_pasted_into_a_shell(monkeypatch, tmp_path):
    """Issue 26, item 8: after the README's install the console script is in .venv/bin,
    not on the PATH; the lines name it so a shell runs them, and include `status`."""
    import shlex
    import subprocess

    from storm_kafka_compat.workshop.demo import command_name, next_steps
    monkeypatch.setenv("PATH", "/usr/bin:/bin")            # the venv is not on it
    skc = command_name()
    assert skc != "storm-kafka-compat"
    config = tmp_path / "kept dir" / "job.yaml"
    lines = next_steps({"config": str(config), "zookeeper": "127.0.0.1:2181",
                        "zookeeper_pid": 11, "broker_pid": 12})
    assert all(line.startswith(skc + " ") for line in lines[:-1])
    assert any(f"{skc} status 8099" in line for line in lines)
    assert shlex.split(lines[0])[-1] == str(config)         # a path with a space stays whole
    done = subprocess.run(f"{skc} --version", shell=True, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("storm-kafka-compat "), done.stderr


def test_the_run_summary_counts_in_words_and_repeats_an_unusable_document(capsys):
    """Issue 26: "1 batches", "1 round trips"; and a partition that started over a
    corrupt document (exit 0 under corruptStatePolicy: storm) is said again at the end."""
    from storm_kafka_compat.cli.run_cmd import plural, print_summary
    from storm_kafka_compat.engine.report import PartitionSummary, RunSummary
    assert [plural(n, "batch") for n in (0, 1, 2)] == ["0 batches", "1 batch", "2 batches"]
    assert plural(1, "round trip") == "1 round trip" and plural(3, "message") == "3 messages"
    summary = RunSummary(batches=1, messages=1, elapsed_s=2.0, stopped_by="caught up",
                         commits=1, commit_round_trips=1, partitions=[
                             PartitionSummary("t", 0, "/r/s/partition_0", "invalid_state", 0),
                             PartitionSummary("t", 1, "/r/s/partition_1", "resume", 5)])
    print_summary(summary)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "warning: t/0 found an unusable document at /r/s/partition_0 and started at 0 "
        "(corruptStatePolicy: storm); see the warning at the start and `offsets explain`",
        "stopped: caught up; 1 message in 1 batch, 2.0 s; 1 document written in 1 round trip"]


def test_config_check_builds_the_topology_its_groupings_on_the_schemes_fields(tmp_path, capsys):
    """A misspelt grouping, a source no component has, or a field the scheme does not
    emit is an error of `config check` (exit 2, naming it), as it is of `run`."""
    import yaml
    config = tmp_path / "job.yaml"

    def check(inputs):
        config.write_text(yaml.safe_dump({
            "spout": {"topic": "t", "zkRoot": "/r", "id": "s", "scheme": "string"},
            "hosts": {"static": {0: "127.0.0.1:9"}},
            "topology": {"name": "n", "bolts": [{"name": "count", "bolt": "tests.bolts:record",
                                                 "inputs": inputs}]}}))
        code = main(["config", "check", str(config)])
        return code, capsys.readouterr().err

    code, err = check([{"from": "spout", "grouping": "fields", "fields": ["str"]}])
    assert code == 0 and err.rstrip().endswith("valid"), err
    code, err = check([{"from": "spout", "grouping": "fieldz"}])
    assert code == 2 and "grouping 'fieldz' is not one of shuffle, fields" in err, err
    code, err = check([{"from": "spout", "grouping": "fields", "fields": ["word"]}])
    assert code == 2 and "'word'" in err and "valid" not in err.split("Error:")[0], err
    code, err = check([{"from": "splitter"}])
    assert code == 2 and "'splitter'" in err, err


def test_config_check_builds_a_topology_of_shell_bolts_too(tmp_path, capsys):
    """A topology whose bolts import nothing (multilang commands) is built as well."""
    import yaml
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump({
        "spout": {"topic": "t", "zkRoot": "/r", "id": "s", "scheme": "string"},
        "hosts": {"static": {0: "127.0.0.1:9"}},
        "topology": {"name": "n", "bolts": [
            {"name": "split", "shell": ["python3", "split.py"], "output_fields": ["word"]},
            {"name": "count", "shell": ["python3", "count.py"], "output_fields": [],
             "inputs": [{"from": "split", "grouping": "fields", "fields": ["wrd"]}]}]}}))
    assert main(["config", "check", str(config)]) == 2
    assert "'wrd'" in capsys.readouterr().err
    assert main(["config", "check", str(config), "--no-imports"]) == 0
