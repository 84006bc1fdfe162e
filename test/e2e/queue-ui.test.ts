/**
 * The queue UI as an operator opens it: bull-board on the admin listener, behind its credentials,
 * in real headless Chromium (Debian's), showing the push queue and a failed job (the dead letter).
 * The screenshot is kept as an artefact: .devstack/artifacts/queue-ui.png.
 */
import { mkdirSync, statSync } from 'node:fs';
import { Queue } from 'bullmq';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const CREDENTIALS = 'ops:correct-horse-battery';
let svc: TestService;
let queue: Queue;

beforeAll(async () => {
  // No database: the job's writes fail until its retry span is over, and it becomes a dead letter.
  svc = await startTestService({ QUEUE_UI: 'on', ADMIN_CREDENTIALS: CREDENTIALS, RETRY_SPAN: '1s', RETRY_BASE_DELAY: '100ms', RETRY_MAX_DELAY: '200ms' }, { createDatabase: false });
  queue = new Queue(svc.cfg.QUEUE_NAME, { connection: { url: svc.cfg.REDIS_URL } });
  expect((await svc.post('/push/realtime', { vehicleno: 'UI-1', type: 'can', data: { time: T0, soc: 5 } })).status).toBe(202);
  await waitUntil(async () => (await queue.getFailedCount()) === 1, 15_000, 'a failed job');
});
afterAll(async () => {
  await queue?.close();
  await svc?.close();
});

it('refuses to start the UI exposed without credentials unless told to', () => {
  expect(() => loadConfig({ PUSH_AUTH: 'none', QUEUE_UI: 'on' })).toThrow(/ADMIN_CREDENTIALS: the queue UI \(QUEUE_UI=on\) needs user:password/);
  expect(loadConfig({ PUSH_AUTH: 'none', QUEUE_UI: 'on', ADMIN_AUTH: 'none' }).QUEUE_UI).toBe('on');
});

it('asks for its credentials', async () => {
  expect((await fetch(`${svc.adminUrl}/admin/queues`)).status).toBe(401);
  const ok = await fetch(`${svc.adminUrl}/admin/queues`, { headers: { authorization: `Basic ${Buffer.from(CREDENTIALS).toString('base64')}` } });
  expect(ok.status).toBe(200);
  expect(await ok.text()).toContain('<div id="root">');
  const auth = { authorization: `Basic ${Buffer.from(CREDENTIALS).toString('base64')}` };
  expect((await fetch(`${svc.adminUrl}/admin/queues/api/queues`)).status).toBe(401);
  expect((await fetch(`${svc.adminUrl}/admin/queues/api/queues`, { headers: auth })).status).toBe(200);
});

it('shows the push queue and its failed job in headless Chromium, to an operator who gives the credentials', async () => {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const [username, password] = CREDENTIALS.split(':') as [string, string];
    const page = await (await browser.newContext({ httpCredentials: { username, password }, viewport: { width: 1400, height: 1000 } })).newPage();
    await page.goto(`${svc.adminUrl}/admin/queues/queue/${svc.cfg.QUEUE_NAME}?status=failed`);
    await page.getByText('retry span of 1000 ms exhausted', { exact: false }).first().waitFor({ timeout: 20_000 });
    const text = await page.locator('body').innerText();
    expect(text).toContain(svc.cfg.QUEUE_NAME);
    // Its labels are translated (its translations loaded), not shown as keys.
    expect(text).toMatch(/Failed/);
    expect(text).not.toContain('QUEUE.STATUS.FAILED');
    mkdirSync('.devstack/artifacts', { recursive: true });
    const shot = '.devstack/artifacts/queue-ui.png';
    await page.screenshot({ path: shot });
    expect(statSync(shot).size).toBeGreaterThan(10_000);
  } finally {
    await browser.close();
  }
}, 120_000);
