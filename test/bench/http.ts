import { connect, type Socket } from 'node:net';

/**
 * A minimal keep-alive HTTP/1.1 client on a raw socket, one request in flight per connection:
 * requests are pre-built byte strings, answers are parsed only as far as the status and the body
 * length. It costs far less CPU than fetch or node:http, so on a 2-core machine the load
 * generator leaves the cores to the servers it measures (as autocannon or wrk would).
 */
export interface Answer {
  status: number;
  body: Buffer;
}

export function buildRequest(opts: { method?: string; path: string; host: string; headers?: Record<string, string>; body: string | Buffer }): Buffer {
  const body = typeof opts.body === 'string' ? Buffer.from(opts.body) : opts.body;
  let head = `${opts.method ?? 'POST'} ${opts.path} HTTP/1.1\r\nHost: ${opts.host}\r\n`;
  for (const [k, v] of Object.entries(opts.headers ?? {})) head += `${k}: ${v}\r\n`;
  head += `Content-Length: ${body.byteLength}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const CL = [Buffer.from('\r\ncontent-length: '), Buffer.from('\r\nContent-Length: ')];

/** The Content-Length of a response head ending at `end`, or -1. */
function contentLength(b: Buffer, end: number): number {
  for (const key of CL) {
    const at = b.indexOf(key);
    if (at < 0 || at > end) continue;
    let n = 0;
    for (let i = at + key.length; i < end; i++) {
      const c = b[i]!;
      if (c < 48 || c > 57) break;
      n = n * 10 + (c - 48);
    }
    return n;
  }
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(b.subarray(0, end).toString('latin1'));
  return m ? Number(m[1]) : -1;
}

export class Connection {
  private socket: Socket | undefined;
  private buf: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (a: Answer) => void; reject: (e: Error) => void } | undefined;

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  private open(): Promise<Socket> {
    if (this.socket && !this.socket.destroyed) return Promise.resolve(this.socket);
    return new Promise((resolve, reject) => {
      const s = connect({ host: this.host, port: this.port, noDelay: true });
      s.once('connect', () => {
        this.socket = s;
        resolve(s);
      });
      s.once('error', (err) => {
        reject(err);
        this.fail(err);
      });
      s.on('data', (chunk: Buffer) => this.onData(chunk));
      s.on('close', () => {
        if (this.socket === s) this.socket = undefined;
        this.fail(new Error('connection closed'));
      });
    });
  }

  private fail(err: Error): void {
    const w = this.waiting;
    this.waiting = undefined;
    this.buf = Buffer.alloc(0);
    w?.reject(err);
  }

  private onData(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const end = this.buf.indexOf(CRLFCRLF);
    if (end < 0) return;
    // "HTTP/1.1 202 ...": the status is bytes 9-11.
    const b = this.buf;
    const status = (b[9]! - 48) * 100 + (b[10]! - 48) * 10 + (b[11]! - 48);
    let body: Buffer;
    let consumed: number;
    const cl = contentLength(b, end);
    if (cl >= 0) {
      if (b.length < end + 4 + cl) return;
      body = b.subarray(end + 4, end + 4 + cl);
      consumed = end + 4 + cl;
    } else if (b.subarray(0, end).toString('latin1').toLowerCase().includes('\r\ntransfer-encoding: chunked')) {
      const parts: Buffer[] = [];
      let at = end + 4;
      for (;;) {
        const eol = b.indexOf('\r\n', at);
        if (eol < 0) return;
        const size = parseInt(b.subarray(at, eol).toString('latin1'), 16);
        if (b.length < eol + 2 + size + 2) return;
        if (size === 0) {
          at = eol + 4;
          break;
        }
        parts.push(b.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
      body = Buffer.concat(parts);
      consumed = at;
    } else {
      body = Buffer.alloc(0);
      consumed = end + 4;
    }
    this.buf = b.length === consumed ? Buffer.alloc(0) : Buffer.from(b.subarray(consumed));
    const w = this.waiting;
    this.waiting = undefined;
    // The body is copied only when it will be looked at (errors).
    w?.resolve({ status, body: status >= 200 && status < 300 ? body : Buffer.from(body) });
  }

  async request(raw: Buffer): Promise<Answer> {
    const s = await this.open();
    return new Promise<Answer>((resolve, reject) => {
      this.waiting = { resolve, reject };
      s.write(raw);
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }
}
