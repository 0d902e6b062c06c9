#!/usr/bin/env bash
# serve over HTTPS (loopback only, bounded). A self-signed certificate for 127.0.0.1 is made
# here with `openssl req`. Asserts:
#   - a missing, unreadable or non-PEM certificate or key, a key not matching the certificate,
#     or one of the pair alone: serve refuses to start (exit 2) with a message naming the file;
#   - curl --cacert: /api/v1/health 200 without a token, /api/v1/jobs 401 without it and 200
#     with it; without --cacert the certificate is not trusted (curl exit 60);
#   - plain HTTP to the HTTPS port gets 400 telling it to use https, and the connection closes;
#   - the bounded connection handling holds under TLS (tests/service/http_limits.py over TLS:
#     idle connections do not starve /health, the connection cap, idle, silent and slow clients);
#   - /metrics counts the failed handshakes (reason="tls_failed").
# Usage: serve_tls.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
command -v openssl >/dev/null || { echo "SKIP: openssl missing"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl missing"; exit 77; }
. "$here/serve_harness.sh"

# The certificate and key, and a second key that matches nothing.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>"$work/openssl.log"
openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:prime256v1 -out "$work/other.pem" \
  2>>"$work/openssl.log"
chmod 600 "$work/key.pem" "$work/other.pem"
echo "not a certificate" > "$work/junk.pem"

# 1. Refusals: exit 2 and a message naming the file, before anything listens.
refuse() {  # refuse WHAT EXPECTED_TEXT ARGS...
  local what=$1 want=$2
  shift 2
  rm -f "$work/ready.json"
  set +e
  timeout 20 "$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 \
    --ready-file "$work/ready.json" "$@" 2>"$work/refuse.log" >/dev/null
  local rc=$?
  set -e
  if [ $rc = 2 ] && grep -qF -- "$want" "$work/refuse.log" && [ ! -f "$work/ready.json" ]; then
    check ok "$what: exit 2, $(grep -F -- "$want" "$work/refuse.log" | head -1 | cut -c1-160)"
  else
    check fail "$what: exit $rc, wanted 2 and '$want': $(cat "$work/refuse.log")"
  fi
}
refuse "missing certificate" "--tls-cert $work/none.pem: cannot read it" \
  --tls-cert "$work/none.pem" --tls-key "$work/key.pem"
refuse "missing key" "--tls-key $work/none.pem: cannot read it" \
  --tls-cert "$work/cert.pem" --tls-key "$work/none.pem"
refuse "key is a directory" "--tls-key $work: cannot read it" \
  --tls-cert "$work/cert.pem" --tls-key "$work"
refuse "certificate not PEM" "--tls-cert $work/junk.pem: not a PEM certificate" \
  --tls-cert "$work/junk.pem" --tls-key "$work/key.pem"
refuse "key not PEM" "--tls-key $work/junk.pem: not an unencrypted PEM private key" \
  --tls-cert "$work/cert.pem" --tls-key "$work/junk.pem"
refuse "key of another certificate" "--tls-key $work/other.pem: does not match the certificate" \
  --tls-cert "$work/cert.pem" --tls-key "$work/other.pem"
refuse "certificate without key" "--tls-key is missing" --tls-cert "$work/cert.pem"
refuse "key without certificate" "--tls-cert is missing" --tls-key "$work/key.pem"

# 2. HTTPS with a token.
printf 'tls-test-token\n' > "$work/token"
start_serve "$work/serve.log" --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 \
  --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" --token-file "$work/token" \
  --http-threads 2 --http-max-connections 6 --http-idle-s 1 --http-request-s 1
url=https://127.0.0.1:$SERVE_HTTP
get() {  # get PATH [curl args...] -> HTTP code, body in $work/body
  local path=$1
  shift
  curl -s -o "$work/body" -w '%{http_code}' --max-time 5 --cacert "$work/cert.pem" "$@" \
    "$url$path" || true
}
health=$(get /api/v1/health)
noauth=$(get /api/v1/jobs)
authed=$(get /api/v1/jobs -H "Authorization: Bearer tls-test-token")
jobs_body=$(cat "$work/body")
[ "$health" = 200 ] && [ "$noauth" = 401 ] && [ "$authed" = 200 ] &&
  check ok "https: health $health, jobs without token $noauth, with token $authed ($jobs_body)" ||
  check fail "https: health $health, jobs without token $noauth, with token $authed"
set +e
curl -s -o /dev/null --max-time 5 "$url/api/v1/health"
untrusted=$?
set -e
[ $untrusted = 60 ] && check ok "without --cacert the self-signed certificate is refused (curl 60)" ||
  check fail "without --cacert: curl exit $untrusted, wanted 60"

# 3. Plain HTTP to the HTTPS port.
set +e
plain=$(curl -s -o "$work/plain" -w '%{http_code}' --max-time 5 \
  "http://127.0.0.1:$SERVE_HTTP/api/v1/health")
plain_rc=$?
set -e
if [ "$plain" = 400 ] && grep -q "use https://" "$work/plain"; then
  check ok "plain HTTP to the HTTPS port: $plain $(cat "$work/plain") (curl exit $plain_rc)"
else
  check fail "plain HTTP to the HTTPS port: code '$plain', curl exit $plain_rc, body $(head -c 200 "$work/plain" 2>/dev/null)"
fi
# The server still serves HTTPS after it.
again=$(get /api/v1/health)
[ "$again" = 200 ] && check ok "https still answers after the plain request ($again)" ||
  check fail "https after the plain request: $again"

# 4. The connection limits under TLS.
if timeout 90 $py "$here/http_limits.py" "$SERVE_HTTP" 2 6 1 1 "$work/cert.pem" tls-test-token; then
  check ok "http_limits.py over TLS"
else
  check fail "http_limits.py over TLS"
fi

# 5. /metrics counts the failed handshakes (the plain request at least).
get /metrics -H "Authorization: Bearer tls-test-token" >/dev/null
failed=$(sed -n 's/^llmprism_http_connections_closed_total{reason="tls_failed"} //p' "$work/body")
[ "${failed:-0}" -ge 1 ] && check ok "/metrics: tls_failed $failed" ||
  check fail "/metrics: tls_failed '${failed}'"

stop_serve && check ok "serve exits 0 on SIGTERM" || check fail "serve exit $? on SIGTERM"
[ $fails = 0 ] || { echo "$fails check(s) failed"; tail -20 "$work/serve.log"; exit 1; }
echo "all checks passed"
