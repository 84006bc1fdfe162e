interface Frame {
  value: readonly unknown[] | Record<string, unknown>;
  keys: readonly string[] | undefined;
  i: number;
}

export interface BoundedJson {
  text: string;
  truncated: boolean;
}

/** What JSON.stringify writes for `v`: its `toJSON()` where it has one (a Date). */
function jsonOf(v: unknown, key: string): unknown {
  return typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON === 'function'
    ? (v as { toJSON(k: string): unknown }).toJSON(key)
    : v;
}

/**
 * JSON text of a parsed value with its cost bounded, whatever arrives: written without recursion
 * (a push nested thousands of levels deep cannot overflow the stack) and cut after `maxChars`, so a
 * record's preview in a reason, or its copy in the quarantine, costs in proportion to what is kept.
 * Within the bound the text is exactly JSON.stringify's, except with `nonFinite: 'name'`: a reason
 * then shows an infinity (what a number literal beyond a double's range parses to) as `Infinity`,
 * not as JSON's `null`, which would name a value the sender did not send.
 */
export function boundedJson(input: unknown, maxChars: number, opts: { nonFinite?: 'null' | 'name' } = {}): BoundedJson {
  const named = opts.nonFinite === 'name';
  const value = jsonOf(input, '');
  const out: string[] = [];
  let size = 0;
  const put = (s: string) => {
    out.push(s);
    size += s.length;
  };
  const scalar = (v: unknown, inArray: boolean): string | undefined => {
    if (typeof v === 'string') return JSON.stringify(v.length > maxChars ? v.slice(0, maxChars + 1) : v);
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') return inArray ? 'null' : undefined;
    if (typeof v === 'bigint' || (named && typeof v === 'number' && !Number.isFinite(v))) return String(v);
    return JSON.stringify(v);
  };
  const open = (v: object): Frame => {
    if (Array.isArray(v)) {
      put('[');
      return { value: v, keys: undefined, i: 0 };
    }
    put('{');
    return { value: v as Record<string, unknown>, keys: Object.keys(v), i: 0 };
  };

  if (typeof value !== 'object' || value === null) {
    const s = scalar(value, false);
    if (s === undefined) return { text: 'undefined', truncated: false };
    return s.length > maxChars ? { text: s.slice(0, maxChars), truncated: true } : { text: s, truncated: false };
  }
  const stack: Frame[] = [open(value)];
  while (stack.length > 0 && size <= maxChars) {
    const f = stack[stack.length - 1]!;
    const n = f.keys ? f.keys.length : (f.value as readonly unknown[]).length;
    if (f.i >= n) {
      put(f.keys ? '}' : ']');
      stack.pop();
      continue;
    }
    const at = f.i++;
    const key = f.keys?.[at];
    const v = jsonOf(key === undefined ? (f.value as readonly unknown[])[at] : (f.value as Record<string, unknown>)[key], key ?? String(at));
    const comma = at > 0 && out[out.length - 1] !== '{' && out[out.length - 1] !== '[' ? ',' : '';
    if (typeof v === 'object' && v !== null) {
      put(key === undefined ? comma : `${comma}${JSON.stringify(key)}:`);
      stack.push(open(v));
      continue;
    }
    const s = scalar(v, key === undefined);
    if (s === undefined) continue;
    put(key === undefined ? `${comma}${s}` : `${comma}${JSON.stringify(key)}:${s}`);
  }
  const text = out.join('');
  return text.length > maxChars || stack.length > 0 ? { text: text.slice(0, maxChars), truncated: true } : { text, truncated: false };
}

/** How deep `value` nests, counted without recursion up to `limit` (then `limit + 1`). */
export function nestingDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > deepest) deepest = d;
    if (deepest > limit) return limit + 1;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
  }
  return deepest;
}
