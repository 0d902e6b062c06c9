// File: service/dashboard.h
// The live dashboard of `llmprism serve` at /: the HTML report's views (output/html_report.h,
// rendered by the same report.js) for the latest window, refreshed without reloading the page.
// live.js fetches /api/v1/dashboard every 3 s and, when the snapshot changed, puts its report
// document into #prism-data and runs report.js again (removing the window listeners the previous
// run added, keeping the scroll position). A bearer token, when the service needs one, is given
// in the page address as #token=TOKEN (a fragment never reaches the server's logs).
#pragma once

#include <string_view>

namespace prism::service {

inline constexpr std::string_view kDashboardHtml = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>llmprism live</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/uPlot.css">
<link rel="stylesheet" href="/assets/report.css">
<style>
#live-status { font: 13px system-ui, sans-serif; padding: 6px 12px; background: #f4f6f8;
  border-bottom: 1px solid #d0d7de; position: sticky; top: 0; z-index: 10; }
#live-status.stale { background: #fff4e5; }
#live-alert { display: none; font: 13px system-ui, sans-serif; padding: 8px 12px;
  background: #ffebe9; color: #82071e; border-bottom: 1px solid #ff8182; }
#live-alert.on { display: block; }
</style>
</head>
<body>
<div id="live-status">connecting…</div>
<div id="live-alert" role="alert"></div>
<div id="app"><p>Waiting for the first analysis window…</p></div>
<script type="application/json" id="prism-data">{}</script>
<script src="/assets/uPlot.js"></script>
<script src="/assets/live.js"></script>
</body>
</html>
)html";

inline constexpr std::string_view kDashboardJs = R"js(// live.js: keeps the llmprism dashboard current.
(function () {
  'use strict';
  const m = location.hash.match(/token=([^&]+)/);
  const headers = m ? {Authorization: 'Bearer ' + decodeURIComponent(m[1])} : {};
  const status = document.getElementById('live-status');
  let render = null, version = -1, listeners = [];

  function rerender(report) {
    for (const [t, f, o] of listeners) window.removeEventListener(t, f, o);
    listeners = [];
    const orig = window.addEventListener;
    window.addEventListener = function (t, f, o) {
      listeners.push([t, f, o]);
      return orig.call(window, t, f, o);
    };
    const y = window.scrollY;
    try {
      document.getElementById('prism-data').textContent = JSON.stringify(report);
      render();
    } finally {
      window.addEventListener = orig;
    }
    window.scrollTo(0, y);
  }

  function t(ns) { return ns ? new Date(ns / 1e6).toISOString().replace('T', ' ').slice(0, 19) : '-'; }

  async function tick() {
    try {
      const [d, i, h] = await Promise.all([fetch('/api/v1/dashboard', {headers}),
                                           fetch('/api/v1/ingest', {headers}),
                                           fetch('/api/v1/health', {headers})]);
      if (!d.ok || !i.ok || !h.ok) throw new Error('HTTP ' + (!d.ok ? d.status : !i.ok ? i.status : h.status));
      const doc = await d.json(), ing = await i.json(), health = await h.json();
      let records = 0;
      for (const s of ing.sources) records += s.records;
      const dropped = health.loss.total;
      // Loss, windows cut short or not analysed, a store that cannot write: a banner, not a
      // footnote (the reasons and counts come from /api/v1/health).
      const alert = document.getElementById('live-alert');
      if (health.status !== 'ok') {
        alert.className = 'on';
        alert.textContent = 'Degraded: ' + health.reasons.join(' · ') +
          (health.incomplete_windows ? ' · ' + health.incomplete_windows + ' incomplete window(s)' : '');
      } else {
        alert.className = '';
        alert.textContent = '';
      }
      status.className = '';
      status.textContent = 'live · window ' + t(doc.window_start_ns) + ' – ' + t(doc.window_end_ns) +
        ' UTC · ' + records.toLocaleString() + ' records ingested, ' + dropped.toLocaleString() +
        ' dropped · updated ' + new Date().toLocaleTimeString();
      if (doc.report && doc.version !== version) {
        version = doc.version;
        rerender(doc.report);
        document.body.dataset.version = String(version);
      }
    } catch (e) {
      status.className = 'stale';
      status.textContent = 'cannot reach the service (' + e.message + '); retrying';
    }
    setTimeout(tick, 3000);
  }

  fetch('/assets/report.js').then((r) => r.text()).then((src) => {
    render = new Function(src);
    tick();
  });
})();
)js";

}  // namespace prism::service
