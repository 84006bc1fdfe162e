import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Logger } from '../../log/index.js';
import { eventId } from '../events/derive.js';
import type { OutboxEntry } from '../events/outbox.js';
import type { CommandLedger } from './ledger.js';
import { COMMAND_TYPES, OPS, REASON_MAX, snapshotOf, type LatestValues } from './model.js';

/**
 * Automation: rules that turn vehicle events into commands (COMMANDS_AUTOMATION_FILE; none without it),
 * audited as people's are: each command a rule makes is in the ledger with the rule as its author
 * (`author: {kind: 'rule', name}`), its reason the rule's with the event that fired it, and it goes through
 * every rule a person's command does. A rule never sends `immediate`: what it asks waits until the vehicle
 * is safe. The file:
 *
 *   {"rules": [{"name": "towed: block discharge", "event": "moved_while_off",
 *               "command": "immobilize", "type": "discharge", "reason": "moved while off"}]}
 *
 * Events reach the rules at least once (the events' outbox, the scheduled runs' `tell`): the command's
 * idempotency key is the rule's name and the event's id, so an event delivered twice makes one command.
 */

export const automationRule = z
  .object({
    name: z.string().trim().min(1).max(100),
    event: z.string().trim().min(1).max(100),
    command: z.enum(OPS),
    type: z.enum(COMMAND_TYPES),
    reason: z.string().trim().min(1).max(REASON_MAX),
  })
  .strict();
export type AutomationRule = z.output<typeof automationRule>;

const automationFile = z.object({ rules: z.array(automationRule).max(1_000) }).strict();

/** The rules a file holds; throws naming what is wrong (the service refuses to start on it). */
export function parseAutomation(json: unknown, source = 'COMMANDS_AUTOMATION_FILE'): AutomationRule[] {
  const parsed = automationFile.safeParse(json);
  if (!parsed.success) throw new Error(`${source}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ')}`);
  const names = new Set<string>();
  for (const r of parsed.data.rules) {
    if (names.has(r.name)) throw new Error(`${source}: rule ${JSON.stringify(r.name)} is named twice`);
    names.add(r.name);
  }
  return parsed.data.rules;
}

export function readAutomationFile(path: string): AutomationRule[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`COMMANDS_AUTOMATION_FILE ${path}: ${(err as Error).message}`);
  }
  return parseAutomation(json, `COMMANDS_AUTOMATION_FILE ${path}`);
}

export interface AutomationDeps {
  rules: readonly AutomationRule[];
  ledger: CommandLedger;
  latest: { of(vehicleno: string): Promise<LatestValues | undefined> };
  /** COMMANDS_WAIT_MAX. */
  waitMaxMs: number;
  log: Logger;
  now?: () => number;
}

/** The hook the events call with what they delivered: each event a rule names becomes that rule's command. */
export function automation(d: AutomationDeps): (entries: readonly OutboxEntry[]) => Promise<void> {
  const byEvent = new Map<string, AutomationRule[]>();
  for (const r of d.rules) byEvent.set(r.event, [...(byEvent.get(r.event) ?? []), r]);
  const now = d.now ?? Date.now;
  return async (entries) => {
    for (const e of entries) {
      if (e.kind !== 'event') continue;
      // A correction's retraction or revision is no new event.
      if ((e.fields.revision ?? 0) > 0 || e.fields.retracted === 1) continue;
      for (const rule of byEvent.get(e.event) ?? []) {
        const id = eventId(e);
        const at = now();
        const o = await d.ledger.request(
          { vehicleno: e.vehicleno, op: rule.command, type: rule.type, immediate: false, reason: `${rule.reason} (event ${e.event} ${id} at ${new Date(e.time).toISOString()})`, idempotencyKey: `rule:${rule.name}:${id}` },
          { kind: 'rule', name: rule.name },
          snapshotOf(await d.latest.of(e.vehicleno)),
          at,
          at + d.waitMaxMs,
        );
        if (o.outcome === 'created') d.log.info({ rule: rule.name, event: e.event, vehicleno: e.vehicleno, command: o.command.id, replaces: o.replaced?.id }, 'commands: an automation rule asked for a command');
        // Being sent right now: the event is delivered again (not acknowledged) and the rule tried again.
        else if (o.outcome === 'busy') throw new Error(`commands: rule ${rule.name}: the vehicle's command ${o.id} is being sent; retried`);
        else if (o.outcome === 'conflict') d.log.warn({ rule: rule.name, event: e.event, vehicleno: e.vehicleno, outcome: o.outcome, other: o.id }, 'commands: an automation rule’s command was not recorded');
      }
    }
  };
}
