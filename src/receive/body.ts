import { promisify } from 'node:util';
import { gunzip as gunzipCb, inflate as inflateCb } from 'node:zlib';

const gunzip = promisify(gunzipCb);
const inflateAny = promisify(inflateCb);

/**
 * Reads a push body as bytes, enforcing the size limit on the bytes received and again on
 * the decompressed bytes, so a small gzip bomb is refused as surely as a large body.
 */

export class BodyError extends Error {
  constructor(
    readonly status: 400 | 413 | 415,
    readonly code: 'payload_too_large' | 'unsupported_media_type' | 'bad_encoding',
    message: string,
    /** The bytes read before the problem, kept for the quarantine when they may be data. */
    readonly raw?: Uint8Array,
  ) {
    super(message);
    this.name = 'BodyError';
  }
}

const JSON_TYPES = new Set(['application/json', 'text/json', 'text/plain']);

/** Senders that set no type, or a JSON-ish one, are accepted; a form or binary type is not. */
export function checkContentType(header: string | null): string | undefined {
  if (!header) return undefined;
  const type = header.split(';', 1)[0]!.trim().toLowerCase();
  if (JSON_TYPES.has(type) || type.endsWith('+json')) return undefined;
  return `Content-Type ${type} is not accepted; send application/json`;
}

async function collect(stream: ReadableStream<Uint8Array>, limit: number, what: string): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new BodyError(413, 'payload_too_large', `${what} exceeds the limit of ${limit} bytes`);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

export async function readBody(req: Request, limit: number): Promise<Uint8Array> {
  const length = Number(req.headers.get('content-length') ?? NaN);
  if (length > limit) throw new BodyError(413, 'payload_too_large', `body of ${length} bytes exceeds the limit of ${limit} bytes`);
  const encoding = (req.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (!req.body) return new Uint8Array(0);
  if (encoding === 'identity' || encoding === '') return collect(req.body, limit, 'body');

  const format = encoding === 'gzip' || encoding === 'x-gzip' ? 'gzip' : encoding === 'deflate' ? 'deflate' : undefined;
  if (!format) {
    throw new BodyError(415, 'unsupported_media_type', `Content-Encoding ${encoding} is not supported; use gzip, deflate or none`);
  }
  const compressed = await collect(req.body, limit, 'compressed body');
  try {
    const inflate = format === 'gzip' ? gunzip : inflateAny;
    return await inflate(compressed, { maxOutputLength: limit });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new BodyError(413, 'payload_too_large', `decompressed body exceeds the limit of ${limit} bytes`);
    }
    throw new BodyError(400, 'bad_encoding', `body is not valid ${format} data`, compressed);
  }
}
