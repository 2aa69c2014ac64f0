#!/usr/bin/env python3
"""Keystroke-to-echo latency: `berth shell` into a namespace workspace next to a terminal opened on the host with
`script`, in the same run, rounds alternating. Each sample types one character into the shell's line editor
(bash --norc -i, readline echoes it) and times until the character comes back on the terminal; Ctrl-U clears the
line before the next one. Prints the median and p90 per path in milliseconds.

    bench/terminal-latency.py [SAMPLES] [ROUNDS]      # needs mcp-server/target/berth.jar and JAVA_HOME (scripts/env.sh)
"""
import json, os, pty, select, shutil, statistics, subprocess, sys, tempfile, time

SAMPLES = int(sys.argv[1]) if len(sys.argv) > 1 else 100
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAR = os.path.join(ROOT, "mcp-server", "target", "berth.jar")
JAVA = os.path.join(os.environ.get("JAVA_HOME", "/usr"), "bin", "java")


def make_workspace(home):
    """A persistent namespace workspace named bench, opened through berth stdio (raw JSON-RPC), then parked."""
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                                      "clientInfo": {"name": "bench", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "open_workspace",
                                                                      "arguments": {"name": "bench", "lifecycle": "persistent"}}},
    ]
    p = subprocess.Popen([JAVA, "-jar", JAR, "stdio", "--home", home, "--isolation", "namespace"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for m in msgs:
        p.stdin.write(json.dumps(m) + "\n")
        p.stdin.flush()
        if "id" in m:
            while True:
                line = p.stdout.readline()
                if not line:
                    sys.exit("berth stdio ended early")
                r = json.loads(line)
                if r.get("id") == m["id"]:
                    if "error" in r or r.get("result", {}).get("isError"):
                        sys.exit("open_workspace failed: %s" % line)
                    break
    p.stdin.close()
    p.wait(timeout=120)


def read_until(fd, pred, timeout=120.0):
    buf = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            try:
                d = os.read(fd, 65536)
            except OSError:
                break
            if not d:
                break
            buf += d
            if pred(buf):
                return buf
    sys.exit("timed out; last output: %r" % buf[-300:])


def drain(fd, quiet=0.05):
    while select.select([fd], [], [], quiet)[0]:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


def measure(argv, samples):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["PS1"] = "READY> "
        os.execvp(argv[0], argv)
    os.write(fd, b"PS1='READY> '\r")
    read_until(fd, lambda b: b.endswith(b"READY> "))
    drain(fd, 0.3)
    lat = []
    for i in range(samples):
        c = bytes([ord("a") + i % 26])
        t = time.perf_counter()
        os.write(fd, c)
        read_until(fd, lambda b: c in b)
        lat.append((time.perf_counter() - t) * 1000)
        os.write(fd, b"\x15")  # Ctrl-U: clear the line
        drain(fd)
    os.write(fd, b"exit\r")
    try:
        read_until(fd, lambda b: False, timeout=60)
    except SystemExit:
        pass
    os.waitpid(pid, 0)
    return lat


def main():
    home = tempfile.mkdtemp(prefix="berth-latency-")
    try:
        make_workspace(home)
        berth = [JAVA, "-jar", JAR, "shell", "bench", "--home", home, "--isolation", "namespace", "--", "exec bash --norc -i"]
        script = ["script", "-q", "-c", "bash --norc -i", "/dev/null"]
        res = {"berth shell": [], "script (host)": []}
        for _ in range(ROUNDS):
            res["script (host)"] += measure(script, SAMPLES)
            res["berth shell"] += measure(berth, SAMPLES)
        for name, v in res.items():
            v.sort()
            print("%-14s keystroke-to-echo: median %.2f ms, p90 %.2f ms (%d samples)"
                  % (name, statistics.median(v), v[int(len(v) * 0.9)], len(v)))
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
