/**
 * The two shapes a push arrives in (spec §3): bulk `{"bulkData":[...]}` or realtime, one bare record.
 * The receiver and the dead letter's replay unwrap a parsed body the same way, here.
 */

/** What a route takes: either shape, or only one of them. */
export type PushShape = 'any' | 'bulk' | 'realtime';

export type SplitPush =
  | { ok: true; bulk: boolean; items: unknown[] }
  | { ok: false; problem: string };

/** The records of a parsed push body, or why the body is not a push of `shape`. */
export function splitPush(body: unknown, shape: PushShape): SplitPush {
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  const bulk = isObject && 'bulkData' in body;
  if (bulk && !Array.isArray((body as { bulkData: unknown }).bulkData)) return { ok: false, problem: 'bulkData must be an array of push records' };
  if (shape === 'bulk' && !bulk) return { ok: false, problem: 'expected a bulk push {"bulkData":[...]}; send a single record to /push/realtime' };
  if (shape === 'realtime' && bulk) return { ok: false, problem: 'expected a single push record; send {"bulkData":[...]} to /push/bulk' };
  if (!isObject) return { ok: false, problem: 'expected a JSON object: a push record or {"bulkData":[...]}' };
  return { ok: true, bulk, items: bulk ? (body as { bulkData: unknown[] }).bulkData : [body] };
}
