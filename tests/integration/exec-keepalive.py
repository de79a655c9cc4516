#!/usr/bin/env python3
"""daemon-api.bats' keep-alive exec client: the steps on ONE HTTP/1.1
connection to the daemon's unix socket, one JSON line out per step.

    exec-keepalive.py SOCK DAEMON_PID STEP...
      exec:ID:SHELL-COMMAND   POST .../exec {"cmd": SHELL-COMMAND, "wait": true}
      pause:ID                POST .../pause
      delete:ID               DELETE ...?force=1
      sockets                 the daemon's socket fds now, minus before the connect
    Last line: {"released": true} once the daemon holds no more sockets than
    before the connect, after it was closed (at most 10 s)."""
import importlib.util
import json
import os
import sys
import time

# The one HTTP-over-unix-socket client of the Python tools: bench's.
_spec = importlib.util.spec_from_file_location(
    "exec_client",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "exec-client.py"))
_client = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_client)
UnixConnection = _client.UnixConnection


def sockets(pid):
    n = 0
    for fd in os.listdir("/proc/%s/fd" % pid):
        try:
            n += os.readlink("/proc/%s/fd/%s" % (pid, fd)).startswith("socket:")
        except OSError:
            pass
    return n


def call(conn, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    text = resp.read().decode()
    return {"status": resp.status, "body": json.loads(text) if text.strip() else None}


def main():
    sock, pid, steps = sys.argv[1], sys.argv[2], sys.argv[3:]
    before = sockets(pid)
    conn = UnixConnection(sock)
    conn.connect()
    for step in steps:
        kind, _, rest = step.partition(":")
        if kind == "exec":
            box, _, cmd = rest.partition(":")
            out = call(conn, "POST", "/v1/sandboxes/%s/exec" % box, {"cmd": cmd, "wait": True})
        elif kind == "pause":
            out = call(conn, "POST", "/v1/sandboxes/%s/pause" % rest)
        elif kind == "delete":
            out = call(conn, "DELETE", "/v1/sandboxes/%s?force=1" % rest)
        else:
            out = {"sockets": sockets(pid) - before}
        print(json.dumps(out), flush=True)
    conn.close()
    deadline = time.monotonic() + 10
    while sockets(pid) > before and time.monotonic() < deadline:
        time.sleep(0.05)
    print(json.dumps({"released": sockets(pid) <= before}))


if __name__ == "__main__":
    main()
