import { createHash } from 'node:crypto';
import { eventId, chargingSessionId, packLifeId, stopId, tripId } from '../derive.js';
import type { OutboxEntry } from '../outbox.js';

/**
 * What was emitted of a vehicle, by output id (README.md beside this file): each output's epoch (the
 * checkpoint interval it was derived in), its revision, a digest of what it said, and what names its
 * point in InfluxDB (measurement by kind, time, tags), so a correction can tell what changed, and retract
 * what no longer follows from the records, under the same id and on the same point. (What names the point
 * names the output: its id is made again from it, `entryId`.)
 */
export interface Told {
  id: string;
  epoch: number;
  kind: OutboxEntry['kind'];
  /** The point's time: the event's, or the trip's, stop's or charging session's start. */
  time: number;
  /** An event's name (a tag of its point). */
  event?: string;
  /** The point's text values, as the entry held them (tags: a geofence's name and kind; a trip's start and end geofence). */
  tags?: Record<string, string>;
  /** 0 as first emitted; each correction or retraction adds one. */
  revision: number;
  /** sha256 of what it said (`digestOf`), its first 12 hex digits. */
  digest: string;
  /** 1 once retracted. */
  retracted?: 1;
}

/** An output's id: the same for the same transition, trip, stop or charging session however often derived (derive.ts, "Ids"). */
export function entryId(e: OutboxEntry): string {
  if (e.kind === 'event') return eventId(e);
  if (e.kind === 'trip') return tripId(e);
  if (e.kind === 'pack_life') return packLifeId(e);
  return e.kind === 'charging' ? chargingSessionId(e) : stopId(e);
}

export const entryTime = (e: OutboxEntry): number => (e.kind === 'event' ? e.time : e.start);

/** The marks a correction puts on an entry, never part of what it says. */
const MARKS = new Set(['late', 'revision', 'retracted']);

/** What an entry says, marks aside, as a digest: the same output derived twice has the same. */
export function digestOf(e: OutboxEntry): string {
  const plain = JSON.stringify(e, (k, v: unknown) => (MARKS.has(k) ? undefined : v));
  return createHash('sha256').update(plain).digest('hex').slice(0, 12);
}

function tagsOf(e: OutboxEntry): Record<string, string> | undefined {
  if (e.kind === 'event') return e.tags;
  const tags: Record<string, string> = {};
  for (const [k, v] of Object.entries(e)) if (typeof v === 'string' && k !== 'kind' && k !== 'vehicleno' && v !== '') tags[k] = v;
  return Object.keys(tags).length > 0 ? tags : undefined;
}

export function toldOf(e: OutboxEntry, epoch: number, revision = 0): Told {
  const t: Told = { id: entryId(e), epoch, kind: e.kind, time: entryTime(e), revision, digest: digestOf(e) };
  if (e.kind === 'event') t.event = e.event;
  const tags = tagsOf(e);
  if (tags !== undefined) t.tags = tags;
  return t;
}

/** `e` marked: emitted late (first emitted by a correction), or corrected (a revision). */
export function marked(e: OutboxEntry, marks: { late?: 1; revision?: number }): OutboxEntry {
  if (e.kind === 'event') return { ...e, fields: { ...e.fields, ...marks } };
  return { ...e, ...marks };
}

/**
 * The entry that retracts an output emitted before: its point rewritten with `retracted` 1, the revision,
 * and its `value` (an event) or `duration_s` (a trip, stop or charging session) -1, which every query that counts
 * them leaves out (docs/analysts.md); the rest of the point stays as it was.
 */
export function retraction(vehicleno: string, t: Told, revision: number): OutboxEntry {
  const marks = { retracted: 1, revision };
  if (t.kind === 'event') return { kind: 'event', vehicleno, event: t.event ?? '', time: t.time, value: -1, fields: marks, ...(t.tags ? { tags: t.tags } : {}) };
  return { kind: t.kind, vehicleno, start: t.time, durationS: -1, ...t.tags, ...marks } as unknown as OutboxEntry;
}

/** What a correction found, by how it is emitted. */
export interface Diff {
  /** Entries for the outbox: new (marked late), corrected (a revision), retracted. */
  outbox: OutboxEntry[];
  /** The ledger's entries for the replayed epochs, afresh. */
  told: Told[];
  added: number;
  corrected: number;
  retracted: number;
  unchanged: number;
}

/**
 * A replay's outputs (each with the epoch it was derived in) against what was emitted in the same epochs:
 * the same output with the same digest is nothing; with another, a correction under its id; one not emitted
 * before is emitted, marked late; one emitted before that the replay did not derive is retracted (once: a
 * retracted entry stays in the ledger, so it is retracted no second time and emitted again under a new
 * revision should it come back).
 */
export function diffTold(vehicleno: string, before: readonly Told[], after: ReadonlyArray<{ entry: OutboxEntry; epoch: number }>): Diff {
  const was = new Map(before.map((t) => [t.id, t]));
  const out: Diff = { outbox: [], told: [], added: 0, corrected: 0, retracted: 0, unchanged: 0 };
  const seen = new Set<string>();
  for (const { entry, epoch } of after) {
    const id = entryId(entry);
    // The same id twice in one replay (never, by the ids' construction): the later stands.
    seen.add(id);
    const old = was.get(id);
    const now = toldOf(entry, epoch, old?.revision ?? 0);
    if (old === undefined) {
      out.outbox.push(marked(entry, { late: 1 }));
      out.added++;
    } else if (old.retracted === 1 || old.digest !== now.digest) {
      now.revision = old.revision + 1;
      out.outbox.push(marked(entry, { revision: now.revision }));
      out.corrected++;
    } else out.unchanged++;
    out.told.push(now);
  }
  for (const old of before) {
    if (seen.has(old.id)) continue;
    if (old.retracted === 1) {
      out.told.push(old);
      continue;
    }
    const revision = old.revision + 1;
    out.outbox.push(retraction(vehicleno, old, revision));
    out.told.push({ ...old, revision, retracted: 1 });
    out.retracted++;
  }
  return out;
}

/**
 * An epoch's ledger in Redis: field `t<epoch>` of the vehicle's corrections hash, one line an output emitted
 * in that epoch (appended as outputs are emitted; a correction rewrites the epochs it replayed), its id not
 * stored but made again from what names the output (`entryId`):
 * `<kind>\t<time>\t<revision>\t<digest>\t<retracted 0/1>\t<event>\t<tags as JSON, or empty>`.
 */
export const toldField = (epoch: number): string => `t${epoch}`;

export function toldLine(t: Told): string {
  return [t.kind, t.time, t.revision, t.digest, t.retracted === 1 ? 1 : 0, t.event ?? '', t.tags ? JSON.stringify(t.tags) : ''].join('\t');
}

const KINDS = new Set<string>(['event', 'trip', 'charging', 'stop', 'pack_life']);

/** An epoch's ledger from its field's text; a line that is not one is skipped (never thrown: the ledger guides, the records decide). */
export function readTold(vehicleno: string, epoch: number, text: string): Told[] {
  const out: Told[] = [];
  for (const line of text.split('\n')) {
    const [kind, time, revision, digest, retracted, event, tags] = line.split('\t');
    if (kind === undefined || !KINDS.has(kind) || tags === undefined) continue;
    const t: Told = { id: '', epoch, kind: kind as Told['kind'], time: Number(time), revision: Number(revision), digest: digest ?? '' };
    if (event) t.event = event;
    if (tags) t.tags = JSON.parse(tags) as Record<string, string>;
    if (retracted === '1') t.retracted = 1;
    t.id = entryId(retraction(vehicleno, t, 0));
    out.push(t);
  }
  return out;
}
