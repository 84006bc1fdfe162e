import { flush, ingest, inputOf, newState, type DeriveOptions, type Derived, type EventInput, type VehicleState } from '../derive.js';
import { STREAMS } from '../inputs.js';
import type { OutboxEntry } from '../outbox.js';
import { writeCheckpoint } from '../wire.js';
import { diffTold, entryId, toldOf, type Told } from './ledger.js';
import { replay, replayFrom, type Checkpoint } from './replay.js';

/**
 * The service's corrections for one vehicle, in memory, as the store and the corrector do them in Redis
 * and InfluxDB (store.ts, corrector.ts): every record delivered is kept as InfluxDB keeps it (a record of
 * one type and time merged field by field, the later winning); each delivery is derived live; checkpoints
 * and the ledger of what was told are kept and pruned by the horizon; a correction replays from the
 * checkpoint before its late record over the kept records and tells what changed. `told` is what a
 * consumer holds after applying every entry it was sent: the outputs by id, retracted ones gone.
 */
export class CorrectedVehicle {
  state: VehicleState = newState();
  readonly records = new Map<string, { type: string; time: number; fields: Record<string, number> }>();
  readonly checkpoints = new Map<number, Checkpoint>();
  readonly ledger = new Map<string, Told>();
  readonly told = new Map<string, OutboxEntry>();
  /** Every entry sent, in order. */
  readonly sent: OutboxEntry[] = [];
  corrections = 0;
  tooLate = 0;
  late = 0;

  constructor(
    readonly vehicleno: string,
    readonly opts: DeriveOptions,
  ) {}

  /** A delivery: its records stored, then derived. */
  deliver(inputs: ReadonlyArray<EventInput & { fields: Record<string, number> }>, nowMs: number): Derived {
    for (const r of inputs) {
      const key = `${r.type}:${r.time}`;
      const had = this.records.get(key);
      this.records.set(key, { type: r.type, time: r.time, fields: { ...had?.fields, ...r.fields } });
    }
    return this.derived(ingest(this.vehicleno, this.state, inputs, nowMs, this.opts), this.beforeCall());
  }

  flush(nowMs: number): Derived {
    return this.derived(flush(this.vehicleno, this.state, nowMs, this.opts), this.beforeCall());
  }

  /** The state before a call, as a checkpoint would keep it (read only if the call begins corrections afresh). */
  private beforeCall(): () => Buffer {
    const bytes = this.state.late.epoch !== this.state.late.epoch ? writeCheckpoint(this.state) : undefined;
    return () => bytes ?? writeCheckpoint(newState());
  }

  private derived(d: Derived, before: () => Buffer): Derived {
    this.late += d.late;
    this.tooLate += d.tooLate;
    if (d.reset) {
      this.checkpoints.clear();
      this.ledger.clear();
      this.checkpoints.set(0, { epoch: 0, cut: this.state.late.firstCut, committed: before() });
    }
    for (const e of [...d.events.map((x) => ({ kind: 'event' as const, ...x })), ...d.trips.map((x) => ({ kind: 'trip' as const, ...x })), ...d.sessions.map((x) => ({ kind: 'charging' as const, ...x })), ...d.stops.map((x) => ({ kind: 'stop' as const, ...x }))]) {
      this.ledger.set(entryId(e), toldOf(e, d.epoch));
      this.send(e);
    }
    if (d.checkpoint) this.keep({ ...d.checkpoint, committed: writeCheckpoint(this.state) });
    return d;
  }

  private send(e: OutboxEntry): void {
    this.sent.push(e);
    const id = entryId(e);
    const retracted = e.kind === 'event' ? e.fields.retracted === 1 : (e as { retracted?: number }).retracted === 1;
    if (retracted) this.told.delete(id);
    else this.told.set(id, e);
  }

  /** A checkpoint kept; those the horizon has passed dropped (all but the newest at or before it), with what was told in their epochs. */
  private keep(c: Checkpoint): void {
    this.checkpoints.set(c.epoch, c);
    const boundary = c.cut - this.opts.horizonMs;
    let keepFrom = -1;
    for (const k of this.checkpoints.values()) if (k.cut <= boundary && k.epoch > keepFrom) keepFrom = k.epoch;
    for (const k of [...this.checkpoints.keys()]) if (k < keepFrom) this.checkpoints.delete(k);
    for (const [id, t] of this.ledger) if (t.epoch < keepFrom) this.ledger.delete(id);
  }

  /** Runs the correction due, if any; whether one ran. */
  correct(nowMs: number): boolean {
    const t = this.state.late.correctFrom;
    if (t === Infinity) return false;
    let from: Checkpoint | undefined;
    for (const c of this.checkpoints.values()) if (c.cut < t && (from === undefined || c.epoch > from.epoch)) from = c;
    if (from === undefined) {
      this.tooLate++;
      this.state.late.correctFrom = Infinity;
      return false;
    }
    this.corrections++;
    const after = replayFrom(from, this.opts);
    const order = (r: { type: string }) => Number(STREAMS.get(r.type)!.lat >= 0);
    const records = [...this.records.values()]
      .filter((r) => r.time > after.get(STREAMS.get(r.type)!.streamId)!)
      .sort((a, b) => a.time - b.time || order(a) - order(b))
      .map((r) => inputOf(r.type, r.time, r.fields));
    const rep = replay(this.vehicleno, from, records, nowMs, this.opts);
    const before = [...this.ledger.values()].filter((x) => x.epoch >= from.epoch);
    const diff = diffTold(this.vehicleno, before, rep.outputs);
    for (const x of before) this.ledger.delete(x.id);
    for (const x of diff.told) this.ledger.set(x.id, x);
    for (const k of [...this.checkpoints.keys()]) if (k > from.epoch) this.checkpoints.delete(k);
    for (const c of rep.checkpoints) this.keep(c);
    for (const e of diff.outbox) this.send(e);
    this.state = rep.state;
    return true;
  }
}
