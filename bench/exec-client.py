#!/usr/bin/env python3
"""bench/exec's Python client: the exec round trip as a Python program
sees it, through the standard library's http.client over the daemon's
unix socket (one keep-alive connection, as a client library keeps one).

    exec-client.py SOCKET ID N     N sequential POST /v1/sandboxes/ID/exec
                                   {"cmd":["true"],"wait":true}; prints one
                                   duration in microseconds per line

The interpreter's start and the connect are not timed: only each request,
from the call that sends it to the last byte of its parsed answer."""
import http.client
import json
import socket
import sys
import time


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("agentbox")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def main():
    sock, box, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    conn = UnixConnection(sock)
    conn.connect()
    body = b'{"cmd":["true"],"wait":true}'
    headers = {"Content-Type": "application/json"}
    path = "/v1/sandboxes/%s/exec" % box
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        t1 = time.perf_counter_ns()
        if resp.status != 200 or answer.get("exit_code") != 0:
            sys.exit("exec failed: %d %s" % (resp.status, answer))
        out.append("%d" % ((t1 - t0) // 1000))
    print("\n".join(out))


if __name__ == "__main__":
    main()
