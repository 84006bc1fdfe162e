import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { parseAdminCredentials, type AdminCredential } from '../../config/adminCredentials.js';
import type { AdminVariables } from '../../config/adminCredentials.js';
import type { CommandLedger } from './ledger.js';
import { commandRoutes } from './routes.js';

/** The routes behind a guard that lets `who` in; a ledger that must not be reached by a refused request. */
function app(who: AdminCredential | undefined, upstream = true) {
  const untouchable = new Proxy({}, { get: () => { throw new Error('the ledger was reached'); } }) as CommandLedger;
  const outer = new Hono<{ Variables: AdminVariables }>();
  outer.use('*', async (c, next) => {
    c.set('credential', who);
    return next();
  });
  outer.route('/fleet/commands', commandRoutes({ ledger: untouchable, latest: { of: async () => undefined }, waitMaxMs: 60_000, upstream }));
  return (body: unknown) => outer.request('/fleet/commands', { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

const [ops, dispatch, viewer] = parseAdminCredentials('ops:correct-horse-battery:commands,immediate;dispatch:another-long-pass:commands;viewer:third-long-password');
const good = { vehicleno: 'KA01AB1234', command: 'immobilize', type: 'movement', reason: 'overdue' };

async function refusal(res: Response): Promise<[number, string, string]> {
  const b = (await res.json()) as { err: string; msg: string };
  return [res.status, b.err, b.msg];
}

describe('POST /fleet/commands refuses, naming why, before anything is recorded', () => {
  it('a request without a named credential (ADMIN_AUTH=none), or one that reads only', async () => {
    expect(await refusal(await app(undefined)(good))).toEqual([403, 'forbidden', expect.stringContaining('commands need a named admin credential')]);
    expect(await refusal(await app(viewer)(good))).toEqual([403, 'forbidden', expect.stringContaining('credential "viewer" may not send commands')]);
  });

  it.each([
    [{ ...good, type: 'brakes' }, 'type'],
    [{ ...good, reason: '' }, 'reason: say why'],
    [{ ...good, reason: 'two\nlines' }, 'reason: one line of printable text'],
    [{ ...good, command: 'reboot' }, 'command'],
    [{ ...good, extra: 1 }, 'extra'],
    [{ ...good, vehicleno: undefined }, 'vehicleno'],
    [{ ...good, vehicleno: 'KA01\nvehicle_events' }, 'vehicleno: must not contain control characters'],
    [{ ...good, vehicleno: 'KA01\\' }, 'vehicleno: '],
  ])('a body that is no command: %j', async (body, named) => {
    const [status, err, msg] = await refusal(await app(ops)(body));
    expect([status, err]).toEqual([400, 'invalid_command']);
    expect(msg).toContain(named);
  });

  it('not JSON', async () => {
    expect(await refusal(await app(ops)('{'))).toEqual([400, 'invalid_json', expect.any(String)]);
  });

  it('immediate: without confirmImmediate, on a mobilise, a confirmation of nothing, a credential without the right', async () => {
    expect(await refusal(await app(ops)({ ...good, immediate: true }))).toEqual([400, 'immediate_not_confirmed', expect.stringContaining('confirmImmediate: true')]);
    expect(await refusal(await app(ops)({ ...good, command: 'mobilize', immediate: true, confirmImmediate: true }))).toEqual([400, 'invalid_command', expect.stringContaining('only an immobilise')]);
    expect(await refusal(await app(ops)({ ...good, confirmImmediate: true }))).toEqual([400, 'invalid_command', expect.stringContaining('confirms immediate: true, which is not set')]);
    expect(await refusal(await app(dispatch)({ ...good, immediate: true, confirmImmediate: true }))).toEqual([403, 'forbidden', expect.stringContaining('"dispatch" may not send immediate commands')]);
  });

  it('no upstream to send to', async () => {
    expect(await refusal(await app(ops, false)(good))).toEqual([503, 'no_upstream', expect.stringContaining('UPSTREAM_URL')]);
  });
});
