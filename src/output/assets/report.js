// report.js: renders the llmprism HTML report (src/output/html_report.h) from the JSON in
// <script id="prism-data">. No network, no framework: DOM for text, uPlot for the step-time
// plot, hand-made canvases for the layout heatmap and the per-GPU timeline.
(function () {
  'use strict';
  const D = JSON.parse(document.getElementById('prism-data').textContent);
  const app = document.getElementById('app');
  const KIND = ['compute', 'PP forward', 'PP backward', 'DP', 'bubble'];
  const KCOL = ['#4e79a7', '#59a14f', '#f28e2b', '#b07aa1', '#e3e3e3'];
  const SEV_ORDER = {critical: 0, warning: 1, info: 2};
  const timelines = {};  // job id -> timeline controller
  const heatmaps = {};   // job id -> heatmap controller
  const plots = {};      // job id -> {el, bands}

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }
  const fmtS = (s) => (s >= 1 ? s.toFixed(3) + ' s' : (s * 1e3).toFixed(1) + ' ms');
  const fmtN = (n) => Number(n).toLocaleString('en-US');
  const num = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(3) : v.toPrecision(3));
  const rel = (s) => '+' + s.toFixed(1) + ' s';
  function change(f) {
    if (!(f.value > 0) || !(f.baseline > 0)) return '';
    const p = (f.value / f.baseline - 1) * 100;
    return (p >= 0 ? '+' : '') + p.toFixed(0) + '%';
  }
  function sevBadge(sev) { return el('span', {class: 'sev sev-' + sev, text: sev}); }
  function layoutText(j) {
    if (!(j.dp > 0)) return 'layout unknown';
    return `DP ${j.dp} × PP ${j.pp} × TP ${j.tp}` + (j.microbatches > 0 ? `, ${j.microbatches} micro-batches` : '') +
        (j.consistent ? '' : ' (inconsistent)');
  }
  const jobFindings = (id) => D.findings.filter((f) => f.job === id);
  // Counters mode (docs/counters.md): jobs are found from switch port byte counters, so a job has
  // servers and NICs, iterations and a traffic series instead of GPUs, stages and per-GPU steps.
  const COUNTERS = D.mode === 'counters';
  const fmtG = (g) => (g >= 100 ? g.toFixed(0) : g >= 10 ? g.toFixed(1) : g.toFixed(2)) + ' Gb/s';

  // ---------- header and overview ----------
  function header() {
    const n = {critical: 0, warning: 0, info: 0};
    for (const f of D.findings) n[f.severity]++;
    const gpus = D.jobs.reduce((a, j) => a + j.gpus, 0);
    const read = (D.input.find((c) => c.name === 'records_read') || {value: 0}).value;
    const src = D.sources.map((s) => `${s.path} (${s.format})`).join(', ');
    if (COUNTERS) {
      const C = D.counters, servers = D.jobs.reduce((a, j) => a + j.hosts, 0);
      return el('header', {},
        el('h1', {text: D.title}),
        el('p', {class: 'lead'},
          `${D.jobs.length} training job${D.jobs.length === 1 ? '' : 's'} on ${fmtN(servers)} of ${fmtN(C.servers)} servers, ` +
          `recognised from switch port byte counters: ${fmtN(C.polls)} polls of ${fmtN(C.ports)} ports over ` +
          `${D.duration_s.toFixed(0)} s (polled every ${C.poll_s.toFixed(1)} s, counters refreshed every ${C.refresh_s.toFixed(1)} s). ` +
          `Input: ${src || '—'}.`),
        el('p', {class: 'lead'}, 'Findings: ',
          sevBadge('critical'), ` ${n.critical}  `, sevBadge('warning'), ` ${n.warning}  `, sevBadge('info'),
          ` ${n.info}. Times are seconds since the first poll. Click a finding's “show” to see it on its job's traffic plot.`));
    }
    return el('header', {},
      el('h1', {text: D.title}),
      el('p', {class: 'lead'},
        `${D.jobs.length} training job${D.jobs.length === 1 ? '' : 's'} on ${fmtN(gpus)} GPUs, recognised from ` +
        `${fmtN(read)} switch flow records over ${D.duration_s.toFixed(1)} s (${D.windows} analysis window` +
        `${D.windows === 1 ? '' : 's'} of ${D.window_s} s). Input: ${src || '—'}.`),
      el('p', {class: 'lead'}, 'Findings: ',
        sevBadge('critical'), ` ${n.critical}  `, sevBadge('warning'), ` ${n.warning}  `, sevBadge('info'),
        ` ${n.info}. Times are seconds since the first record. Click a finding's “show” to see it where it shows.`),
      legend());
  }
  function legend() {
    const items = KIND.map((k, i) => el('span', {class: 'lg'}, el('i', {style: `background:${KCOL[i]}`}), k));
    return el('p', {class: 'legend'}, 'Timeline colours: ', ...items);
  }

  function overview() {
    if (COUNTERS) return countersOverview();
    const rows = D.jobs.map((j) => {
      const fs = jobFindings(j.id);
      const worst = fs.length ? fs.reduce((a, f) => (SEV_ORDER[f.severity] < SEV_ORDER[a.severity] ? f : a)) : null;
      const tr = j.trend.known ? `${j.trend.slope_pct_per_min >= 0 ? '+' : ''}${j.trend.slope_pct_per_min.toFixed(1)}%/min` : '—';
      return el('tr', {},
        el('td', {}, el('a', {href: '#job-' + j.id, text: j.id}), schedulerNote(j.scheduler)),
        el('td', {class: 'r', text: fmtN(j.gpus)}), el('td', {class: 'r', text: fmtN(j.hosts)}),
        el('td', {text: layoutText(j)}),
        el('td', {class: 'r', text: j.step.steps ? fmtS(j.step.median_s) : '—'}),
        el('td', {class: 'r', text: j.step.steps ? fmtS(j.step.p99_s) : '—'}),
        el('td', {class: 'r', text: tr}),
        el('td', {}, fs.length ? sevBadge(worst.severity) : '', ` ${fs.length}`));
    });
    return el('section', {id: 'overview'},
      el('h2', {text: 'Cluster overview'}),
      el('table', {class: 'grid'},
        el('thead', {}, el('tr', {}, ...['job', 'GPUs', 'hosts', 'layout', 'step median', 'step p99', 'step-time trend', 'findings']
          .map((h) => el('th', {text: h})))),
        el('tbody', {}, ...rows)));
  }

  // The scheduler job (--jobs-map) under a job id: "slurm 7001 · alice · llama".
  function schedulerNote(s) {
    if (!s) return '';
    return el('div', {class: 'dim small scheduler', text: ['scheduler ' + s.job_id, s.user, s.name].filter((x) => x).join(' · ')});
  }

  // ---------- findings ----------
  function findingsSection() {
    // Long tails of info findings bury the jobs: list 12 at most until asked.
    const kMaxShown = 12;
    const rows = D.findings.map((f, i) => {
      const who = [];
      if (f.gpus.length) who.push(`GPUs ${f.gpus.slice(0, 4).join(', ')}${f.gpus_total > 4 ? ` … (${f.gpus_total})` : ''}`);
      if (f.hosts && f.hosts.length) who.push(`server${f.hosts.length === 1 ? '' : 's'} ${f.hosts.slice(0, 4).join(', ')}${f.hosts.length > 4 ? ` … (${f.hosts.length})` : ''}`);
      if (f.switches.length) who.push(`${f.switches.length === 2 ? 'link' : 'switch'} ${f.switches.join(' – ')}`);
      const hide = i >= kMaxShown && (f.severity === 'info' || COUNTERS);  // counters: many short slow iterations
      return el('tr', {id: 'finding-' + f.id, class: 'finding' + (hide ? ' more' : ''), 'data-kind': f.kind, 'data-job': f.job},
        el('td', {}, sevBadge(f.severity)),
        el('td', {}, el('b', {text: f.kind}), el('br'), el('span', {class: 'dim', text: 'cause: ' + f.cause})),
        el('td', {}, f.job || '—', schedulerNote(f.scheduler)),
        el('td', {text: who.join('; ') || '—'}),
        el('td', {}, `${f.metric} ${num(f.value)} vs ${num(f.baseline)} `, el('b', {text: change(f)}),
          el('br'), el('span', {class: 'dim', text: `${rel(f.start_s)} to ${rel(f.end_s)}, ${f.units} steps/bins`})),
        el('td', {text: f.summary}),
        el('td', {}, el('button', {class: 'show', text: 'show', 'data-finding': f.id, onclick: () => showFinding(f.id)})));
    });
    return el('section', {id: 'findings'},
      el('h2', {text: `Findings (${D.findings.length}), most severe and largest effect first`}),
      D.findings.length ? el('table', {class: 'grid findings'},
        el('thead', {}, el('tr', {}, ...['severity', 'what', 'job', 'where', 'evidence', 'summary', ''].map((h) => el('th', {text: h})))),
        el('tbody', {}, ...rows)) : el('p', {text: 'No findings: every job looks healthy.'}),
      moreButton());
    function moreButton() {
      const n = rows.filter((r) => r.classList.contains('more')).length;
      if (!n) return null;
      const b = el('button', {text: `show ${n} more ${COUNTERS ? '' : 'info '}findings`, onclick: () => {
        rows.forEach((r) => r.classList.remove('more')); b.remove();
      }});
      return b;
    }
  }

  // ---------- per job ----------
  function layoutDiagram(j) {
    if (!j.stages.length) return el('p', {class: 'dim', text: 'No stage order was inferred for this job.'});
    const cols = j.stages.map((hosts, s) => {
      const boxes = hosts.map(([name, n, bad]) =>
        el('div', {class: 'host' + (bad ? ' bad' : ''), title: `${name}: ${n} GPU${n === 1 ? '' : 's'} of stage ${s}` +
          (bad ? ' — named in a finding' : ''), 'data-host': name, text: hosts.length > 40 ? '' : name}));
      return el('div', {class: 'stage'}, el('div', {class: 'stage-h', text: `stage ${s}`}),
        el('div', {class: 'dim small', text: `${hosts.length} hosts`}), ...boxes);
    });
    const arrowed = [];
    cols.forEach((c, i) => { if (i) arrowed.push(el('div', {class: 'arrow', text: '→'})); arrowed.push(c); });
    return el('div', {},
      el('p', {class: 'caption'}, `Pipeline stages in order, left to right (activations flow →, gradients ←). ` +
        `Each column lists the hosts of one stage; a host holds ${j.tp > 0 ? 'TP groups of ' + j.tp + ' GPUs' : 'GPUs'}, ` +
        `and the ${j.dp} data-parallel replicas of a stage are spread over its hosts. Red: a host with a GPU named in a finding.`),
      el('div', {class: 'layout'}, ...arrowed));
  }

  function stepPlot(j, host) {
    const fs = jobFindings(j.id).filter((f) => f.kind === 'slow_step');
    const t = j.series.t, med = j.series.median, mx = j.series.max;
    if (!t.length) { host.append(el('p', {class: 'dim', text: 'No step timeline for this job.'})); return; }
    const inBand = (x) => fs.some((f) => x >= f.start_s - 1e-6 && x <= f.end_s + 1e-6);
    const slow = t.map((x, i) => (inBand(x) ? med[i] : null));
    const width = Math.max(400, host.clientWidth || 900);
    // Every finding of the job with its time range shades the plot: slow steps red, others by
    // severity, labelled with their kind, so a switch or GPU finding shows where the steps slowed.
    const all = jobFindings(j.id);
    const bands = all.map((f) => [f.start_s, f.end_s, f.id, f.kind, f.severity]);
    plots[j.id] = {el: host, bands, hl: null};
    const opts = {
      width, height: 220,
      scales: {x: {time: false}},
      axes: [{label: 'time since first record (s)'}, {label: 'step time (s)', size: 60}],
      series: [{label: 't (s)', value: (u, v) => (v == null ? '' : v.toFixed(2))},
        {label: 'median over GPUs', stroke: '#4e79a7', width: 2, value: (u, v) => (v == null ? '' : v.toFixed(3))},
        {label: 'slowest GPU', stroke: '#e15759', width: 1, dash: [4, 4], value: (u, v) => (v == null ? '' : v.toFixed(3))},
        {label: 'slow step (finding)', stroke: '#d62728', fill: '#d62728', paths: () => null,
          points: {show: true, size: 9, fill: '#d62728', stroke: '#d62728'}, value: (u, v) => (v == null ? '' : v.toFixed(3))}],
      hooks: {drawClear: [(u) => {
        const ctx = u.ctx;
        const dpr = window.devicePixelRatio || 1;
        bands.forEach(([a, b, id, kind, sev], i) => {
          if (sev === 'info' && plots[j.id].hl !== id) return;  // too many to shade; shown when selected
          const x0 = u.valToPos(a, 'x', true), x1 = u.valToPos(b, 'x', true);
          const rgb = kind === 'slow_step' ? '214,39,40' : sev === 'critical' ? '198,40,40' : '224,138,0';
          ctx.fillStyle = `rgba(${rgb},${plots[j.id].hl === id ? 0.30 : 0.10})`;
          ctx.fillRect(x0, u.bbox.top, Math.max(2, x1 - x0), u.bbox.height);
          ctx.fillStyle = `rgb(${rgb})`;
          ctx.font = `${11 * dpr}px sans-serif`;
          ctx.textBaseline = 'top';
          ctx.fillText(kind, x0 + 3 * dpr, u.bbox.top + (3 + 13 * (i % 4)) * dpr);
        });
      }]},
    };
    plots[j.id].u = new uPlot(opts, [t, med, mx, slow], host);
  }

  // Compute heatmap: every GPU × step, compute relative to the stage's median in that step.
  function heatmap(j, wrap) {
    const H = j.heat, n = H.rows.length, steps = j.series.t.length;
    if (!n || !steps) return;
    const ratio = H.rows.map(() => new Float32Array(steps));
    const byStage = {};
    H.stage.forEach((s, i) => (byStage[s] = byStage[s] || []).push(i));
    for (const idx of Object.values(byStage)) {
      for (let k = 0; k < steps; k++) {
        const v = idx.map((i) => H.rows[i][k]).filter((x) => x > 0).sort((a, b) => a - b);
        const m = v.length ? v[v.length >> 1] : 0;
        for (const i of idx) ratio[i][k] = H.rows[i][k] > 0 && m > 0 ? H.rows[i][k] / m : NaN;
      }
    }
    const height = Math.min(360, Math.max(n * 3, 60));
    const cv = el('canvas', {class: 'heat'});
    const tip = el('div', {class: 'tip'});
    const box = el('div', {class: 'heatbox'}, cv, tip);
    wrap.append(el('p', {class: 'caption'}, `Every GPU of the job (${n} rows, grouped by stage, stage 0 at the top) × every step ` +
      `(${steps} columns, in time order). Colour: the GPU's compute time in that step against the median of its stage — ` +
      `white = typical, red = slower (+30% is full red), blue = faster, grey = no data.` +
      (n > height ? ` ${n} GPUs share ${height} pixel rows: each pixel row shows its slowest GPU.` : '')), box);
    const ctrl = {hl: new Set()};
    heatmaps[j.id] = ctrl;
    const color = (r) => {
      if (!(r > 0)) return [200, 200, 200];
      const d = Math.max(-1, Math.min(1, (r - 1) / 0.3));
      return d >= 0 ? [255, Math.round(255 - 215 * d), Math.round(255 - 215 * d)] : [Math.round(255 + 180 * d), Math.round(255 + 120 * d), 255];
    };
    function draw() {
      const dpr = window.devicePixelRatio || 1, W = Math.max(300, box.clientWidth - 2);
      cv.width = W * dpr; cv.height = height * dpr; cv.style.width = W + 'px'; cv.style.height = height + 'px';
      const ctx = cv.getContext('2d');
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      const labelW = 70, cw = (W - labelW) / steps, rh = height / n;
      const P = Math.min(n, height);
      for (let py = 0; py < P; py++) {
        const i0 = Math.floor(py * n / P), i1 = Math.max(i0 + 1, Math.floor((py + 1) * n / P));
        const y = py * height / P, h = height / P;
        for (let k = 0; k < steps; k++) {
          let r = NaN;
          for (let i = i0; i < i1; i++) { const v = ratio[i][k]; if (v > 0 && !(r >= v)) r = v; }
          const c = color(r);
          ctx.fillStyle = `rgb(${c[0]},${c[1]},${c[2]})`;
          ctx.fillRect(labelW + k * cw, y, Math.ceil(cw), Math.ceil(h));
        }
        let hl = false;
        for (let i = i0; i < i1; i++) if (ctrl.hl.has(H.gpus[i])) hl = true;
        if (hl) { ctx.fillStyle = '#ffbf00'; ctx.fillRect(labelW - 8, y, 6, Math.max(2, h)); }
      }
      ctx.fillStyle = '#333'; ctx.font = '11px sans-serif'; ctx.textBaseline = 'top';
      let prev = null;
      H.stage.forEach((s, i) => {
        if (s !== prev) {
          const y = i * rh;
          ctx.fillStyle = '#333'; ctx.fillText('stage ' + s, 2, y + 1);
          if (i) { ctx.fillStyle = '#555'; ctx.fillRect(labelW - 10, y, W, 1); }
          prev = s;
        }
      });
    }
    cv.addEventListener('mousemove', (ev) => {
      const r = cv.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
      const labelW = 70, cw = (r.width - labelW) / steps;
      const k = Math.floor((x - labelW) / cw), i = Math.floor(y / (height / n));
      if (k < 0 || k >= steps || i < 0 || i >= n) { tip.style.display = 'none'; return; }
      const v = H.rows[i][k];
      tip.textContent = `${H.gpus[i]} (stage ${H.stage[i]}), step ${k} at ${rel(j.series.t[k])}: compute ` +
        (v >= 0 ? `${(v / 10).toFixed(1)} ms, ${isNaN(ratio[i][k]) ? '—' : (ratio[i][k] * 100).toFixed(0) + '% of its stage median'}` : 'no data');
      tip.style.display = 'block'; tip.style.left = (x + 12) + 'px'; tip.style.top = (y + 12) + 'px';
    });
    cv.addEventListener('mouseleave', () => (tip.style.display = 'none'));
    ctrl.draw = draw;
    draw();
  }

  // Zoomable per-GPU timeline on a canvas; row labels are DOM so they can be read and highlighted.
  function timeline(j, wrap) {
    const T = j.timeline, rows = T.rows;
    if (!rows.length) { wrap.append(el('p', {class: 'dim', text: 'No per-GPU timeline for this job.'})); return; }
    const RH = 18, AXIS = 22;
    const why = {};
    rows.forEach((r) => (why[r.why] = (why[r.why] || 0) + 1));
    const note = T.sampled
      ? `Showing ${rows.length} of ${fmtN(T.total)} GPUs (sampled so the page stays small): one pipeline replica ` +
        `(a GPU per stage, following its PP peers) plus the GPUs named in findings and their replica; the heatmap above has every GPU.`
      : `All ${rows.length} GPUs of the job.`;
    let lo = Infinity, hi = -Infinity;
    for (const r of rows) for (const s of r.steps) {
      lo = Math.min(lo, s[0]);
      let d = 0; for (let i = 3; i < s.length; i += 2) d += s[i];
      hi = Math.max(hi, s[0] + d);
    }
    const labels = el('div', {class: 'tl-labels', style: `padding-top:${AXIS}px`});
    rows.forEach((r) => labels.append(el('div', {class: 'tl-label', 'data-gpu': r.gpu, style: `height:${RH}px`,
      title: `${r.gpu} on ${r.host}, stage ${r.stage} (${r.why})`, text: `s${r.stage} ${r.gpu} ${r.host}`})));
    const cv = el('canvas', {class: 'tl', 'data-job': j.id});
    const tip = el('div', {class: 'tip'});
    const area = el('div', {class: 'tl-area'}, cv, tip);
    const ctl = {t0: lo, t1: hi, hl: new Set(), band: null};
    const btn = (text, f) => el('button', {text, onclick: f});
    const first = rows[0].steps;
    const stepsView = (k, n) => { // n steps of the first row from its k-th step
      const a = first[Math.min(k, first.length - 1)], b = first[Math.min(k + n, first.length - 1)];
      let end = b[0]; if (b === a) { let d = 0; for (let i = 3; i < b.length; i += 2) d += b[i]; end = b[0] + d; }
      ctl.t0 = a[0]; ctl.t1 = Math.max(end, a[0] + 1000); draw();
    };
    wrap.append(el('p', {class: 'caption'}, `Per-GPU timeline, one row per GPU (s<stage> address host). ${note} ` +
        'Scroll to zoom, drag to pan, double-click for the whole run. Thin black lines mark step starts; ' +
        'compute is the gap before the GPU sends, bubble the wait for a peer.'),
      el('div', {class: 'tl-bar'}, btn('whole run', () => { ctl.t0 = lo; ctl.t1 = hi; draw(); }),
        btn('2 steps', () => stepsView(Math.min(2, first.length - 1), 2)),
        btn('zoom in', () => zoom(0.5, 0.5)), btn('zoom out', () => zoom(2, 0.5)), legend()),
      el('div', {class: 'tl-wrap'}, labels, area));
    const H = AXIS + rows.length * RH;
    function zoom(f, at) {
      const span = ctl.t1 - ctl.t0, c = ctl.t0 + span * at;
      let ns = Math.max(200, Math.min(hi - lo + 1, span * f));
      ctl.t0 = c - ns * at; ctl.t1 = ctl.t0 + ns; draw();
    }
    function draw() {
      const dpr = window.devicePixelRatio || 1, W = Math.max(300, area.clientWidth - 2);
      cv.width = W * dpr; cv.height = H * dpr; cv.style.width = W + 'px'; cv.style.height = H + 'px';
      const ctx = cv.getContext('2d');
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, W, H);
      const sx = W / (ctl.t1 - ctl.t0), X = (t) => (t - ctl.t0) * sx;
      // axis
      const span = (ctl.t1 - ctl.t0) / 1e6, raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
      const tick = [1, 2, 5, 10].map((m) => m * p).find((v) => v >= raw) * 1e6;
      ctx.fillStyle = '#333'; ctx.font = '11px sans-serif'; ctx.textBaseline = 'top';
      for (let t = Math.ceil(ctl.t0 / tick) * tick; t <= ctl.t1; t += tick) {
        const x = X(t); ctx.fillRect(x, AXIS - 5, 1, 5);
        const s = t / 1e6, digits = tick >= 1e6 ? 0 : Math.min(6, Math.ceil(-Math.log10(tick / 1e6)));
        ctx.fillText(s.toFixed(digits) + ' s', x + 2, 2);
      }
      rows.forEach((r, ri) => {
        const y = AXIS + ri * RH;
        if (ctl.hl.has(r.gpu)) { ctx.fillStyle = '#fff2b3'; ctx.fillRect(0, y, W, RH); }
        for (const s of r.steps) {
          let t = s[0];
          if (t > ctl.t1) break;
          for (let i = 2; i < s.length; i += 2) {
            const k = s[i], d = s[i + 1];
            if (t + d >= ctl.t0 && t <= ctl.t1) {
              ctx.fillStyle = KCOL[k];
              const x0 = X(t), w = Math.max(d * sx, 0.6);
              ctx.fillRect(x0, y + 2, w, RH - 4);
            }
            t += d;
          }
          if (s[0] >= ctl.t0 && s[0] <= ctl.t1) { ctx.fillStyle = '#000'; ctx.fillRect(X(s[0]), y, 1, RH); }
        }
      });
      if (ctl.band) {
        const [a, b] = ctl.band;
        ctx.strokeStyle = '#d62728'; ctx.lineWidth = 2;
        ctx.strokeRect(X(a), AXIS, Math.max(3, X(b) - X(a)), H - AXIS - 1);
      }
    }
    let drag = null;
    cv.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const r = cv.getBoundingClientRect();
      zoom(ev.deltaY > 0 ? 1.25 : 0.8, (ev.clientX - r.left) / r.width);
    }, {passive: false});
    cv.addEventListener('mousedown', (ev) => (drag = {x: ev.clientX, t0: ctl.t0, t1: ctl.t1}));
    window.addEventListener('mouseup', () => (drag = null));
    cv.addEventListener('dblclick', () => { ctl.t0 = lo; ctl.t1 = hi; draw(); });
    cv.addEventListener('mousemove', (ev) => {
      const r = cv.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
      if (drag) {
        const dt = (ev.clientX - drag.x) * (drag.t1 - drag.t0) / r.width;
        ctl.t0 = drag.t0 - dt; ctl.t1 = drag.t1 - dt; draw(); return;
      }
      const ri = Math.floor((y - AXIS) / RH), t = ctl.t0 + x * (ctl.t1 - ctl.t0) / r.width;
      tip.style.display = 'none';
      if (ri < 0 || ri >= rows.length) return;
      const row = rows[ri];
      for (const s of row.steps) {
        let a = s[0];
        let total = 0; for (let i = 3; i < s.length; i += 2) total += s[i];
        if (t < a || t > a + total) continue;
        for (let i = 2; i < s.length; i += 2) {
          if (t >= a && t <= a + s[i + 1]) {
            tip.textContent = `${row.gpu} (stage ${row.stage}, ${row.host}), step ${s[1]}: ${KIND[s[i]]} ` +
              `${(s[i + 1] / 1e3).toFixed(2)} ms at ${(a / 1e6).toFixed(4)} s; step ${(total / 1e3).toFixed(1)} ms`;
            tip.style.display = 'block'; tip.style.left = (x + 12) + 'px'; tip.style.top = (y + 12) + 'px';
            return;
          }
          a += s[i + 1];
        }
      }
    });
    cv.addEventListener('mouseleave', () => (tip.style.display = 'none'));
    ctl.draw = draw;
    ctl.wrap = wrap;
    ctl.labels = labels;
    ctl.stepsView = stepsView;
    ctl.rows = rows;
    ctl.show = (gpus, a, b) => { // highlight rows, and show [a, b] (µs) padded to about 2 steps
      ctl.hl = new Set(gpus);
      labels.querySelectorAll('.tl-label').forEach((d) => d.classList.toggle('hl', ctl.hl.has(d.dataset.gpu)));
      const step = j.step.median_s * 1e6 || (hi - lo) / 10;
      ctl.band = [a, b];
      ctl.t0 = a - step * 0.2; ctl.t1 = a + step * 2.2; draw();
    };
    timelines[j.id] = ctl;
    // Start on two steps after warm-up, where the segments can be told apart.
    const fs = jobFindings(j.id).filter((f) => f.gpus.length);
    if (first.length > 3) stepsView(2, 2); else draw();
    const named = new Set(fs.flatMap((f) => f.gpus));
    labels.querySelectorAll('.tl-label').forEach((d) => d.classList.toggle('mark', named.has(d.dataset.gpu)));
  }

  // ---------- counters mode ----------
  function countersOverview() {
    const rows = D.jobs.map((j) => {
      const fs = jobFindings(j.id), C = j.counters || {};
      const worst = fs.length ? fs.reduce((a, f) => (SEV_ORDER[f.severity] < SEV_ORDER[a.severity] ? f : a)) : null;
      return el('tr', {},
        el('td', {}, el('a', {href: '#job-' + j.id, text: j.id})),
        el('td', {class: 'r', text: fmtN(j.hosts)}), el('td', {class: 'r', text: fmtN(j.gpus)}),
        el('td', {class: 'r', text: C.period_s > 0 ? fmtS(C.period_s) : '—'}),
        el('td', {class: 'r', text: fmtN(j.step.steps)}),
        el('td', {class: 'r', text: j.step.steps ? fmtS(j.step.median_s) : '—'}),
        el('td', {class: 'r', text: j.step.steps ? fmtS(j.step.p99_s) : '—'}),
        el('td', {class: 'r', text: C.server_gbps > 0 ? fmtG(C.server_gbps) : '—'}),
        el('td', {}, fs.length ? sevBadge(worst.severity) : '', ` ${fs.length}`));
    });
    return el('section', {id: 'overview'},
      el('h2', {text: 'Cluster overview'}),
      el('p', {class: 'caption', text: 'Jobs are groups of servers whose port traffic rises and falls together with one period ' +
        '(the training iteration). An iteration runs from one traffic burst to the next.' +
        (D.counters.servers_in_no_job ? ` ${D.counters.servers_in_no_job} servers fit no job.` : '')}),
      el('table', {class: 'grid'},
        el('thead', {}, el('tr', {}, ...['job', 'servers', 'NICs', 'period', 'iterations', 'iteration median', 'iteration p99',
          'traffic per server', 'findings'].map((h) => el('th', {text: h})))),
        el('tbody', {}, ...rows)));
  }

  // The job's summed traffic over time, its iterations as grey lines, its findings shaded.
  function trafficPlot(j, host) {
    const C = j.counters, P = C && C.plot;
    if (!P || !P.gbps.length) { host.append(el('p', {class: 'dim', text: 'No traffic series for this job.'})); return; }
    const t = P.gbps.map((_, i) => Math.round((P.start_s + (i + 0.5) * P.bin_s) * 1e3) / 1e3);  // bin centres
    const its = C.iterations;
    const starts = its.map((x) => x[0]);
    if (its.length) starts.push(its[its.length - 1][1]);
    const bands = jobFindings(j.id).map((f) => [f.start_s, f.end_s, f.id, f.kind, f.severity]);
    const ctl = {el: host, bands, hl: null};
    plots[j.id] = ctl;
    const lo = t[0] - P.bin_s / 2, hi = t[t.length - 1] + P.bin_s / 2;
    const width = Math.max(400, host.clientWidth || 900);
    const opts = {
      width, height: 260,
      scales: {x: {time: false}, y: {range: (u, mn, mx) => [0, mx > 0 ? mx * 1.08 : 1]}},
      axes: [{label: 'time since first poll (s)'},
        {label: `Gb/s, ${j.hosts} servers`, size: 60}],
      series: [{label: 't (s)', value: (u, v) => (v == null ? '' : v.toFixed(1))},
        {label: `traffic (mean over ${P.bin_s.toFixed(1)} s bins)`, stroke: '#4e79a7', width: 1.5, fill: 'rgba(78,121,167,0.12)',
          value: (u, v) => (v == null ? '' : fmtG(v))}],
      hooks: {drawClear: [(u) => {
        const ctx = u.ctx, dpr = window.devicePixelRatio || 1;
        const {left, top, width: bw, height: bh} = u.bbox;
        const x0 = u.scales.x.min, x1 = u.scales.x.max;
        // Iteration boundaries: a line each when they are at least 5 px apart, else ticks along the bottom.
        const vis = starts.filter((s) => s >= x0 && s <= x1);
        const dense = vis.length > 0 && bw / vis.length < 5 * dpr;
        ctx.fillStyle = dense ? 'rgba(60,60,60,0.55)' : 'rgba(60,60,60,0.35)';
        for (const s of vis) {
          const x = Math.round(u.valToPos(s, 'x', true));
          if (dense) ctx.fillRect(x, top + bh - 7 * dpr, Math.max(1, dpr), 7 * dpr);
          else ctx.fillRect(x, top, Math.max(1, dpr), bh);
        }
        // Labels go in the first of 4 rows with room; a crowded band keeps its shade without one.
        const rowEnd = [-1e9, -1e9, -1e9, -1e9];
        ctx.font = `${11 * dpr}px sans-serif`;
        ctx.textBaseline = 'top';
        const order = bands.map((_, i) => i).sort((p, q) => (bands[p][2] === ctl.hl ? -1 : bands[q][2] === ctl.hl ? 1 : bands[p][0] - bands[q][0]));
        for (const i of order) {
          const [a, b, id, kind, sev] = bands[i];
          if (sev === 'info' && ctl.hl !== id) continue;
          if (b < x0 || a > x1) continue;
          const p0 = u.valToPos(Math.max(a, x0), 'x', true), p1 = u.valToPos(Math.min(b, x1), 'x', true);
          const rgb = sev === 'critical' ? '198,40,40' : '224,138,0';
          ctx.fillStyle = `rgba(${rgb},${ctl.hl === id ? 0.4 : 0.15})`;
          ctx.fillRect(p0, top, Math.max(2 * dpr, p1 - p0), bh);
          const w = ctx.measureText(kind).width + 8 * dpr;
          const row = rowEnd.findIndex((e) => e <= p0);
          if (row < 0) continue;
          rowEnd[row] = p0 + w;
          ctx.fillStyle = `rgb(${rgb})`;
          ctx.fillText(kind, p0 + 3 * dpr, top + (3 + 13 * row) * dpr);
        }
      }]},
    };
    const bar = el('div', {class: 'tl-bar'},
      el('button', {text: 'whole run', onclick: () => ctl.u.setScale('x', {min: lo, max: hi})}),
      its.length > 12 ? el('button', {text: '10 iterations', onclick: () => {
        const k = Math.min(its.length - 10, Math.max(0, its.length >> 1));
        ctl.u.setScale('x', {min: its[k][0] - P.bin_s, max: its[k + 9][1] + P.bin_s});
      }}) : null,
      el('span', {class: 'legend'}, el('span', {class: 'lg'}, el('i', {style: 'background:#4e79a7'}), 'traffic'),
        el('span', {class: 'lg'}, el('i', {class: 'vline'}), 'iteration boundary'),
        el('span', {class: 'lg'}, el('i', {style: 'background:rgba(224,138,0,0.35)'}), 'warning finding'),
        el('span', {class: 'lg'}, el('i', {style: 'background:rgba(198,40,40,0.35)'}), 'critical finding'),
        el('span', {class: 'dim'}, 'Drag across the plot to zoom in, double-click to zoom out.')));
    host.append(bar);
    const plotEl = el('div', {});
    host.append(plotEl);
    ctl.u = new uPlot(opts, [t, P.gbps], plotEl);
    // Selecting a finding zooms to it with a few iterations either side.
    ctl.show = (a, b) => {
      const pad = Math.max(3 * (C.period_s || 0), (b - a) * 0.5, 4 * P.bin_s);
      ctl.u.setScale('x', {min: Math.max(lo, a - pad), max: Math.min(hi, b + pad)});
    };
  }

  function serversTable(j) {
    const C = j.counters;
    if (!C || !C.servers.length) return null;
    const named = new Set(jobFindings(j.id).flatMap((f) => f.hosts || []));
    const rows = C.servers.map((s) => el('tr', {class: named.has(s.name) ? 'named' : ''},
      el('td', {text: s.name}), el('td', {class: 'r', text: fmtG(s.mean_gbps)}),
      el('td', {class: 'r', text: s.period_s > 0 ? fmtS(s.period_s) : '—'}),
      el('td', {class: 'r', text: s.job_correlation.toFixed(2)})));
    return el('details', {class: 'servers'},
      el('summary', {text: `Servers (${C.servers.length}); red: named in a finding`}),
      el('table', {class: 'grid'},
        el('thead', {}, el('tr', {}, ...['server', 'mean traffic', 'own period', 'correlation with the rest of the job']
          .map((h) => el('th', {text: h})))),
        el('tbody', {}, ...rows)));
  }

  function countersJobSection(j) {
    const fs = jobFindings(j.id), C = j.counters || {};
    const plotHost = el('div', {class: 'plot', id: 'plot-' + j.id});
    const sig = (C.nic_signature || []).map(([n, v]) => `${n} ${(v * 100).toFixed(0)}%`).join(', ');
    const sec = el('section', {id: 'job-' + j.id, class: 'job'},
      el('h2', {text: `${j.id}: ${fmtN(j.hosts)} servers, ${fmtN(j.gpus)} NICs` +
        (C.period_s > 0 ? `, iteration period ${fmtS(C.period_s)}` : '')}),
      el('p', {class: 'lead'},
        j.step.steps ? `${fmtN(j.step.steps)} iterations, ${fmtS(j.step.median_s)} median, ${fmtS(j.step.p99_s)} p99. ` : 'No iterations found. ',
        C.server_gbps > 0 ? `Mean traffic ${fmtG(C.server_gbps)} per server. ` : '',
        sig ? `Share of bytes per NIC: ${sig}. ` : '',
        `${fs.length} finding${fs.length === 1 ? '' : 's'}: `,
        ...fs.slice(0, 8).map((f) => el('a', {href: '#finding-' + f.id, class: 'chip sev-' + f.severity, text: f.kind,
          onclick: (ev) => { ev.preventDefault(); showFinding(f.id); }})), fs.length > 8 ? ` … +${fs.length - 8}` : ''),
      el('h3', {text: 'Traffic'}),
      el('p', {class: 'caption', text: `Bytes per second through the switch ports of the job's ${j.hosts} servers, summed (in and out), ` +
        `in Gb/s. Each burst is one training iteration's communication; grey lines mark the iteration boundaries the analysis ` +
        `found (ticks along the bottom when they are too close to draw as lines; zoom in to see them). Shaded: the time range ` +
        `of each warning or critical finding on this job, labelled with its kind. A gap without lines is a time with no iteration, ` +
        `e.g. a stall.`}),
      plotHost, serversTable(j));
    app.append(sec);
    trafficPlot(j, plotHost);
  }

  function jobSection(j) {
    if (COUNTERS) { countersJobSection(j); return; }
    const fs = jobFindings(j.id);
    const plotHost = el('div', {class: 'plot', id: 'plot-' + j.id});
    const heatWrap = el('div', {id: 'heat-' + j.id});
    const tlWrap = el('div', {id: 'timeline-' + j.id, class: 'timeline'});
    const tr = j.trend.known
      ? `trend ${j.trend.slope_pct_per_min >= 0 ? '+' : ''}${j.trend.slope_pct_per_min.toFixed(1)}%/min (first third ${fmtS(j.trend.first_s)}, last third ${fmtS(j.trend.last_s)})`
      : 'trend: too few steps';
    const sec = el('section', {id: 'job-' + j.id, class: 'job'},
      el('h2', {text: `${j.id}: ${fmtN(j.gpus)} GPUs on ${fmtN(j.hosts)} hosts, ${layoutText(j)}`}),
      el('p', {class: 'lead'}, j.step.steps ? `Step time ${fmtS(j.step.median_s)} median, ${fmtS(j.step.p99_s)} p99 over ${j.step.steps} steps; ${tr}. ` : 'Step time unknown. ',
        `${fs.length} finding${fs.length === 1 ? '' : 's'}: `,
        ...fs.slice(0, 8).map((f) => el('a', {href: '#finding-' + f.id, class: 'chip sev-' + f.severity, text: f.kind,
          onclick: (ev) => { ev.preventDefault(); showFinding(f.id); }})), fs.length > 8 ? ` … +${fs.length - 8}` : ''),
      el('h3', {text: 'Layout'}), layoutDiagram(j),
      el('h3', {text: 'Step time'}),
      el('p', {class: 'caption', text: 'Each point is one training step at the time it started (median over the job\'s GPUs; dashed: ' +
        'its slowest GPU); the y axis is zoomed to the data. Red dots: steps a slow_step finding flagged. Shaded: the time ' +
        'range of each warning or critical finding on this job, labelled with its kind.'}),
      plotHost,
      el('h3', {text: 'Compute per GPU and step'}), heatWrap,
      el('h3', {text: 'Per-GPU timeline'}), tlWrap);
    app.append(sec);
    stepPlot(j, plotHost);
    heatmap(j, heatWrap);
    timeline(j, tlWrap);
  }

  function switchesSection() {
    const sec = el('section', {id: 'switches'}, el('h2', {text: 'Switches'}),
      el('p', {class: 'caption', text: 'The report carries no per-switch bandwidth series, so this lists the switches the findings ' +
        'name, with the relative bandwidth the diagnosis measured (flows through the switch or link against the fabric median; 100% = typical).'}));
    if (!D.switches.length) { sec.append(el('p', {text: 'No finding names a switch.'})); return sec; }
    const rows = D.switches.map((s) => {
      const bw = s.findings.filter((f) => f.metric === 'relative_bandwidth');
      const worst = bw.length ? Math.min(...bw.map((f) => f.value / (f.baseline || 1))) : null;
      return el('tr', {id: 'switch-' + s.name},
        el('td', {}, el('b', {text: s.name})),
        el('td', {}, worst == null ? '—' : el('div', {class: 'bar', title: `${(worst * 100).toFixed(0)}% of typical`},
          el('i', {style: `width:${Math.max(1, Math.min(100, worst * 100)).toFixed(0)}%`}), el('span', {text: `${(worst * 100).toFixed(0)}%`}))),
        el('td', {}, ...s.findings.map((f) => el('a', {href: '#finding-' + f.id, class: 'chip sev-' + f.severity,
          text: `${f.kind} ${f.job || ''} ${rel(f.start_s)}–${rel(f.end_s)}`, onclick: (ev) => { ev.preventDefault(); showFinding(f.id); }}))));
    });
    sec.append(el('table', {class: 'grid'},
      el('thead', {}, el('tr', {}, ...['switch', 'lowest relative bandwidth', 'findings'].map((h) => el('th', {text: h})))),
      el('tbody', {}, ...rows)));
    return sec;
  }

  function inputSection() {
    return el('section', {id: 'input'}, el('h2', {text: 'Input'}),
      el('table', {class: 'grid'}, el('tbody', {}, ...D.input.map((c) => el('tr', {class: c.severity === 'info' ? '' : 'warn'},
        el('td', {text: c.name}), el('td', {class: 'r', text: fmtN(c.value)}), el('td', {text: c.description}))))),
      el('p', {class: 'small dim'}, 'Charts: uPlot (MIT licence, included in this file\'s source).'));
  }

  function flash(node) {
    node.classList.remove('flash'); void node.offsetWidth; node.classList.add('flash');
  }
  // Scrolls to where a finding shows and highlights it there.
  function showFinding(id) {
    const f = D.findings.find((x) => x.id === id);
    if (!f) return;
    document.querySelectorAll('tr.finding.selected').forEach((r) => r.classList.remove('selected'));
    const row = document.getElementById('finding-' + id);
    if (row) row.classList.remove('more'), row.classList.add('selected');
    document.body.dataset.shown = id;
    let target = null;
    const tl = timelines[f.job];
    if (tl && f.gpus.length) {
      tl.show(f.gpus, f.start_s * 1e6, f.end_s * 1e6);
      if (heatmaps[f.job]) { heatmaps[f.job].hl = new Set(f.gpus); heatmaps[f.job].draw(); }
      target = document.getElementById(f.kind === 'slow_step' ? 'plot-' + f.job : 'timeline-' + f.job);
    }
    if (plots[f.job] && plots[f.job].u) {
      plots[f.job].hl = id;
      if (plots[f.job].show) plots[f.job].show(f.start_s, f.end_s); else plots[f.job].u.redraw();
      if (f.kind === 'slow_step' || !target) target = document.getElementById('plot-' + f.job);
    }
    if (!target && f.switches.length) target = document.getElementById('switch-' + f.switches[0]);
    if (!target && f.job) target = document.getElementById('job-' + f.job);
    if (!target) return;
    for (const sw of f.switches) { const r = document.getElementById('switch-' + sw); if (r) flash(r); }
    target.scrollIntoView({block: 'center'});
    flash(target);
  }

  app.textContent = '';
  app.append(header(), overview(), findingsSection());
  for (const j of D.jobs) jobSection(j);
  if (!COUNTERS) app.append(switchesSection());
  app.append(inputSection());
  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      for (const c of Object.values(timelines)) c.draw();
      for (const c of Object.values(heatmaps)) c.draw();
    }, 150);
  });
  window.prismShowFinding = showFinding;
  document.body.dataset.rendered = '1';
})();
