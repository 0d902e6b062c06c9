// dashboard_page.mjs: loads the live dashboard of a running `llmprism serve` in headless Debian
// chromium (playwright-core, never a downloaded browser): it must render the latest window's
// report without console errors, then re-render in place (no reload) when a new snapshot comes.
// Its header counts the window's records; with --expect-alert TEXT the degraded banner (from
// /api/v1/health) must show and contain TEXT.
//   node dashboard_page.mjs URL SCREENSHOT.png [--token T] [--expect-alert TEXT]
import { chromium } from 'playwright-core';

const [url, shot, ...rest] = process.argv.slice(2);
const opt = (name, def) => { const i = rest.indexOf(name); return i >= 0 ? rest[i + 1] : def; };
const token = opt('--token', '');
const expectAlert = opt('--expect-alert', '');
let failures = 0;
const check = (ok, what) => { console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`); if (!ok) failures++; };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  const errors = [];
  let loads = 0;
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('load', () => loads++);
  await page.goto(url + (token ? '#token=' + encodeURIComponent(token) : ''), { waitUntil: 'load' });
  await page.waitForSelector('body[data-rendered="1"]', { timeout: 30000 });
  const v1 = Number(await page.getAttribute('body', 'data-version'));
  check(v1 > 0, `rendered snapshot ${v1}`);
  const jobs = await page.locator('[id^="job-"]').count();
  check(jobs >= 1, `${jobs} job section(s) shown`);
  const status = await page.textContent('#live-status');
  check(/^live/.test(status), `status bar: ${status.slice(0, 90)}`);
  const lead = await page.textContent('header p.lead');
  const m = lead.match(/recognised from ([\d,]+) switch flow records/);
  const read = m ? Number(m[1].replace(/,/g, '')) : 0;
  check(read > 0, `header: recognised from ${m ? m[1] : '?'} switch flow records`);
  if (expectAlert) {
    await page.waitForSelector('#live-alert.on', { timeout: 30000 });
    const alert = await page.textContent('#live-alert');
    check(alert.includes(expectAlert), `banner: ${alert.slice(0, 120)}`);
  }
  // A new snapshot arrives (the caller keeps the service analysing): re-rendered in place.
  await page.waitForFunction((v) => Number(document.body.dataset.version) > v, v1, { timeout: 60000 });
  const v2 = Number(await page.getAttribute('body', 'data-version'));
  check(v2 > v1 && loads === 1, `re-rendered to snapshot ${v2} without reloading (${loads} page load)`);
  await page.screenshot({ path: shot, fullPage: false });
  check(errors.length === 0, `no console errors (${errors.length}${errors.length ? ': ' + errors[0] : ''})`);
} finally {
  await browser.close();
}
process.exit(failures ? 1 : 0);
