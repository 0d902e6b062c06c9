#!/usr/bin/python3
"""Hostile HTTP clients against a running `llmprism serve` (loopback only, every wait bounded).

Usage: http_limits.py PORT THREADS MAX_CONNECTIONS IDLE_S REQUEST_S [CA_FILE [TOKEN]]
serve must run with --http-threads THREADS --http-max-connections MAX_CONNECTIONS
--http-idle-s IDLE_S --http-request-s REQUEST_S, and over HTTPS (--tls-cert, verified with
CA_FILE) when CA_FILE is given; TOKEN, if any, is sent with every request. Asserts, printing one
line each:
  1. with THREADS + 2 idle connections open (half never sent a request, half keep-alive after
     one), GET /api/v1/health answers 200 within 2 s, several times in a row;
  2. more connections than MAX_CONNECTIONS: the extra ones get 503 at once (within 2 s); over
     TLS they are closed at once (the accepting thread does no handshake);
  3. a connection that sends nothing is closed by the server within IDLE_S + 2 s;
  4. a client trickling its request a byte at a time (over TLS: a TLS record per byte) is cut
     off within REQUEST_S + 2 s;
  5. /metrics counts the refused, idle and slow connections.
Exit 0 when all hold, 1 otherwise.
"""
import socket
import ssl
import sys
import time

port, threads, max_conn = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
idle_s, request_s = float(sys.argv[4]), float(sys.argv[5])
ca_file = sys.argv[6] if len(sys.argv) > 6 else None
token = sys.argv[7] if len(sys.argv) > 7 else None
tls = ssl.create_default_context(cafile=ca_file) if ca_file else None
auth = f"Authorization: Bearer {token}\r\n" if token else ""
fails = 0


def check(ok, msg):
    global fails
    print(("ok   " if ok else "FAIL ") + msg, flush=True)
    if not ok:
        fails += 1


def connect_raw():
    """A TCP connection, never a TLS session: it holds the server like a client that stalls."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def connect():
    """A connection to speak HTTP on: over TLS, after the handshake (verifying the certificate)."""
    s = connect_raw()
    return tls.wrap_socket(s, server_hostname="127.0.0.1") if tls else s


def read_response(s, timeout):
    """One HTTP response (headers + Content-Length body); (status, body) or (None, why)."""
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                return None, "closed"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return int(head.split(b" ")[1]), body
    except (socket.timeout, ssl.SSLWantReadError):
        return None, "timeout"
    except (ConnectionResetError, ssl.SSLError) as e:
        return None, f"closed ({e.__class__.__name__})"


def get(path, timeout=2.0):
    t0 = time.monotonic()
    s = connect()
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n".encode())
    status, body = read_response(s, timeout)
    s.close()
    return status, body, time.monotonic() - t0


def closed_within(s, seconds):
    """Seconds until the server closes `s` (recv returns b"" or resets), or None."""
    t0 = time.monotonic()
    s.settimeout(0.1)
    while time.monotonic() - t0 < seconds:
        try:
            if s.recv(4096) == b"":
                return time.monotonic() - t0
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            return time.monotonic() - t0
    return None


# 1. Idle connections do not starve /health.
held = []
for i in range(threads + 2):
    s = connect()
    if i % 2 == 1:  # keep-alive: one request answered, then idle
        s.sendall(f"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
        status, _ = read_response(s, 5)
        check(status == 200, f"keep-alive connection {i}: first request answered ({status})")
    held.append(s)
time.sleep(0.5)
for attempt in range(3):
    status, _, took = get("/api/v1/health")
    check(status == 200 and took < 2.0,
          f"/api/v1/health with {len(held)} idle connections open on {threads} workers: "
          f"{status} in {took:.2f} s")
for s in held:
    s.close()
time.sleep(0.3)

# 2. Beyond the connection cap: 503 at once.
held = []
for i in range(max_conn):
    s = connect_raw()
    # Trickle: one byte now (of a request, or of a TLS handshake record), keeps each connection
    # busy (reading a request, or the handshake) for REQUEST_S.
    s.sendall(b"\x16" if tls else b"G")
    held.append(s)
time.sleep(0.3)
t0 = time.monotonic()
extra = connect_raw()
if tls:
    took = closed_within(extra, 2.0)
    check(took is not None, f"connection {max_conn + 1} of max {max_conn}: closed after "
          f"{'never' if took is None else f'{took:.2f} s'}")
else:
    status, body = read_response(extra, 2.0)
    took = time.monotonic() - t0
    check(status == 503, f"connection {max_conn + 1} of max {max_conn}: {status} in {took:.2f} s "
          f"({body[:60] if isinstance(body, bytes) else body})")
extra.close()
for s in held:
    s.close()
time.sleep(request_s + 0.5)  # the workers drop the trickling connections

# 3. A connection that never sends is closed after the idle timeout.
s = connect_raw()
took = closed_within(s, idle_s + 2)
check(took is not None, f"silent connection closed by the server after "
      f"{'never' if took is None else f'{took:.2f} s'} (--http-idle-s {idle_s})")
s.close()

# 4. A slow client (a byte every 0.2 s) is cut off at the request deadline.
s = connect()
request = b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 400 + b"\r\n\r\n"
t0 = time.monotonic()
cut = None
s.settimeout(0.2)
for b in request:
    try:
        s.send(bytes([b]))
        if s.recv(4096) == b"":
            cut = time.monotonic() - t0
            break
    except (socket.timeout, ssl.SSLWantReadError):
        pass
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
        cut = time.monotonic() - t0
        break
    if time.monotonic() - t0 > request_s + 2:
        break
check(cut is not None and cut <= request_s + 2,
      f"slow client cut off after {'never' if cut is None else f'{cut:.2f} s'} "
      f"(--http-request-s {request_s})")
s.close()

# 5. /metrics counts them.
status, body, _ = get("/metrics")
metrics = {}
for line in body.decode().splitlines():
    if line.startswith("llmprism_http_"):
        k, _, v = line.rpartition(" ")
        metrics[k] = float(v)
refused = metrics.get('llmprism_http_connections_total{outcome="refused"}', 0)
idle = metrics.get('llmprism_http_connections_closed_total{reason="idle"}', 0)
slow = metrics.get('llmprism_http_connections_closed_total{reason="slow"}', 0)
check(status == 200 and refused >= 1 and idle >= 1 and slow >= 1,
      f"/metrics: refused {refused:.0f}, closed idle {idle:.0f}, closed slow {slow:.0f}")
sys.exit(1 if fails else 0)
