// report_page.mjs: loads an llmprism HTML report in headless Debian chromium (playwright-core,
// never a downloaded browser) and checks what a reader needs, then saves a screenshot.
//   node report_page.mjs REPORT.html SCREENSHOT.png [--expect-finding KIND] [--max-render-ms N]
//                        [--counters]
// --counters: a report of counters mode (switch port byte counters: no per-GPU timelines); every
// warning or critical finding must be listed and, clicked, shown shaded on its job's traffic plot.
// Exit 0 when every check passes; prints one line per check.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [html, shot, ...rest] = process.argv.slice(2);
const opt = (name, def) => { const i = rest.indexOf(name); return i >= 0 ? rest[i + 1] : def; };
const expectKind = opt('--expect-finding', '');
const maxRenderMs = Number(opt('--max-render-ms', '10000'));
const countersMode = rest.includes('--counters');
let failures = 0;
const check = (ok, what) => { console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`); if (!ok) failures++; };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  // playwright-core gives the browser a fresh temporary profile itself (no --user-data-dir).
});
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  const errors = [];
  const requests = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) requests.push(r.url()); });
  const t0 = Date.now();
  await page.goto(pathToFileURL(path.resolve(html)).href, { waitUntil: 'load', timeout: maxRenderMs * 3 });
  await page.waitForSelector('body[data-rendered="1"]', { timeout: maxRenderMs * 3 });
  const renderMs = Date.now() - t0;
  check(renderMs <= maxRenderMs, `rendered in ${renderMs} ms (limit ${maxRenderMs} ms)`);
  check(requests.length === 0, `no network requests (${requests.length}${requests.length ? ': ' + requests[0] : ''})`);

  const sizeMb = fs.statSync(html).size / 1e6;
  check(sizeMb < 10, `page is ${sizeMb.toFixed(2)} MB (< 10 MB)`);

  if (countersMode) await checkCountersPage(page);
  else await checkFlowPage(page);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: shot, fullPage: true });
  check(fs.existsSync(shot), `screenshot ${shot}`);
  check(errors.length === 0, `no console errors${errors.length ? ': ' + errors.slice(0, 3).join(' | ') : ''}`);
} finally {
  await browser.close();
}
process.exit(failures ? 1 : 0);

// Pixels of a canvas in the shade a highlighted warning or critical band is drawn with
// (orange or red at 40% over the plot's white or pale blue): what a selected finding adds.
async function shadedPixels(canvas) {
  return canvas.evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      const [r, g, b] = [d[i], d[i + 1], d[i + 2]];
      if (r >= 200 && b <= 160 && r - b >= 60 && g <= 215) n++;
    }
    return n;
  });
}

async function checkCountersPage(page) {
  check(await page.locator('#overview table').first().isVisible(), 'the counters overview lists the jobs');
  check(await page.locator('.plot .uplot').first().isVisible(), 'a job traffic plot is visible');
  const loud = page.locator('tr.finding:has(.sev-warning), tr.finding:has(.sev-critical)');
  const n = await loud.count();
  check(n > 0, `warning and critical findings are listed (${n})`);
  // Each plot's shading before any finding is selected: a selected one is drawn darker, and two
  // findings of one job may share a time range (a slow server over its slowdown's episode).
  const unselected = {};
  for (let i = 0; i < n; i++) {
    const job = await loud.nth(i).getAttribute('data-job');
    if (!(job in unselected)) unselected[job] = await shadedPixels(page.locator(`#plot-${job} canvas`).first());
  }
  for (let i = 0; i < n; i++) {
    const row = loud.nth(i);
    const kind = await row.getAttribute('data-kind');
    const job = await row.getAttribute('data-job');
    check(await row.isVisible(), `${kind} of ${job} is listed, not folded away`);
    const canvas = page.locator(`#plot-${job} canvas`).first();
    const before = unselected[job];
    await row.locator('button.show').click();
    await page.waitForTimeout(300);
    const inView = await page.locator(`#plot-${job}`).evaluate((e) => {
      const r = e.getBoundingClientRect();
      return r.bottom > 0 && r.top < window.innerHeight;
    });
    check(inView, `clicking it scrolls to ${job}'s traffic plot`);
    const after = await shadedPixels(canvas);
    check(after > before + 50, `its time range is shaded on the plot (${before} unselected -> ${after} shaded pixels)`);
  }
  await page.screenshot({ path: shot.replace(/\.png$/, '-finding.png') });
}

async function checkFlowPage(page) {
  const canvas = page.locator('canvas.tl').first();
  check(await canvas.isVisible(), 'a per-GPU timeline canvas is visible');
  // The canvas holds drawn segments: sample its pixels for the compute colour.
  const painted = await canvas.evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] === 0x4e && d[i + 1] === 0x79 && d[i + 2] === 0xa7) n++;
    return n;
  });
  check(painted > 100, `the timeline shows compute segments (${painted} pixels)`);
  check(await page.locator('.uplot').first().isVisible(), 'a step-time plot is visible');
  check(await page.locator('.layout .stage').first().isVisible(), 'a layout diagram is visible');

  if (expectKind) {
    const row = page.locator(`tr.finding[data-kind="${expectKind}"]`).first();
    check(await row.count() > 0 && await row.isVisible(), `the ${expectKind} finding is listed`);
    if (await row.count() > 0) {
      const job = await row.getAttribute('data-job');
      await row.locator('button.show').click();
      await page.waitForTimeout(300);
      const target = page.locator(`#timeline-${job}`);
      const inView = await target.evaluate((e) => {
        const r = e.getBoundingClientRect();
        return r.bottom > 0 && r.top < window.innerHeight;
      });
      check(inView, `clicking it scrolls to ${job}'s timeline`);
      const hl = await page.locator(`#timeline-${job} .tl-label.hl`).count();
      check(hl > 0, `its GPUs are highlighted in the timeline (${hl} rows)`);
      check(await page.locator('tr.finding.selected').count() === 1, 'the finding is marked as selected');
      await page.screenshot({ path: shot.replace(/\.png$/, '-finding.png') });
    }
  }
}
