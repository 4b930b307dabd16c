#!/usr/bin/env python3
"""Benchmark the price-search service's three back ends with wrk.

Starts keel-server and the service on free loopback ports, loads the
catalogue (the service generates it and pipelines IDX.ADD into keel-server),
runs wrk against each back end in turn, and writes a markdown table
(stdout and OUT/report.md) and a small HTML report.

Settings come from the environment: DURATION (s, default 10), WRK_THREADS (1),
WRK_CONNECTIONS (16), SERVICE_THREADS (2), KEEL_THREADS (1), OFFERINGS (50),
PRICE_BENCH_OUT (target/price-bench), REPORT_HTML
(examples/price-search/report.html). Expects release builds of keel-server
and price-search under target/release (`make price-bench` builds them).
"""

import html
import json
import os
import re
import socket
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
env = os.environ.get
DURATION = int(env("DURATION", "10"))
WRK_THREADS = int(env("WRK_THREADS", "1"))
WRK_CONNECTIONS = int(env("WRK_CONNECTIONS", "16"))
SERVICE_THREADS = int(env("SERVICE_THREADS", "2"))
KEEL_THREADS = int(env("KEEL_THREADS", "1"))
OFFERINGS = int(env("OFFERINGS", "50"))
OUT = os.path.join(ROOT, env("PRICE_BENCH_OUT", "target/price-bench"))
REPORT_HTML = os.path.join(ROOT, env("REPORT_HTML", "examples/price-search/report.html"))
BIN = os.path.join(ROOT, "target", "release")
BACKENDS = ["map", "bitmap", "keel"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def wait_port(port, proc, what):
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not start listening on {port}")


def mb(n):
    return f"{n / 1e6:.1f} MB" if n is not None else "n/a"


def main():
    os.makedirs(OUT, exist_ok=True)
    samples = os.path.join(OUT, "samples")
    procs = []
    try:
        kport = free_port()
        keel = subprocess.Popen(
            [os.path.join(BIN, "keel-server"), "--port", str(kport), "--bind", "127.0.0.1",
             "--threads", str(KEEL_THREADS), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(keel)
        wait_port(kport, keel, "keel-server")
        keel_rss0 = rss_bytes(keel.pid)

        sport = free_port()
        log = open(os.path.join(OUT, "service.log"), "w+")
        t0 = time.time()
        service = subprocess.Popen(
            [os.path.join(BIN, "price-search"), "--port", str(sport),
             "--keel", f"redis://127.0.0.1:{kport}", "--threads", str(SERVICE_THREADS),
             "--offerings", str(OFFERINGS), "--samples", samples],
            stdout=log, stderr=subprocess.STDOUT)
        procs.append(service)
        wait_port(sport, service, "price-search")
        load_s = time.time() - t0
        log.seek(0)
        lines = log.read().splitlines()
        stats = json.loads(next(l for l in lines if l.startswith("{")))
        keel_rss1 = rss_bytes(keel.pid)
        service_rss = rss_bytes(service.pid)

        results = {}
        for be in BACKENDS:
            cmd = ["wrk", f"-t{WRK_THREADS}", f"-c{WRK_CONNECTIONS}", f"-d{DURATION}s", "--latency",
                   "-s", os.path.join(ROOT, "examples/price-search/wrk.lua"),
                   f"http://127.0.0.1:{sport}", "--", f"/v1/search/{be}/prices"]
            print(f"wrk {be} ({DURATION}s) ...", file=sys.stderr, flush=True)
            out = subprocess.run(cmd, capture_output=True, text=True,
                                 env=dict(os.environ, PRICE_SAMPLES=os.path.join(samples, "samples.lua")))
            with open(os.path.join(OUT, f"wrk-{be}.txt"), "w") as f:
                f.write(out.stdout + out.stderr)
            m = re.search(r"^RESULT (.*)$", out.stdout, re.M)
            if not m:
                sys.exit(f"wrk gave no result for {be}:\n{out.stdout}{out.stderr}")
            r = {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
            r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
            results[be] = r
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()

    k = stats.get("keel") or {}
    mem = {
        "map": stats["map"]["heap_bytes"],
        "bitmap": stats["bitmap"]["heap_bytes"],
        "keel": k.get("memory_usage"),
    }
    rss = {
        "map": stats["map"]["rss_bytes"],
        "bitmap": stats["bitmap"]["rss_bytes"],
        "keel": keel_rss1 - keel_rss0,
    }
    base = results["map"]["rps"]
    search_us = stats.get("search_us") or {}
    rows = []
    for be in BACKENDS:
        r = results[be]
        rows.append([
            be, f"{r['rps']:,.0f}", f"{r['rps'] / base:.1f}x",
            f"{r['p50_us']} µs", f"{r['p90_us']} µs", f"{r['p99_us']} µs",
            str(r["errors"] + r["non2xx"]),
            f"{search_us[be]:.1f} µs" if search_us.get(be) is not None else "n/a",
            mb(mem[be]), mb(rss[be]),
        ])
    head = ["back end", "requests/s", "vs map", "p50", "p90", "p99", "errors",
            "one search, no HTTP", "data (heap / MEMORY USAGE)", "RSS growth"]
    setup = (
        f"{stats['prices']:,} prices ({OFFERINGS} offerings x 9,744); wrk {WRK_THREADS} thread(s), "
        f"{WRK_CONNECTIONS} connections, {DURATION} s per back end; service {SERVICE_THREADS} "
        f"worker threads; keel-server --threads {KEEL_THREADS}; {os.cpu_count()} CPUs shared by all three."
    )
    notes = [
        "map: live heap (counting allocator) held after building the map from the generated prices; "
        "the prices themselves are the map's data.",
        "bitmap: live heap added by building the in-process index with payloads "
        f"(of which payloads {mb(stats['bitmap']['payload_bytes'])}, ids {mb(stats['bitmap']['id_bytes'])}; "
        f"the index's own estimate {mb(stats['bitmap']['index_heap_bytes'])}).",
        f"keel: MEMORY USAGE of the index key; RSS growth is keel-server's VmRSS after loading minus before "
        f"(INFO used_memory grew {mb(k.get('used_memory_delta'))}).",
        f"Service RSS after loading everything: {mb(service_rss)}; start-up with all three loads: {load_s:.1f} s "
        f"(keel-server load {stats.get('keel_load_ms', 0)} ms).",
    ]
    # The seed study's figures: 2,244,242 vs 162,471 requests in 30 s.
    seed_ratio = 2244242 / 162471
    keel, bitmap = results["keel"], results["bitmap"]
    targets = [
        f"keel p99 < 1 ms: {keel['p99_us']} µs, {'met' if keel['p99_us'] < 1000 else 'NOT met'}",
        f"keel >= 10x map's requests/s: {keel['rps'] / base:.1f}x, "
        f"{'met' if keel['rps'] >= 10 * base else 'NOT met'}",
        f"bitmap/map requests/s above the seed study's {seed_ratio:.1f}x: {bitmap['rps'] / base:.1f}x, "
        f"{'met' if bitmap['rps'] / base > seed_ratio else 'NOT met'}",
        f"index+payloads <= half the map's memory: {mem['bitmap'] / mem['map']:.2f} of it in-process, "
        + (f"{mem['keel'] / mem['map']:.2f} in keel-server, " if mem["keel"] else "")
        + f"{'met' if mem['bitmap'] * 2 <= mem['map'] else 'NOT met'}",
    ]
    notes += ["One search, no HTTP: mean over 1,000 sampled requests asked one at a time at start-up "
              "(keel: one round trip each)."]
    md = [f"Setup: {setup}", "", "| " + " | ".join(head) + " |",
          "|" + "---|" * len(head)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    md += [""] + [f"- {n}" for n in notes]
    md += ["", "Targets:"] + [f"- {t}" for t in targets]
    text = "\n".join(md) + "\n"
    print(text)
    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write(text)

    cells = lambda tag, r: "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in r)
    page = (
        "<!doctype html><meta charset=utf-8><title>price-search benchmark</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #999;padding:.3em .6em;text-align:right}"
        "td:first-child{text-align:left}</style>"
        f"<h1>price-search: map vs bitmap index vs keel-server</h1><p>{html.escape(setup)}</p>"
        f"<table><tr>{cells('th', head)}</tr>"
        + "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
        + "</table><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>"
        + "<h2>Targets</h2><ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in targets) + "</ul>"
        + f"<p>Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.</p>\n"
    )
    with open(REPORT_HTML, "w") as f:
        f.write(page)
    print(f"HTML report: {os.path.relpath(REPORT_HTML, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
