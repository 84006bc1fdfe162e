import { readCapped } from '../../bytes/capped.js';
import { promisify } from 'node:util';
import { gunzip as gunzipCb, inflate as inflateCb } from 'node:zlib';
import { PushRefused } from './answer.js';

const gunzip = promisify(gunzipCb);
const inflateAny = promisify(inflateCb);

/** A body not read: over the limit, or in an encoding that is not supported or does not decode. */
export class BodyError extends PushRefused {
  constructor(
    status: 400 | 413 | 415,
    code: 'payload_too_large' | 'unsupported_media_type' | 'bad_encoding',
    message: string,
    /** The bytes read before the problem, kept for the quarantine when they may be data. */
    readonly raw?: Uint8Array,
  ) {
    super(status, code, message);
    this.name = 'BodyError';
  }
}

async function collect(stream: ReadableStream<Uint8Array>, limit: number, what: string): Promise<Uint8Array> {
  const r = await readCapped(stream, limit);
  if (!r.ok) throw new BodyError(413, 'payload_too_large', `${what} exceeds the limit of ${limit} bytes`);
  return r.bytes;
}

/**
 * The bytes of a body whose Content-Length is declared and within the limit. HTTP/1.1 framing
 * delivers exactly that many bytes, so they can be read in one go: `arrayBuffer()` of
 * @hono/node-server's request reads the socket directly, where `req.body` would first build a
 * WHATWG Request and stream (a sixth of a small push's cost). Checked again after reading, for
 * Request objects that do not hold to their header.
 */
async function whole(req: Request, limit: number, what: string): Promise<Uint8Array> {
  const bytes = new Uint8Array(await req.arrayBuffer());
  if (bytes.byteLength > limit) throw new BodyError(413, 'payload_too_large', `${what} exceeds the limit of ${limit} bytes`);
  return bytes;
}

/**
 * Reads a push body as bytes, enforcing the size limit on the bytes received and again on
 * the decompressed bytes, so a small gzip bomb is refused as surely as a large body.
 */
export async function readBody(req: Request, limit: number): Promise<Uint8Array> {
  const declared = req.headers.get('content-length');
  const length = Number(declared ?? NaN);
  if (length > limit) throw new BodyError(413, 'payload_too_large', `body of ${length} bytes exceeds the limit of ${limit} bytes`);
  const encoding = (req.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  const sized = declared !== null && Number.isSafeInteger(length) && length >= 0;
  if (encoding === 'identity' || encoding === '') {
    if (sized) return whole(req, limit, 'body');
    if (!req.body) return new Uint8Array(0);
    return collect(req.body, limit, 'body');
  }

  const format = encoding === 'gzip' || encoding === 'x-gzip' ? 'gzip' : encoding === 'deflate' ? 'deflate' : undefined;
  if (!format) {
    throw new BodyError(415, 'unsupported_media_type', `Content-Encoding ${encoding} is not supported; use gzip, deflate or none`);
  }
  let compressed: Uint8Array;
  if (sized) compressed = await whole(req, limit, 'compressed body');
  else if (!req.body) return new Uint8Array(0);
  else compressed = await collect(req.body, limit, 'compressed body');
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
