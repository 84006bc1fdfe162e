/**
 * Lines of line protocol as the bytes of a request body, each ended by a newline: what a worker
 * writes. Kept as bytes from the job's rows to the socket, so no line, and no body, is ever a string
 * on the V8 heap (a 5,000-line body is a megabyte, which as a string lives in the large-object space and
 * costs every collection).
 */
export class Lines {
  private constructor(
    /** The lines, each followed by `\n`. */
    readonly bytes: Buffer,
    /** `ends[i]`: the offset just after line i's newline. */
    private readonly ends: ArrayLike<number>,
  ) {}

  static readonly EMPTY = new Lines(Buffer.alloc(0), []);

  /** Lines given as strings (each without its newline). */
  static of(lines: readonly string[]): Lines {
    if (lines.length === 0) return Lines.EMPTY;
    const bytes = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
    const ends = new Array<number>(lines.length);
    let at = 0;
    for (let i = 0; i < lines.length; i++) ends[i] = at += Buffer.byteLength(lines[i]!, 'utf8') + 1;
    return new Lines(bytes, ends);
  }

  /** Lines already laid out in `bytes` (each ended by a newline), ending at `ends`. */
  static from(bytes: Buffer, ends: ArrayLike<number>): Lines {
    return new Lines(bytes, ends);
  }

  /** Several runs of lines as one. */
  static concat(parts: readonly Lines[]): Lines {
    if (parts.length === 1) return parts[0]!;
    const ends: number[] = [];
    let at = 0;
    for (const p of parts) {
      for (let i = 0; i < p.length; i++) ends.push(at + p.endOf(i));
      at += p.bytes.length;
    }
    return new Lines(Buffer.concat(parts.map((p) => p.bytes)), ends);
  }

  get length(): number {
    return this.ends.length;
  }

  /** Lines [from, to). */
  slice(from: number, to: number = this.length): Lines {
    if (from === 0 && to === this.length) return this;
    const start = from === 0 ? 0 : this.endOf(from - 1);
    const end = to === 0 ? 0 : this.endOf(to - 1);
    const ends = Array.from({ length: to - from }, (_, i) => this.endOf(from + i) - start);
    return new Lines(this.bytes.subarray(start, end), ends);
  }

  /** Bytes of lines [from, to), newlines included. */
  byteLength(from: number, to: number): number {
    return (to === 0 ? 0 : this.endOf(to - 1)) - (from === 0 ? 0 : this.endOf(from - 1));
  }

  /** Line i, as text (for errors and tests). */
  text(i: number): string {
    const start = i === 0 ? 0 : this.endOf(i - 1);
    return this.bytes.toString('utf8', start, this.endOf(i) - 1);
  }

  /** Every line, as text (tests). */
  texts(): string[] {
    return Array.from({ length: this.length }, (_, i) => this.text(i));
  }

  private endOf(i: number): number {
    return this.ends[i]!;
  }
}
