#!/usr/bin/env bash
# Installs every Debian package llmprism needs to build and test, idempotently.
# Run as root on Debian 12. Safe to run again: apt-get skips what is present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev libzstd-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev libpcap-dev libcpp-httplib-dev
  python3
  # ingest interop and fuzzing (tests/interop, scripts/fuzz.sh): packet builders and reference
  # decoders, flow exporters and a reference collector, clang's libFuzzer
  tcpdump tshark python3-scapy softflowd nfdump pmacct clang libclang-rt-14-dev
  clang-format universal-ctags  # scripts/format.sh, scripts/longest_functions.py
  chromium   # headless browser for the HTML report test (tests/browser), driven by playwright-core
  # counters mode: real Prometheus + promtool backfill (tests/counters/prometheus_e2e.sh); promtool
  # also checks and tests the shipped alerting rules (tests/deploy/prometheus_rules.sh)
  prometheus
  # serve --alertmanager: a real Alertmanager takes its alerts (tests/service/serve_alertmanager.sh)
  prometheus-alertmanager
  # serve over HTTPS (cpp-httplib's SSLServer links OpenSSL; tests/service/serve_tls.sh makes a
  # self-signed certificate with openssl and talks to serve with curl)
  libssl-dev openssl curl
  # the real-traffic corpus (tests/realtraffic): torch.distributed training in network namespaces
  # joined by a bridge (iproute2: ip netns, tc), captured with tcpdump, compressed with zstd
  python3-torch iproute2 zstd
  # scale-out (src/scaleout, tests/scaleout): NATS JetStream between collectors and analysers
  nats-server libnats-dev
)
# node/npm run the browser test; a machine may already have them from another source (nodesource
# ships npm inside its nodejs package, which Debian's npm would conflict with): add only if absent.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages (${missing[*]}); run as root to install them" >&2
  exit 2
fi

export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -q
apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
echo "setup: installed ${missing[*]}"
