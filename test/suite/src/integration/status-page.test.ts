/**
 * The coordinator's status page in headless Chromium (puppeteer-core): a
 * fleet whose names are hostile (a configured pool, a template pool, an
 * agent id and an agent class made of `<`, `"`, `'`, `&`, `/` and `=`, and
 * `>` where ids allow it) must be shown as text, update itself, and run no
 * injected script: no dialog, no injected element, nothing set on window.
 * It also shows the calls agents reported: a pool's admitted and denied
 * calls, a third line in the chart, and the per-key pool whose agent is
 * denied (the hostile template pool) among the most denied.
 * A screenshot is written to reports/status-page.png (gitignored).
 *
 * The browser is found by configuration: CHROMIUM_PATH, else
 * /usr/bin/chromium. A missing browser fails the test with what to do;
 * it never skips.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir, startAgentProcess, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { REPO_ROOT } from '@tokenlease/harness/paths';
import { freePort } from '@tokenlease/harness/ports';
import { stopAll } from '@tokenlease/harness/processes';

const CHROMIUM_PATH = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const HOSTILE_POOL = `x"'&<img/src=x/onerror=alert(1)//`;
const HOSTILE_TENANT = `tenant:<svg/onload=alert(2)//`;
const HOSTILE_AGENT = `<img/src=x/onerror=alert(3)>`;
const HOSTILE_CLASS = `<script>alert(4)</script>`;
const SCREENSHOT: `${string}.png` = `${resolve(REPO_ROOT, 'reports')}/status-page.png`;

function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `no Chromium at ${CHROMIUM_PATH}: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH to a Chromium or Chrome binary`,
    );
  }
  return puppeteer.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

describe('the status page in a browser', () => {
  let nats: NatsHandle;
  let browser: Browser | null = null;
  beforeAll(async () => {
    nats = await provideNats();
  });
  afterAll(async () => {
    await browser?.close();
    await stopAll();
    await nats.stop();
  });

  it('shows every pool and lease with hostile names as text, updates itself, and runs no injected script', async () => {
    browser = await launchBrowser();
    const dir = scratchDir();
    const prefix = `tlpage${process.pid}`;
    const fields = { capacity: 100, refill: '200/s', leaseTtlMs: 1000, maxLeaseTokens: 20 };
    const configPath = writeConfig(dir, {
      subjectPrefix: prefix,
      pools: {
        api: fields,
        [HOSTILE_POOL]: fields,
        search: { window: '40/1s', leaseTtlMs: 1000 },
        db: { concurrency: { limit: 8, maxHoldMs: 3000 }, leaseTtlMs: 1000 },
      },
      // The tenant's agent asks 80/s of 40/s: denied about half the time.
      templates: { 'tenant:*': { ...fields, capacity: 50, refill: '40/s' } },
    });
    const port = await freePort();
    await startCoordinator(nats.url, configPath, { http: `127.0.0.1:${port}` });
    const agents = [
      { pool: 'api', name: 'checkout', perSecond: 300 },
      { pool: HOSTILE_POOL, name: HOSTILE_AGENT, perSecond: 150 },
      { pool: HOSTILE_TENANT, name: 'tenant-agent', perSecond: 80 },
    ];
    await Promise.all(
      agents.map((a, i) =>
        startAgentProcess({
          natsUrl: nats.url,
          subjectPrefix: prefix,
          pool: a.pool,
          name: a.name,
          seed: i + 1,
          durationMs: 12_000,
          traffic: { kind: 'steady', perSecond: a.perSecond },
          keeper: i === 1 ? { agentClass: HOSTILE_CLASS } : {},
        }),
      ),
    );

    const page = await browser.newPage();
    await page.setViewport({ width: 1100, height: 1400 });
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(`http://127.0.0.1:${port}/`, { waitUntil: 'load' });
    // The page's own code runs in the browser; these checks are sent to it as expressions (the test compiles without DOM types).
    const cardsOf = `[...document.querySelectorAll('#pools .pool')]`;
    // Every pool shown, each with a lease row, once the leases are there (past the quiet period).
    const names = JSON.stringify(['api', HOSTILE_POOL, HOSTILE_TENANT]);
    await page.waitForFunction(`${names}.every((n) => ${cardsOf}.some((c) => c.dataset.pool === n && c.querySelector('td') !== null))`, {
      timeout: 15_000,
    });
    const updatesBefore = (await page.evaluate('Number(document.body.dataset.updates)')) as number;
    const shown = (await page.evaluate(
      `${cardsOf}.map((card) => ({ pool: card.dataset.pool, title: card.querySelector('h3').firstChild.textContent, cells: [...card.querySelectorAll('td')].map((td) => td.textContent) }))`,
    )) as { pool: string; title: string; cells: string[] }[];
    expect(shown.map((c) => c.title).sort()).toEqual(['api', 'db', HOSTILE_POOL, HOSTILE_TENANT, 'search'].sort());
    // A concurrency pool shows slots, not tokens: nobody holds one here, so all 8 are free once its quiet period and hold bound are over.
    await page.waitForFunction(
      `${cardsOf}.find((card) => card.dataset.pool === 'db').querySelector('.facts').textContent.includes('8 free')`,
      { timeout: 15_000 },
    );
    const slotFacts = (await page.evaluate(
      `${cardsOf}.find((card) => card.dataset.pool === 'db').querySelector('.facts').textContent`,
    )) as string;
    expect(slotFacts).toContain('at most 8 in flight, each held at most 3000 ms');
    expect(slotFacts).toContain('slots: 0 leased in 0 lease(s), 8 free, 0 held back');
    const windowFacts = (await page.evaluate(
      `${cardsOf}.find((card) => card.dataset.pool === 'search').querySelector('.facts').textContent`,
    )) as string;
    expect(windowFacts).toMatch(/cooling \d+/);
    expect(windowFacts).toContain('at most 40 per 1000 ms window');
    const hostile = shown.find((c) => c.pool === HOSTILE_POOL);
    expect(hostile?.cells.some((cell) => cell.startsWith(HOSTILE_AGENT))).toBe(true);
    expect(hostile?.cells).toContain(HOSTILE_CLASS);
    // It updates itself: more refreshes, and the chart draws grants.
    await page.waitForFunction(`Number(document.body.dataset.updates) >= ${updatesBefore + 3}`, { timeout: 10_000 });
    expect(await page.evaluate(`document.querySelectorAll('#chart polyline').length`)).toBe(3);
    // The calls agents reported: the template pool's agent is denied, and its pool listed as such.
    await page.waitForFunction(
      `[...document.querySelectorAll('#denied tr')].some((row) => row.dataset.pool === ${JSON.stringify(HOSTILE_TENANT)})`,
      {
        timeout: 10_000,
      },
    );
    const deniedRow = (await page.evaluate(
      `[...[...document.querySelectorAll('#denied tr')].find((row) => row.dataset.pool === ${JSON.stringify(HOSTILE_TENANT)}).querySelectorAll('td')].map((td) => td.textContent)`,
    )) as string[];
    expect(deniedRow[0]).toBe(HOSTILE_TENANT);
    expect(Number(deniedRow[2])).toBeGreaterThan(0);
    const apiCalls = (await page.evaluate(
      `${cardsOf}.find((card) => card.dataset.pool === 'api').querySelector('.calls').textContent`,
    )) as string;
    expect(Number(/calls admitted (\d+)/.exec(apiCalls)?.[1])).toBeGreaterThan(0);
    const grantLevels = (await page.evaluate(
      `new Set((document.querySelector('#chart polyline.grants').getAttribute('points') || '').split(' ').map((p) => p.split(',')[1])).size`,
    )) as number;
    expect(grantLevels).toBeGreaterThan(1);
    // Nothing injected ran or was built.
    const injected = await page.evaluate(
      `({ elements: document.querySelectorAll('#pools img, #pools svg, #pools script, #owned img, #owned script, #denied img, #denied svg, #denied script').length, title: document.title })`,
    );
    expect(injected).toEqual({ elements: 0, title: 'tokenlease coordinator' });
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    console.log(`status page: screenshot written to ${SCREENSHOT}`);
  });
});
