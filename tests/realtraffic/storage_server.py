#!/usr/bin/env python3
"""A storage node for the real-traffic corpus: bulk TCP reads and writes.

Requests, one per connection: "GET n\\n" (the server sends n bytes: a data-loading read) or
"PUT n\\n" + n bytes (a checkpoint write; the server answers "ok\\n" once all bytes are in).
Runs until SIGTERM. Usage: storage_server.py IP PORT
"""
import os
import signal
import socketserver
import sys

BLOCK = os.urandom(1 << 16)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        head = self.rfile.readline().split()
        if len(head) != 2 or head[0] not in (b"GET", b"PUT") or not head[1].isdigit():
            return
        n = int(head[1])
        if head[0] == b"GET":
            while n > 0:
                k = min(n, len(BLOCK))
                self.wfile.write(BLOCK[:k])
                n -= k
        else:
            while n > 0:
                chunk = self.rfile.read(min(n, 1 << 16))
                if not chunk:
                    return
                n -= len(chunk)
            self.wfile.write(b"ok\n")


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    server = Server((sys.argv[1], int(sys.argv[2])), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


if __name__ == "__main__":
    main()
