/** A stream read whole, or where it was cut: `read` bytes had come when the cap was passed. */
export type Capped = { ok: true; bytes: Uint8Array } | { ok: false; read: number };

/**
 * Reads a byte stream to its end, counting as the bytes arrive, and stops (cancelling the stream) as
 * soon as they pass `max`: whatever a peer declares or sends (chunked, a Content-Length that lies, a
 * compressed body inflated on the way), no more than `max` and one chunk is ever held.
 */
export async function readCapped(stream: ReadableStream<Uint8Array>, max: number): Promise<Capped> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      return { ok: false, read: size };
    }
    chunks.push(value);
  }
  return { ok: true, bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) };
}
