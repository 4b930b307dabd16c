"""redis-benchmark, the stock load generator, runs its standard tests to the end
against the server, unpipelined and pipelined."""

import re
import shutil
import subprocess

import pytest

from conftest import running_server

TESTS = ["ping_inline", "ping_mbulk", "set", "get", "incr", "mset"]
# How redis-benchmark names each -t test in its report.
LABELS = {
    "ping_inline": "PING_INLINE",
    "ping_mbulk": "PING_MBULK",
    "set": "SET",
    "get": "GET",
    "incr": "INCR",
    "mset": "MSET (10 keys)",
}
RATE = re.compile(r"^\s*(?P<label>[^:\r\n]+): (?P<rps>[0-9.]+) requests per second")


def parse_rates(output):
    """Map each test label to its final requests-per-second figure.

    With -q redis-benchmark redraws a progress line with carriage returns and
    ends each test with `LABEL: N requests per second, p50=...`.
    """
    rates = {}
    for line in re.split(r"[\r\n]+", output):
        m = RATE.match(line)
        if m:
            rates[m.group("label").strip()] = float(m.group("rps"))
    return rates


def run_benchmark(port, *extra):
    exe = shutil.which("redis-benchmark")
    assert exe, "redis-benchmark is not installed (make deps installs redis-tools)"
    cmd = [exe, "-h", "127.0.0.1", "-p", str(port), "-t", ",".join(TESTS),
           "-n", "100000", "-q", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    return proc.returncode, output


def check_all_tests_reported(rc, output):
    # "WARNING: Could not fetch server CONFIG" is harmless: redis-benchmark
    # falls back to defaults when CONFIG GET is unavailable.
    assert rc == 0, output[-2000:]
    assert "Error from server" not in output, output[-2000:]
    rates = parse_rates(output)
    for t in TESTS:
        label = LABELS[t]
        assert label in rates, f"no rate for {label}: {output[-2000:]}"
        assert rates[label] > 0, f"{label} reported {rates[label]}"


def test_parse_rates_reads_final_figures():
    sample = (
        "WARNING: Could not fetch server CONFIG\r\n"
        "PING_INLINE: rps=0.0 (overall: 0.0) avg_msec=-nan (overall: -nan)\r"
        "PING_INLINE: 46948.36 requests per second, p50=0.711 msec\n"
        "MSET (10 keys): rps=1.0 (overall: 1.0) avg_msec=1 (overall: 1)\r"
        "MSET (10 keys): 1234.50 requests per second, p50=2.000 msec\n"
    )
    assert parse_rates(sample) == {"PING_INLINE": 46948.36, "MSET (10 keys)": 1234.5}


@pytest.mark.parametrize("pipeline", [[], ["-P", "16"]], ids=["unpipelined", "pipelined16"])
def test_redis_benchmark_standard_tests(pipeline):
    with running_server() as srv:
        rc, output = run_benchmark(srv.port, *pipeline)
        check_all_tests_reported(rc, output)
        # The server is still serving afterwards.
        c = srv.client()
        assert c.ping() is True
        c.close()
