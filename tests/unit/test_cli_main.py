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
