/**
 * The queue UI as an operator opens it: bull-board on the admin listener, behind its credentials,
 * in real headless Chromium (Debian's), showing the push queue and a failed job (the dead letter).
 * The screenshot is kept as an artefact: .devstack/artifacts/queue-ui.png.
 */
import { mkdirSync, statSync } from 'node:fs';
import { Queue } from 'bullmq';
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { adminBodyTooLarge } from '../../src/ingest/service/admin.js';
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

describe('a browser cannot be turned against the admin listener', () => {
  const auth = () => ({ authorization: `Basic ${Buffer.from(CREDENTIALS).toString('base64')}` });
  const geofence = JSON.stringify({ type: 'Feature', properties: { name: 'Planted' }, geometry: { type: 'Point', coordinates: [77.6, 12.9] } }).replace('"name":"Planted"}', '"name":"Planted","radius_m":100}');
  const planted = async () => ((await (await fetch(`${svc.adminUrl}/fleet/geofences`, { headers: auth() })).json()) as { data: { features: Array<{ properties: { name: string } }> } }).data.features.filter((f) => f.properties.name === 'Planted');

  it('keeps the queue UI read-only unless QUEUE_UI_WRITES=on', async () => {
    const add = await fetch(`${svc.adminUrl}/admin/queues/api/queues/${svc.cfg.QUEUE_NAME}/add`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'push', data: { v: 1, records: [] }, options: {} }),
    });
    expect(add.status).toBe(405);
    expect(await queue.getWaitingCount()).toBe(0);
  });

  it('takes JSON alone, and refuses a write another site sends, by Fetch Metadata or by Origin', async () => {
    const post = (headers: Record<string, string>) => fetch(`${svc.adminUrl}/fleet/geofences`, { method: 'POST', headers: { ...auth(), ...headers }, body: geofence });
    const plain = await post({ 'content-type': 'text/plain' });
    expect(plain.status).toBe(415);
    expect(((await plain.json()) as { msg: string }).msg).toBe('Content-Type "text/plain" is not accepted here: send application/json');
    expect((await post({ 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post({ 'content-type': 'application/json', 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await post({ 'content-type': 'application/json', origin: 'https://evil.example' })).status).toBe(403);
    expect(await planted()).toEqual([]);
    // The CLI's way: no browser headers at all.
    expect((await post({ 'content-type': 'application/json' })).status).toBe(201);
    expect(await planted()).toHaveLength(1);
    expect((await fetch(`${svc.adminUrl}/fleet/geofences?name=${encodeURIComponent('Planted')}`, { method: 'DELETE', headers: auth() })).status).toBe(200);
  });

  it('is never framed, and a hostile page in real Chromium neither frames it nor changes anything with the cached credentials', async () => {
    for (const path of ['/admin/queues', '/metrics', '/fleet/vehicles']) {
      const res = await fetch(`${svc.adminUrl}${path}`, { headers: auth() });
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
      expect(res.headers.get('content-security-policy'), path).toContain("frame-ancestors 'none'");
    }
    // The hostile page: another origin on this machine, framing the UI and posting a form and a fetch to the admin API.
    const target = `${svc.adminUrl}/fleet/geofences`;
    const page = `<!doctype html><iframe id="f" src="${svc.adminUrl}/admin/queues"></iframe>
      <form id="form" method="POST" action="${target}" enctype="text/plain" target="sink"><input name='${geofence.slice(0, -1)},"x":"' value='"}'></form>
      <iframe name="sink"></iframe>
      <script>
        document.getElementById('form').submit();
        fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: ${JSON.stringify(geofence)} });
      </script>`;
    const hostile = createServer((_, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(page));
    await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', r));
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
    try {
      const [username, password] = CREDENTIALS.split(':') as [string, string];
      const context = await browser.newContext({ httpCredentials: { username, password } });
      const tab = await context.newPage();
      // What became of each request the page made to the listener: its answer, or why Chromium blocked it.
      const seen: Array<[string, string]> = [];
      tab.on('response', (r) => {
        if (r.url().startsWith(svc.adminUrl)) seen.push([new URL(r.url()).pathname, String(r.status())]);
      });
      tab.on('requestfailed', (r) => {
        if (r.url().startsWith(svc.adminUrl)) seen.push([new URL(r.url()).pathname, r.failure()?.errorText ?? '']);
      });
      await tab.goto(`http://127.0.0.1:${(hostile.address() as AddressInfo).port}/`);
      await waitUntil(async () => seen.filter(([p]) => p === '/fleet/geofences').length >= 2, 15_000, 'both writes settled');
      // The frame is refused by the browser (X-Frame-Options, frame-ancestors); each write is refused by the listener (403) or never read by the page.
      expect(seen).toContainEqual(['/admin/queues', 'net::ERR_BLOCKED_BY_RESPONSE']);
      expect(seen.filter(([p, outcome]) => p === '/fleet/geofences' && /^\d+$/.test(outcome)).map(([, s]) => s)).toEqual(['403']);
    } finally {
      await browser.close();
      hostile.close();
    }
    expect(await planted()).toEqual([]);
  }, 60_000);

  it('counts a body on the bytes that arrive: a chunked one past the bound is refused before it is read whole', async () => {
    let sent = 0;
    const chunk = new Uint8Array(1 << 20).fill(0x20);
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        // 64 MiB if nothing stopped it.
        if (sent >= 64 << 20) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const before = process.memoryUsage().rss;
    const res = await fetch(`${svc.adminUrl}/fleet/geofences`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(413);
    expect(((await res.json()) as { msg: string }).msg).toBe(adminBodyTooLarge);
    expect(sent).toBeLessThan(64 << 20);
    expect(process.memoryUsage().rss - before).toBeLessThan(48 << 20);
  });

  it('checks admin credentials for strength whenever they are set', () => {
    expect(() => loadConfig({ PUSH_AUTH: 'none', ADMIN_CREDENTIALS: 'admin:' })).toThrow(/ADMIN_CREDENTIALS: the password must have 12 or more characters/);
    expect(() => loadConfig({ PUSH_AUTH: 'none', ADMIN_CREDENTIALS: 'admin:aaaaaaaaaaaaaaaa' })).toThrow(/too easy to guess/);
    expect(() => loadConfig({ PUSH_AUTH: 'none', ADMIN_CREDENTIALS: 'nopassword' })).toThrow(/expected user:password/);
    expect(loadConfig({ PUSH_AUTH: 'none', ADMIN_CREDENTIALS: CREDENTIALS }).ADMIN_CREDENTIALS).toBe(CREDENTIALS);
  });
});
