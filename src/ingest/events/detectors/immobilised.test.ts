import { describe, expect, it } from 'vitest';
import { DEFAULT_DERIVE_OPTIONS, type DeriveOptions } from '../derive.js';
import { CorrectedVehicle } from '../corrections/model.testkit.js';
import { gps, north, route, runOrdered, T0, V, type Named } from '../events.testkit.js';
import type { Immobilisation, ImmobilisationLookup } from './immobilised.js';

/**
 * Moved while immobilised: under a confirmed immobilisation, the ignition on or the track moving; once an
 * immobilisation, at the first such record by record time, whatever order the records come in and
 * whenever the workers learn of the immobilisation.
 */

const MIN = 60_000;

/** The ledger's immobilisations as the watch hands them (changed under a running derivation, as the watch does). */
class Ledger implements ImmobilisationLookup {
  list: Immobilisation[] = [];
  at(vehicleno: string, time: number): Immobilisation | undefined {
    return vehicleno === V ? this.list.find((im) => im.from <= time && time < im.to) : undefined;
  }
}

const optsWith = (ledger: Ledger): DeriveOptions => ({ ...DEFAULT_DERIVE_OPTIONS, immobilisations: { current: ledger } });
const moved = (d: { events: ReadonlyArray<{ event: string; time: number; fields: Record<string, number>; tags?: Record<string, string> }> }) => d.events.filter((e) => e.event === 'moved_while_immobilised');

// Driven 5 min, parked 40 min (jittering, one fix 2 km off), driven 5 min, parked 20 min, driven 5 min.
const first = route(T0, 12.9, [{ seconds: 300, kmh: 36, ign: 1 }, { seconds: 2400, kmh: 0, ign: 0, jitterM: 15 }]);
const second = route(first.end, first.lat, [{ seconds: 300, kmh: 30, ign: 1 }, { seconds: 1200, kmh: 0, ign: 0, jitterM: 15 }]);
const third = route(second.end, second.lat, [{ seconds: 300, kmh: 30, ign: 1 }]);
const OUTLIER_AT = T0 + 1_500_000;
const records: Named[] = [...first.fixes, ...second.fixes, ...third.fixes].map((r) => (r.time === OUTLIER_AT ? gps(r.time, 12.9 + north(2_000), 77, 60, 0) : r));
// Immobilised while parked the first time (confirmed 10 min into it), lifted 10 min into the second drive's parking.
const A: Immobilisation = { id: 'c1', type: 'discharge', from: T0 + 15 * MIN, to: second.end - 10 * MIN };
const B: Immobilisation = { id: 'c2', type: 'movement', from: second.end - 5 * MIN, to: Infinity };

describe('moved while immobilised', () => {
  it('told once an immobilisation, at the first record with the ignition on, with its position and speed; never before, after, or for jitter and outliers', () => {
    const ledger = new Ledger();
    ledger.list = [A, B];
    const d = moved(runOrdered(records, optsWith(ledger)));
    // A: the second drive's first fix (ignition on). B: the third drive's first fix. Jitter and the 2-km outlier (reported at 60 km/h, ignition off) are not movement.
    expect(d).toEqual([
      { vehicleno: V, event: 'moved_while_immobilised', time: first.end, value: 1, fields: { ignition: 1, lat: second.fixes[0]!.fields.lat, lng: 77, speed: 30 }, tags: { command_type: 'discharge' } },
      { vehicleno: V, event: 'moved_while_immobilised', time: second.end, value: 1, fields: { ignition: 1, lat: third.fixes[0]!.fields.lat, lng: 77, speed: 30 }, tags: { command_type: 'movement' } },
    ]);
    // Without a ledger, or with an immobilisation over the parked spell alone: nothing.
    expect(moved(runOrdered(records))).toEqual([]);
    ledger.list = [{ ...A, to: first.end }];
    expect(moved(runOrdered(records, optsWith(ledger)))).toEqual([]);
  });

  it('moving with the ignition off (pushed, towed) counts once the track confirms the motion', () => {
    const ledger = new Ledger();
    ledger.list = [{ ...A, to: Infinity }];
    const towed = route(first.end, first.lat, [{ seconds: 120, kmh: 20, ign: 0 }]);
    const d = moved(runOrdered([...first.fixes, ...towed.fixes], optsWith(ledger)));
    expect(d).toHaveLength(1);
    expect(d[0]!.fields).toMatchObject({ ignition: 0, speed: 20 });
    expect(d[0]!.time).toBeGreaterThanOrEqual(first.end);
    expect(d[0]!.time).toBeLessThan(first.end + 5_000);
  });

  /** Through the service's corrections (model.testkit.ts): deliveries as given, corrections run as they come due. */
  function through(ledger: Ledger, deliveries: ReadonlyArray<readonly [number, readonly Named[]]>, after?: (v: CorrectedVehicle, now: number) => void): CorrectedVehicle {
    const opts = optsWith(ledger);
    const v = new CorrectedVehicle(V, opts);
    let now = -Infinity;
    for (const [at, rs] of deliveries) {
      now = Math.max(now, at);
      v.deliver(rs, now);
      after?.(v, now);
      v.correct(now);
    }
    for (let round = 0; round < 5; round++) {
      now += Math.max(opts.streamQuietMs, opts.maxSkewMs);
      v.flush(now);
      if (!v.correct(now)) break;
    }
    return v;
  }
  const inBulks = (rs: readonly Named[], seconds: number, lagMs = 5_000): Array<[number, Named[]]> => {
    const out: Array<[number, Named[]]> = [];
    for (let i = 0; i < rs.length; i += seconds) out.push([rs[Math.min(i + seconds, rs.length) - 1]!.time + lagMs, rs.slice(i, i + seconds)]);
    return out;
  };
  const toldMoved = (v: CorrectedVehicle) => [...v.told.values()].filter((e) => e.kind === 'event' && e.event === 'moved_while_immobilised').map((e) => (e.kind === 'event' ? [e.time, e.tags?.command_type, e.fields.late ?? 0] : []))
    .sort((a, b) => (a[0] as number) - (b[0] as number));

  it('a late record earlier in the immobilisation moves the event there: the same as in order, told as a correction', () => {
    const ledger = new Ledger();
    ledger.list = [A, B];
    const want = moved(runOrdered(records, optsWith(ledger))).map((e) => [e.time, e.tags?.command_type]);
    // The second drive's first 20 s are held by the device and uploaded 20 minutes later (lost coverage).
    const held = records.filter((r) => r.time >= first.end && r.time < first.end + 20_000);
    const live = records.filter((r) => !held.includes(r));
    const v = through(ledger, [...inBulks(live, 10), [first.end + 20 * MIN, held]]);
    expect(toldMoved(v).map(([t, type]) => [t, type])).toEqual(want);
    // Live, the event was told at the first ignition-on record that came; the correction retracted it and told the earlier one, late.
    expect(toldMoved(v)[0]).toEqual([first.end, 'discharge', 1]);
    expect(v.sent.filter((e) => e.kind === 'event' && e.event === 'moved_while_immobilised' && e.fields.retracted === 1)).toHaveLength(1);
    expect(v.corrections).toBeGreaterThan(0);
  });

  it('records derived before the workers knew of the immobilisation are judged again from its start (the ledger asks for a correction)', () => {
    const ledger = new Ledger();
    ledger.list = [];
    const want = (() => {
      const l = new Ledger();
      l.list = [{ ...A, to: Infinity }];
      return moved(runOrdered(records.filter((r) => r.time < second.end), optsWith(l))).map((e) => [e.time, e.tags?.command_type, 0]);
    })();
    // The watch learns of A only once the second drive's records were derived (a device clock ahead of the ledger's).
    const v = through(ledger, inBulks(records.filter((r) => r.time < second.end), 10), (v, now) => {
      if (now >= first.end + 2 * MIN && ledger.list.length === 0) {
        ledger.list = [{ ...A, to: Infinity }];
        v.request(A.from);
      }
    });
    expect(toldMoved(v).map(([t, type]) => [t, type, 0])).toEqual(want);
    expect(toldMoved(v)).toEqual([[first.end, 'discharge', 1]]);
  });

  it('any delivery order, re-sends and late bulks: what is told equals in-order delivery', () => {
    const ledger = new Ledger();
    ledger.list = [A, B];
    const want = moved(runOrdered(records, optsWith(ledger))).map((e) => [e.time, e.tags?.command_type]);
    for (let seed = 1; seed <= 6; seed++) {
      let x = seed;
      const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const bulks = inBulks(records, 30).map(([at, rs]): [number, Named[]] => [at + (rnd() < 0.2 ? Math.floor(rnd() * 40 * MIN) : 0), rs]);
      const again = bulks.filter(() => rnd() < 0.1).map(([at, rs]): [number, Named[]] => [at + 3 * MIN, rs]);
      const v = through(ledger, [...bulks, ...again].sort((a, b) => a[0] - b[0]));
      expect(toldMoved(v).map(([t, type]) => [t, type]), `seed ${seed}`).toEqual(want);
    }
  });
});
