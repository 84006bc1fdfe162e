/**
 * The buffers a commit's arguments are packed into (`commit.ts`): a growing buffer of the layout's items
 * (`Packed`: counts, doubles, text, bytes a writer puts in place), and a few finished ones kept for the next.
 */

/**
 * Buffers of finished commits, kept for the next: a bulk job's commit is hundreds of kilobytes, and a
 * fresh one each job costs its pages' first touch and the garbage collector's work. A few at most (commits
 * of several partitions run at once), none larger than MAX_KEPT.
 */
const freeBuffers: Buffer[] = [];
const MAX_FREE = 4;
const MAX_KEPT = 8 << 20;

function takeBuffer(size: number): Buffer {
  for (let i = 0; i < freeBuffers.length; i++) {
    if (freeBuffers[i]!.length >= size) return freeBuffers.splice(i, 1)[0]!;
  }
  return Buffer.allocUnsafe(size);
}

/** Hands a buffer back for the next commit (nothing may read it after). */
export function giveBuffer(b: Buffer): void {
  if (freeBuffers.length < MAX_FREE && b.length <= MAX_KEPT) freeBuffers.push(b);
}

/** A growing buffer of a commit's items: counts and lengths 4-byte big-endian, numbers 8-byte big-endian doubles. */
export class Packed {
  buf: Buffer;
  len = 0;

  constructor(size: number) {
    this.buf = takeBuffer(size);
  }

  room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(grown, 0, 0, this.len);
    this.buf = grown;
  }

  count(n: number): void {
    this.room(4);
    this.buf.writeUInt32BE(n, this.len);
    this.len += 4;
  }

  number(x: number | undefined): void {
    this.room(8);
    this.buf.writeDoubleBE(x ?? NaN, this.len);
    this.len += 8;
  }

  /** Text, as UTF-8 (a plate, a version, an outbox entry). */
  text(x: string): void {
    this.room(4 + x.length);
    const b = this.buf;
    let o = this.len + 4;
    // ASCII (plates and versions are) byte by byte: Buffer.write's encoding layers cost more than the copy.
    for (let i = 0; i < x.length; i++) {
      const c = x.charCodeAt(i);
      if (c >= 0x80) {
        const n = Buffer.byteLength(x);
        this.room(4 + n);
        this.buf.writeUInt32BE(n, this.len);
        this.len += 4 + this.buf.write(x, this.len + 4, 'utf8');
        return;
      }
      b[o++] = c;
    }
    b.writeUInt32BE(x.length, this.len);
    this.len = o;
  }

  /** Bytes a writer put after the length's place (room for them made first), up to `end`. */
  wrote(end: number): void {
    this.buf.writeUInt32BE(end - this.len - 4, this.len);
    this.len = end;
  }
}
