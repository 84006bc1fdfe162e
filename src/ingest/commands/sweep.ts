import type { Logger } from '../../log/index.js';
import { UpstreamError, UpstreamThrottledError } from '../../upstream/client/errors.js';
import type { CommandType } from '../../upstream/client/schema.js';
import type { CommandLedger } from './ledger.js';
import type { LatestValuesStore } from './latest.js';
import { judge, unsafeBecause, waitsForSafety, type CommandEntry, type SafetyOptions } from './model.js';

/** The upstream's two control operations, as the typed client has them. */
export interface CommandSender {
  immobilize(q: { vehicleno: string; type: CommandType; immediate: boolean }): Promise<{ message: string }>;
  mobilize(q: { vehicleno: string; type: CommandType }): Promise<{ message: string }>;
}

export interface SweepOptions {
  safety: SafetyOptions;
  /** COMMANDS_CONFIRM_WINDOW: a sent command not confirmed by the vehicle's data within it is `not_confirmed`. */
  confirmWindowMs: number;
  /**
   * A command left `sending` this long (its worker died before the answer) is `failed` as "may have been
   * carried out": well past the client's timeout, so never while a worker still waits for the answer.
   */
  sendingStuckMs: number;
}

export interface SweepDeps {
  ledger: CommandLedger;
  latest: Pick<LatestValuesStore, 'of'>;
  /** The upstream; without one (no UPSTREAM_URL) nothing is sent and commands wait until they expire. */
  sender?: CommandSender | undefined;
  opts: SweepOptions;
  log: Logger;
}

export interface SweepReport {
  sent: number;
  waiting: number;
  expired: number;
  confirmed: number;
  notConfirmed: number;
  failed: number;
}

/**
 * What the upstream's failure means for the command, in the ledger's words. Only a FAILURE answer below
 * HTTP 500 (the service's own refusal: a bad token, an unknown vehicle, a rate limit) says it was not
 * carried out; a server error, a timeout, a broken connection or an answer of the wrong shape may come
 * after the service acted, so the command may have been carried out.
 */
export function failureNote(err: unknown): string {
  if (err instanceof UpstreamError && err.httpStatus < 500) return `the service refused it (${err.err}: ${err.msg}): not carried out`;
  const what = err instanceof Error ? err.message : String(err);
  return `${what}: it may have been carried out; check the vehicle before asking again (never re-sent by the service)`;
}

/**
 * One pass over the commands in flight, on a worker (every COMMANDS_SWEEP_INTERVAL, on every worker
 * process; the ledger's move script lets one only act on a command):
 * - `requested`: a type that waits (model.ts, `waitsForSafety`) and a vehicle not safe → `waiting`, noting
 *   why; else sent at once;
 * - `waiting`: past its `expiresAt` → `expired`; safe now → sent;
 * - sending is `sending` (the claim), then `sent` with the upstream's sentence, or `failed`: a refusal as not
 *   carried out, a timeout or a broken connection as "may have been carried out", never re-sent;
 * - `sending` left by a worker that died → `failed` after `sendingStuckMs`, "may have been carried out";
 * - `sent`: the vehicle's data confirms it → `confirmed`; `confirmBy` passed → `not_confirmed`.
 * A vehicle moving while immobilised is the vehicle events' to report, from its records
 * (events/detectors/immobilised.ts), not the sweep's from the latest values.
 */
export async function sweepCommands(d: SweepDeps, now: number): Promise<SweepReport> {
  const r: SweepReport = { sent: 0, waiting: 0, expired: 0, confirmed: 0, notConfirmed: 0, failed: 0 };
  const { ledger, opts } = d;
  for (const c of await ledger.inFlight()) {
    try {
      await step(c);
    } catch (err) {
      d.log.warn({ command: c.id, vehicleno: c.vehicleno, err: (err as Error).message }, 'commands: a step failed; the next sweep retries');
    }
  }
  return r;

  async function step(c: CommandEntry): Promise<void> {
    if (c.state === 'requested' || c.state === 'waiting') {
      if (now >= c.expiresAt) {
        const l = await d.latest.of(c.vehicleno);
        const why = waitsForSafety(c.op, c.type, c.immediate) ? (unsafeBecause(l, now, opts.safety) ?? 'safe only now') : 'not sent';
        if (await ledger.move(c.id, ['requested', 'waiting'], 'expired', now, `not safe to send within COMMANDS_WAIT_MAX (last: ${why}); never sent`)) r.expired++;
        return;
      }
      if (!d.sender) {
        if (c.state === 'requested' && (await ledger.move(c.id, ['requested'], 'waiting', now, 'no upstream (UPSTREAM_URL) on the workers: waits, and expires unsent'))) r.waiting++;
        return;
      }
      if (waitsForSafety(c.op, c.type, c.immediate)) {
        const unsafe = unsafeBecause(await d.latest.of(c.vehicleno), now, opts.safety);
        if (unsafe !== undefined) {
          if (c.state === 'requested' && (await ledger.move(c.id, ['requested'], 'waiting', now, `until safe: ${unsafe}`))) r.waiting++;
          return;
        }
      }
      await send(c);
      return;
    }
    if (c.state === 'sending') {
      const since = c.history.at(-1)!.at;
      if (now - since >= opts.sendingStuckMs) {
        if (await ledger.move(c.id, ['sending'], 'failed', now, 'no answer recorded: the worker sending it stopped; it may have been carried out; check the vehicle before asking again (never re-sent by the service)')) r.failed++;
      }
      return;
    }
    if (c.state === 'sent') {
      const verdict = judge({ op: c.op, type: c.type, sentAt: c.sentAt ?? c.requestedAt }, await d.latest.of(c.vehicleno));
      if (verdict?.confirmed) {
        if (await ledger.move(c.id, ['sent'], 'confirmed', now, verdict.because, {}, c)) r.confirmed++;
      } else if (now >= (c.confirmBy ?? now)) {
        const note = `the vehicle's records did not show it within COMMANDS_CONFIRM_WINDOW (${Math.round(opts.confirmWindowMs / 1000)} s)`;
        if (await ledger.move(c.id, ['sent'], 'not_confirmed', now, note, {}, c)) r.notConfirmed++;
      }
    }
  }

  async function send(c: CommandEntry): Promise<void> {
    // The claim: only one worker moves it into `sending`.
    // (A mobilise lifts the vehicle's immobilisation here: from now it may be carried out.)
    const claimed = await ledger.move(c.id, ['requested', 'waiting'], 'sending', now, '', {}, c);
    if (!claimed) return;
    let answer: string;
    try {
      const ack = c.op === 'immobilize' ? await d.sender!.immobilize({ vehicleno: c.vehicleno, type: c.type, immediate: c.immediate }) : await d.sender!.mobilize({ vehicleno: c.vehicleno, type: c.type });
      answer = ack.message;
    } catch (err) {
      const at = Date.now();
      if (err instanceof UpstreamThrottledError) {
        // Refused by the account's rate limit, so not carried out: it waits again (and still expires at
        // COMMANDS_WAIT_MAX); the shared pacer holds every process's calls for the service's Retry-After.
        const wait = err.retryAfterMs === undefined ? '' : ` (Retry-After ${Math.ceil(err.retryAfterMs / 1000)} s)`;
        if (await ledger.move(c.id, ['sending'], 'waiting', at, `the service answered 429${wait}: not carried out; sent again at the account's next turn`, {}, c)) r.waiting++;
        return;
      }
      await ledger.move(c.id, ['sending'], 'failed', at, failureNote(err), {}, c);
      r.failed++;
      d.log.warn({ command: c.id, vehicleno: c.vehicleno, op: c.op, type: c.type, err: (err as Error).message }, 'commands: sending failed');
      return;
    }
    const at = Date.now();
    await ledger.move(c.id, ['sending'], 'sent', at, '', { sentAt: at, answer, confirmBy: at + opts.confirmWindowMs }, c);
    r.sent++;
    d.log.info({ command: c.id, vehicleno: c.vehicleno, op: c.op, type: c.type, answer }, 'commands: sent');
  }
}
