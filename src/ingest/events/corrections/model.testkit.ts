import { flush, ingest, inputOf, newState, type DeriveOptions, type Derived, type EventInput, type VehicleState } from '../derive.js';
import { outputsOf, type OutboxEntry } from '../outbox.js';
import { writeCheckpoint } from '../wire.js';
import { STREAMS } from '../inputs.js';
import { entryId, toldField, toldLine, toldOf } from './ledger.js';
import { checkpointField, chooseCheckpoint, correction, packCheckpoint, prunedBefore, readCorrections, recordsFor, replayFrom, replayUntil, requestField } from './correct.js';

/**
 * The service's corrections for one vehicle, in memory, as the store and the corrector do them in Redis
 * and InfluxDB (store/, events-commit.lua): every record delivered is kept as InfluxDB keeps it (a
 * record of one type and time merged field by field, the later winning); each delivery is derived live;
 * the vehicle's corrections hash (checkpoints, the ledger of what was emitted) is kept as the commit script
 * keeps it; a correction is planned by `correct.ts` over the kept records. `told` is what a consumer
 * holds after applying every entry it was sent: the outputs by id, retracted ones gone.
 */
export class CorrectedVehicle {
  state: VehicleState = newState();
  readonly records = new Map<string, { type: string; time: number; fields: Record<string, number> }>();
  /** The corrections hash, field → value. */
  readonly hash = new Map<string, Buffer>();
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
    const genesis = this.genesis();
    return this.commit(ingest(this.vehicleno, this.state, inputs, nowMs, this.opts), genesis);
  }

  flush(nowMs: number): Derived {
    const genesis = this.genesis();
    return this.commit(flush(this.vehicleno, this.state, nowMs, this.opts), genesis);
  }

  /** The state before a call, as epoch 0's checkpoint (read only if the call begins corrections afresh). */
  private genesis(): Buffer | undefined {
    return this.state.late.epoch !== this.state.late.epoch ? writeCheckpoint(this.state) : undefined;
  }

  /** What the commit script does with a call's outputs, checkpoint and ledger entries. */
  private commit(d: Derived, genesis: Buffer | undefined): Derived {
    this.late += d.late;
    this.tooLate += d.tooLate;
    if (d.reset && genesis) {
      this.hash.clear();
      this.hash.set(checkpointField({ epoch: 0, cut: this.state.late.firstCut }), packCheckpoint(genesis));
    }
    if (d.checkpoint) this.hash.set(checkpointField(d.checkpoint), packCheckpoint(writeCheckpoint(this.state)));
    for (const e of outputsOf(d)) {
      const field = toldField(d.epoch);
      this.hash.set(field, Buffer.concat([this.hash.get(field) ?? Buffer.alloc(0), Buffer.from(`${toldLine(toldOf(e, d.epoch))}\n`)]));
      this.send(e);
    }
    if (d.checkpoint) this.prune(d.checkpoint.cut);
    return d;
  }

  private prune(newest: number): void {
    const kept = readCorrections(this.vehicleno, Object.fromEntries(this.hash));
    const keepFrom = prunedBefore(kept.checkpoints, newest, this.opts.horizonMs);
    for (const f of [...this.hash.keys()]) {
      const e = /^[ct](\d+)/.exec(f);
      if (e && Number(e[1]) < keepFrom) this.hash.delete(f);
    }
  }

  private send(e: OutboxEntry): void {
    this.sent.push(e);
    const id = entryId(e);
    const retracted = e.kind === 'event' ? e.fields.retracted === 1 : (e as { retracted?: number }).retracted === 1;
    if (retracted) this.told.delete(id);
    else this.told.set(id, e);
  }

  /** A correction asked for from outside the records, as the store's `requestCorrection` keeps it. */
  request(time: number): void {
    this.hash.set(requestField(time), Buffer.alloc(0));
  }

  /** Runs the correction due, if any, as the corrector does; whether one ran. */
  correct(nowMs: number): boolean {
    const kept = readCorrections(this.vehicleno, Object.fromEntries(this.hash));
    const t = Math.min(this.state.late.correctFrom, kept.requestedFrom);
    if (t === Infinity) return false;
    const from = chooseCheckpoint(kept.checkpoints, t);
    if (from === undefined) {
      this.tooLate++;
      this.state.late.correctFrom = Infinity;
      return false;
    }
    this.corrections++;
    const after = replayFrom(from, this.opts);
    const until = replayUntil(this.state);
    const read = [...this.records.values()]
      .filter((r) => {
        const id = STREAMS.get(r.type)!.streamId;
        return r.time > after.get(id)! && r.time <= until.get(id)!;
      })
      .map((r) => inputOf(r.type, r.time, r.fields));
    const records = recordsFor(this.state, after, read);
    if (records === undefined) throw new Error('the kept records miss one the live state committed');
    const c = correction(this.vehicleno, this.state, kept, from, records, nowMs, this.opts);
    for (const f of c.drop) this.hash.delete(f);
    for (const [f, v] of c.write) this.hash.set(f, typeof v === 'string' ? Buffer.from(v) : v);
    for (const e of c.diff.outbox) this.send(e);
    this.state = c.replayed.state;
    return true;
  }
}

