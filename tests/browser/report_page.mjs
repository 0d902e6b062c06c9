// report_page.mjs: loads an llmprism HTML report in headless Debian chromium (playwright-core,
// never a downloaded browser) and checks what a reader needs, then saves a screenshot.
//   node report_page.mjs REPORT.html SCREENSHOT.png [--expect-finding KIND] [--max-render-ms N]
// Exit 0 when every check passes; prints one line per check.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [html, shot, ...rest] = process.argv.slice(2);
const opt = (name, def) => { const i = rest.indexOf(name); return i >= 0 ? rest[i + 1] : def; };
const expectKind = opt('--expect-finding', '');
const maxRenderMs = Number(opt('--max-render-ms', '10000'));
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
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: shot, fullPage: true });
  check(fs.existsSync(shot), `screenshot ${shot}`);
  check(errors.length === 0, `no console errors${errors.length ? ': ' + errors.slice(0, 3).join(' | ') : ''}`);
} finally {
  await browser.close();
}
process.exit(failures ? 1 : 0);
