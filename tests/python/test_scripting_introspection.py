"""What operators see of scripts: MONITOR shows the script command, then
the commands it runs as coming from `lua`; SLOWLOG records those commands
with no client address."""

from conftest import running_server


def test_monitor_shows_the_script_then_its_commands_from_lua():
    with running_server() as s:
        r = s.client()
        other = s.client()
        other.ping()  # the connection's own set-up is done before MONITOR starts
        with r.monitor() as m:
            other.eval("return redis.call('set', 'mk', '1')", 0)
            first = m.next_command()
            second = m.next_command()
        assert first["command"] == "EVAL return redis.call('set', 'mk', '1') 0"
        assert first["client_type"] == "tcp"
        assert second["command"] == "set mk 1"
        assert second["client_type"] == "lua"


def test_slowlog_records_script_commands_without_a_client():
    with running_server() as s:
        r = s.client()
        r.config_set("slowlog-log-slower-than", 0)
        r.slowlog_reset()
        r.eval("return redis.call('set', 'sk', '1')", 0)
        entries = r.execute_command("SLOWLOG", "GET", 10)
        by_cmd = {tuple(e[3]): e for e in entries}
        inner = by_cmd[("set", "sk", "1")]
        assert inner[4] == "?:0" and inner[5] == ""
        outer = by_cmd[("EVAL", "return redis.call('set', 'sk', '1')", "0")]
        assert outer[4].startswith("127.0.0.1:")
