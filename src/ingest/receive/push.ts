import type { Context } from 'hono';
import type { Logger } from '../../log/index.js';
import type { RefusedFieldAnswer, RejectedRecord } from '../../telemetry/envelope.js';
import { splitPush, type PushShape } from '../../telemetry/push.js';
import { quarantineEntry, type NewQuarantineEntry, type QuarantineOrigin, type Reservation } from '../queue/quarantine.js';
import type { Plausibility } from '../plausibility/judge.js';
import type { FlattenOptions } from '../flatten/flatten.js';
import type { PointRows } from '../flatten/points.js';
import { RecordSorter, VEHICLES_MAX } from './sort.js';
import { throttleOf } from '../../log/throttle.js';
import { scanPush } from '../scan/scan.js';
import { acceptedBody, answerAccepted, PushRefused, refusalAnswer } from './answer.js';
import type { SenderAuth } from './auth.js';
import type { Delivery } from './delivery.js';
import { deliveryIdOf, idempotencyDigest, type IdempotencyStore, type StoredAnswer } from './idempotency.js';
import type { RateLimiter } from './rateLimit.js';
import type { Sender } from '../../config/senders.js';
import { verify } from '../../telemetry/signature.js';
import type { Metrics } from '../../metrics/index.js';
import { BodyError, readBody } from './body.js';
import { flattenFor, type JobFormat } from '../queue/formats.js';

/** What the receiver needs from the queue stage; the real ones are PartitionedProducer and Quarantine. */
/** What the push path asks of the vehicles' admission (fleet/admission.ts `VehicleAdmission` is it): receiving stands above no fleet state. */
export interface Admission {
  readonly opts: { readonly maxVehicles: number };
  /** Known to this process (admitted recently): no Redis asked. */
  isKnown(plate: string): boolean;
  /** Of `plates` (none known to this process), those refused. */
  refused(plates: ReadonlySet<string>): Promise<Set<string>>;
}

export interface RecordSink {
  /** QUEUE_PARTITIONS: `rows[i]` holds the records of partition i's vehicles. */
  readonly partitions: number;
  /** `dictionary`: the rows' masks stay below it (FlattenOptions.dictionary); the whole dictionary when unset. */
  enqueueRows(rows: readonly PointRows[], dictionary?: number): Promise<void>;
  /** At most once within `ttlMs` for one delivery `id` (a retried keyed delivery enqueues nothing). */
  enqueueRowsOnce(rows: readonly PointRows[], once: { id: string; ttlMs: number }, dictionary?: number): Promise<void>;
}
export interface QuarantineSink {
  /** Room for a sender's entries in its share, taken before the push is answered (queue/quarantine.ts). */
  reserve(sender: string, entries: readonly NewQuarantineEntry[]): Promise<Reservation>;
}

export interface PushHandlerOptions {
  /** Who may push; undefined when anyone may (PUSH_AUTH=none). */
  auth: SenderAuth | undefined;
  /** How far a signature's timestamp may be from now (SIGNATURE_TOLERANCE). */
  signatureToleranceMs: number;
  /** Remembers keyed deliveries (IDEMPOTENCY_TTL); undefined turns idempotency keys off. */
  idempotency?: IdempotencyStore;
  rateLimiter?: RateLimiter;
  metrics?: Metrics;
  bodyLimit: number;
  /** Records one push may carry (MAX_RECORDS_PER_PUSH); more is answered 413. */
  maxRecords: number;
  quarantineRawLimit: number;
  /** What cannot be true is refused (TIME_MAX_AHEAD, TIME_MAX_AGE, PLAUSIBLE_RANGES); undefined judges nothing. */
  plausibility?: Plausibility;
  /** The flattening rules (CAN_TEMP_SENTINELS, PACK_HEALTH): records are queued as points. */
  flatten: FlattenOptions;
  /** Which new vehicles are admitted (MAX_VEHICLES; fleet/admission.ts is the service's); every one when unset. */
  vehicles?: Admission | undefined;
  /** The job format every live worker reads (queue/formats.ts), read from memory; this release's newest when unset. */
  format?: () => JobFormat;
  log: Logger;
}

// Invalid UTF-8 is refused rather than replaced: two plates differing in one bad byte would
// otherwise merge into one series.
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * One push, past the checks that need no body: read it, check its signature, answer a keyed delivery
 * seen before from its first answer, parse it, validate each record, queue the valid ones and
 * quarantine the rest, and answer 202 only once Redis confirmed both. Anything that is the push's
 * fault is thrown as PushRefused (after its bytes are quarantined); anything else means the push was
 * not stored. What the quarantine is to keep is taken from the sender's share first: a push whose
 * refused records do not fit is refused whole, before anything of it is stored.
 */
export async function receivePush(
  c: Context,
  shape: PushShape,
  delivery: Delivery,
  records: RecordSink,
  quarantine: QuarantineSink,
  opts: PushHandlerOptions,
): Promise<Response> {
  const intake = new Intake(c, delivery, quarantine, opts);
  const bytes = await readPushBody(c.req.raw, opts.bodyLimit, intake);
  opts.metrics?.receivedBytes.inc(bytes.byteLength);
  if (opts.auth) checkSignature(c, delivery, opts.auth, bytes, opts.signatureToleranceMs);

  // A keyed delivery seen before gets its first answer again, and nothing is stored twice.
  const digest = opts.idempotency ? idempotencyDigest(c, intake.sender) : undefined;
  if (digest !== undefined) {
    delivery.deliveryId = deliveryIdOf(digest);
    const first = await opts.idempotency!.get(digest);
    if (first) return replayed(first, delivery.deliveryId);
  }

  // The scanner reads plainly valid records straight into rows; the rest of the push it hands to the
  // general path (parse, validate, judge, flatten) record by record, or whole when it is not a push it reads.
  // Rows for the dictionary every live worker reads: names beyond it are written by name.
  const dictionary = opts.format?.().dictionary;
  const flatten = dictionary === undefined ? opts.flatten : flattenFor(opts.flatten, dictionary);
  const sorter = () => new RecordSorter(intake, { ...opts, flatten, partitions: records.partitions, vehicles: opts.vehicles }, bytes.byteLength);
  let sorted = sorter();
  const scanned = scanPush(bytes, shape, sorted, { plausibility: opts.plausibility, flatten, receivedAt: intake.receivedAt });
  let general: { text: string; items: unknown[] } | undefined;
  let bulk: boolean, total: number;
  if (scanned) ({ bulk, count: total } = scanned);
  else {
    const push = decodePush(bytes, shape);
    if (!push.ok) {
      await intake.keepWhole(push.raw, push.refusal.message);
      throw push.refusal;
    }
    general = push;
    ({ bulk, items: { length: total } } = push);
  }
  if (total > opts.maxRecords) {
    throw new PushRefused(413, 'too_many_records', `push of ${total} records exceeds MAX_RECORDS_PER_PUSH (${opts.maxRecords}); split it`);
  }
  if (opts.rateLimiter?.enabled) await takeTokens(opts.rateLimiter, intake.sender, total);

  if (general) {
    // What the scanner wrote before it gave up on the body is thrown away.
    sorted = sorter();
    // A realtime push is its record: the quarantine keeps its text as sent.
    if (!bulk) sorted.item(0, general.items[0], general.text.trim());
    else for (let i = 0; i < total; i++) sorted.item(i, general.items[i]);
  }
  const text = general?.text;
  const textOf = () => text ?? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  sorted.finish(textOf);
  if (sorted.unknownPlates.size > 0) await admitVehicles(sorted, opts, intake, textOf);
  if (opts.metrics) sorted.count(opts.metrics, total);
  const { rejected, refusedFields, fieldsRefused, held } = sorted;
  const room = held.length > 0 ? await intake.reserve(held, sorted.accepted) : undefined;
  const enqueued = digest === undefined ? records.enqueueRows(sorted.rows, dictionary) : records.enqueueRowsOnce(sorted.rows, { id: digest, ttlMs: opts.idempotency!.ttlMs }, dictionary);
  // Only counts and what is answered or quarantined cross the wait, in `outcome`: the parsed push and
  // its rows are then garbage as soon as the producer has encoded them, not kept through the Redis
  // round trip (fewer survivors for each young-generation collection, which otherwise copies and
  // promotes every push in flight).
  const outcome: Outcome = { bulk, accepted: sorted.accepted, total, rejected, refusedFields, fieldsRefused, room };
  return answerOnceStored(enqueued, outcome, digest, intake, opts);
}

/**
 * One push's facts as its steps learn them (the delivery id once a key names it, the sender once a
 * signature does), and the quarantine of what cannot be read as records.
 */
class Intake {
  readonly receivedAt = Date.now();
  // Only quarantine entries and logs need the route, and parsing the URL is not free on every push.
  private origin: QuarantineOrigin | undefined;

  constructor(
    private readonly c: Context,
    private readonly delivery: Delivery,
    private readonly quarantine: QuarantineSink,
    private readonly opts: Pick<PushHandlerOptions, 'quarantineRawLimit' | 'metrics'>,
  ) {}

  get deliveryId(): string {
    return this.delivery.deliveryId;
  }

  get sender(): string {
    return this.delivery.sender?.name ?? ANONYMOUS;
  }

  /** Where entries of this push come from; fixed when first asked, which is past the steps that name the delivery and sender. */
  originOf(): QuarantineOrigin {
    return (this.origin ??= { deliveryId: this.deliveryId, sender: this.sender, receivedAt: this.receivedAt, route: new URL(this.c.req.url).pathname, stage: 'receive' });
  }

  /** The whole body, kept as one entry: it could not be read as records. */
  async keepWhole(raw: string, reason: string): Promise<void> {
    await (await this.reserve([quarantineEntry(this.originOf(), -1, reason, raw, this.opts.quarantineRawLimit)], 0)).keep();
  }

  /** Room for this push's entries in its sender's share; refused (429) when they do not fit, naming why. */
  async reserve(entries: readonly NewQuarantineEntry[], valid: number): Promise<Extract<Reservation, { ok: true }>> {
    const room = await this.quarantine.reserve(this.sender, entries);
    if (room.ok) return room;
    this.opts.metrics?.quarantineRefusedPushes.inc({ sender: this.sender });
    const what = entries.length === 1 && entries[0]!.index < 0 ? 'its body cannot be stored' : `${entries.length} of its records cannot be stored`;
    const resend = valid > 0 ? `; send its ${valid} valid record(s) again without the others, or` : '; send it again';
    throw new PushRefused(
      429,
      'quarantine_share_full',
      `push refused, nothing of it stored: ${what} and ${this.sender}'s share of the quarantine is full (it holds ${room.held} bytes of ${room.share}; these need ${room.bytes})${resend} once an operator has replayed or purged ${this.sender}'s entries (telematics-deadletter)`,
      QUARANTINE_FULL_RETRY_AFTER_S,
    );
  }
}

/** The body's bytes; those of a body read but not decodable (bad gzip) are quarantined before it is refused. */
async function readPushBody(req: Request, limit: number, intake: Intake): Promise<Uint8Array> {
  try {
    return await readBody(req, limit);
  } catch (err) {
    if (err instanceof BodyError && err.raw) await intake.keepWhole(base64(err.raw), err.message);
    throw err;
  }
}

const base64 = (bytes: Uint8Array) => `base64:${Buffer.from(bytes).toString('base64')}`;

type DecodedPush = { ok: true; text: string; bulk: boolean; items: unknown[] } | { ok: false; refusal: PushRefused; raw: string };

/** The body as UTF-8 text, parsed and split into records; or its refusal, with what the quarantine keeps of it. */
function decodePush(bytes: Uint8Array, shape: PushShape): DecodedPush {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return { ok: false, refusal: new PushRefused(400, 'invalid_text', 'body is not valid UTF-8; send JSON encoded as UTF-8'), raw: base64(bytes) };
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return { ok: false, refusal: new PushRefused(400, 'invalid_json', `body is not valid JSON: ${(err as Error).message}`), raw: text };
  }
  const push = splitPush(body, shape);
  if (!push.ok) return { ok: false, refusal: new PushRefused(400, 'invalid_shape', push.problem), raw: text };
  return { ok: true, text, bulk: push.bulk, items: push.items };
}

/** What a push's answer and its quarantine need once its records are enqueued: no record itself. */
interface Outcome {
  bulk: boolean;
  accepted: number;
  total: number;
  rejected: RejectedRecord[];
  refusedFields: RefusedFieldAnswer[];
  fieldsRefused: { fields: number; records: number };
  /** The room its refused records took in the quarantine, kept once the valid ones are queued. */
  room: Extract<Reservation, { ok: true }> | undefined;
}

/**
 * The answer, once Redis confirmed the enqueue; the quarantine only then, so that a push answered
 * 503 leaves no entries behind for the sender's retry to duplicate (its room goes back). A keyed
 * delivery's answer is kept to be given again.
 */
async function answerOnceStored(enqueued: Promise<void>, o: Outcome, digest: string | undefined, intake: Intake, opts: PushHandlerOptions): Promise<Response> {
  try {
    await enqueued;
  } catch (err) {
    await o.room?.release().catch(() => {});
    throw err;
  }
  await o.room?.keep();
  const { deliveryId } = intake;
  if (o.rejected.length > 0) {
    const { sender } = intake;
    // Senders are configured names: one throttle each, so a sender sending bad records in every push is said once a minute.
    throttleOf(opts.log, `rejected:${sender}`).pass((times) => opts.log.info({ deliveryId, sender, route: intake.originOf().route, accepted: o.accepted, rejected: o.rejected.length, times }, 'push had invalid records; quarantined'));
  }
  const answer =
    !o.bulk && o.rejected.length > 0
      ? refusalAnswer(realtimeRefusal(o.rejected[0]!))
      : { status: 202, body: acceptedBody(deliveryId, o.accepted, o.total, o.rejected, o.refusedFields, o.fieldsRefused) };
  if (digest !== undefined) await opts.idempotency!.put(digest, answer);
  return answer.status === 202 ? answerAccepted(deliveryId, answer.body) : replayed(answer, deliveryId, false);
}

/** Whose push this is, once its signature is checked: the token's sender if it signs, else the signer. */
function checkSignature(c: Context, delivery: Delivery, auth: SenderAuth, body: Uint8Array, toleranceMs: number): Sender {
  const byToken = delivery.sender;
  const candidates = byToken ? (byToken.signingKeys.length > 0 ? [byToken] : []) : auth.signers;
  if (byToken && candidates.length === 0) return byToken;
  const headers = { id: c.req.header('webhook-id'), timestamp: c.req.header('webhook-timestamp'), signature: c.req.header('webhook-signature') };
  if (!headers.signature) throw new PushRefused(401, 'invalid_signature', `sender ${byToken?.name ?? ''} signs its deliveries: webhook-signature is missing`);
  let reason = '';
  for (const s of candidates) {
    const v = verify(s.signingKeys, headers, body, Math.round(toleranceMs / 1000), Math.floor(Date.now() / 1000));
    if (v.ok) {
      delivery.sender = s;
      return s;
    }
    reason = v.reason;
  }
  throw new PushRefused(401, 'invalid_signature', `signature not accepted: ${reason}`);
}

async function takeTokens(limiter: RateLimiter, sender: string, records: number): Promise<void> {
  const v = await limiter.take(sender, records);
  if (v.ok) return;
  if (v.tooLarge) throw new PushRefused(413, 'too_many_records', `push of ${records} records is more than ${sender}'s rate limit can ever admit (${limiter.describe()}, a bucket holds 2 s); split it`);
  throw new PushRefused(429, 'rate_limited', `${sender} is over its rate limit (${limiter.describe()}); retry after the delay given`, Math.max(1, Math.ceil(v.retryAfterMs / 1000)));
}

/** A stored answer, sent again (marked so when it is a replay of an earlier delivery). */
function replayed(answer: StoredAnswer, deliveryId: string, replay = true): Response {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Delivery-Id': deliveryId };
  if (replay) headers['Idempotent-Replayed'] = 'true';
  return new Response(answer.body, { status: answer.status, headers });
}

/**
 * When a sender whose quarantine share is full may try again: room comes back only when an operator
 * replays or purges its entries, so sooner would only cost both sides a refusal.
 */
const QUARANTINE_FULL_RETRY_AFTER_S = 60;

/** The sender of pushes when authentication is off. */
const ANONYMOUS = 'anonymous';

/**
 * The new vehicles of a push the admission refuses (MAX_VEHICLES): their records out of the rows,
 * rejected and counted, the push kept whole in the quarantine.
 */
async function admitVehicles(sorted: RecordSorter, opts: PushHandlerOptions, intake: Intake, text: () => string): Promise<void> {
  const admission = opts.vehicles!;
  const refused = await admission.refused(new Set(sorted.unknownPlates.keys()));
  if (refused.size === 0) return;
  const named = [...refused].slice(0, 5).map((p) => JSON.stringify(p)).join(', ');
  const more = refused.size > 5 ? ` and ${refused.size - 5} more` : '';
  sorted.refuseVehicles(refused, `vehicle ${named}${more} not admitted: the service keeps state for MAX_VEHICLES (${admission.opts.maxVehicles}) vehicles, and this one is neither known nor listed by the upstream`, text);
  const records = [...refused].reduce((n, p) => n + sorted.unknownPlates.get(p)!.length, 0);
  opts.metrics?.vehiclesRefused.inc({ sender: intake.sender }, records);
  throttleOf(opts.log, 'vehicles_max').pass((times) => opts.log.warn({ sender: intake.sender, vehicles: refused.size, records, first: [...refused][0]!.slice(0, 64), times }, 'records of new vehicles refused: MAX_VEHICLES reached'));
}

/** A realtime push's one record refused: 400, as invalid or as implausible; 403 for a vehicle not admitted. */
function realtimeRefusal(r: RejectedRecord): PushRefused {
  if (r.rule === VEHICLES_MAX) return new PushRefused(403, 'vehicle_not_admitted', `${r.error} (quarantined)`);
  return r.rule === undefined
    ? new PushRefused(400, 'invalid_record', `invalid record (quarantined): ${r.error}`)
    : new PushRefused(400, 'implausible_record', `implausible record (quarantined): ${r.error}`);
}
