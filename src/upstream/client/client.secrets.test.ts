/**
 * What the service says back enters this client's errors without the credentials it was sent and
 * without control characters (issue #46, item 4): a service may echo the token or a new password in
 * `err` or `msg`, and errors end up in log lines and in failed jobs' reasons in Redis. Every server is a
 * real node:http one on 127.0.0.1.
 */
import { failureOf, serversClosedAfterEach } from './servers.testkit.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { UpstreamClient } from './client.js';
import { UPSTREAM_TEXT_MAX, UpstreamError, UpstreamProtocolError, boundedText, redacted } from './errors.js';

const TOKEN = 'secret-token-7f3a';
const PASSWORD = 'n3w-passw0rd-91';

const servers = serversClosedAfterEach();


/** A server on 127.0.0.1 answering every request with `handle`; its base URL. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handle(req, res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function failure(err: string, msg: string): string {
  return JSON.stringify({ status: 'FAILURE', data: null, err, msg });
}


/** The error as a logger serialising it, its own fields included, would write it. */
const logged = (e: Error): string => JSON.stringify({ ...e, message: e.message });

describe('credentials the service echoes', () => {
  it('the token in err and msg is redacted from the error, its message and its fields', async () => {
    const url = await serve((_req, res) => res.end(failure(`invalid_token:${TOKEN}`, `token "${TOKEN}" has expired; send ${TOKEN} no more`)));
    const e = await failureOf(new UpstreamClient({ baseUrl: url, token: TOKEN, retries: 0 }).listVehicles());
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e).toMatchObject({ err: 'invalid_token:[redacted]', msg: 'token "[redacted]" has expired; send [redacted] no more' });
    expect(logged(e)).not.toContain(TOKEN);
  });

  it('a new password echoed by changepassword is redacted, and so is the token beside it', async () => {
    const url = await serve((_req, res) => res.end(failure('weak_password', `password ${PASSWORD} is too weak (token ${TOKEN})`)));
    const e = await failureOf(new UpstreamClient({ baseUrl: url, token: TOKEN }).changePassword({ username: 'demo', newPassword: PASSWORD }));
    expect(e).toMatchObject({ name: 'UpstreamError', msg: 'password [redacted] is too weak (token [redacted])' });
    expect(logged(e)).not.toContain(PASSWORD);
    expect(logged(e)).not.toContain(TOKEN);
  });

  it('a token at the place a long msg is cut leaves none of itself behind', async () => {
    const msg = `${'x'.repeat(UPSTREAM_TEXT_MAX - 5)}${TOKEN}${'y'.repeat(100_000)}`;
    const url = await serve((_req, res) => res.end(failure('e', msg)));
    const e = await failureOf(new UpstreamClient({ baseUrl: url, token: TOKEN, retries: 0 }).listVehicles());
    expect(logged(e)).not.toContain(TOKEN.slice(0, 5));
    expect((e as UpstreamError).msg).toMatch(/^x+\[reda… \(\d+ characters\)$/);
  });

  it('a redirect whose target names the token is refused without it', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(307, { location: `http://${TOKEN}.example.invalid/collect?token=${TOKEN}` });
      res.end();
    });
    const e = await failureOf(new UpstreamClient({ baseUrl: url, token: TOKEN }).listVehicles());
    expect(e).toBeInstanceOf(UpstreamProtocolError);
    expect(e.message).toContain('HTTP 307 redirect (Location on http://[redacted].example.invalid) refused');
    expect(logged(e)).not.toContain(TOKEN);
  });

  it('a token too short to be told from a word is not looked for', () => {
    expect(redacted('token tok', ['tok'])).toBe('token tok');
    expect(redacted('a abcdef b abcd', ['abcd', 'abcdef'])).toBe('a [redacted] b [redacted]');
  });
});

describe('control characters in the service\'s words', () => {
  it('become spaces, so that an error is one line and moves no terminal cursor', async () => {
    const url = await serve((_req, res) => res.end(failure('bad\tthing', 'line one\r\nline two\u001b[31m red\u2028\u202eevil\u0000end')));
    const e = await failureOf(new UpstreamClient({ baseUrl: url, token: TOKEN, retries: 0 }).listVehicles());
    expect(e).toMatchObject({ err: 'bad thing', msg: 'line one line two [31m red evil end' });
    expect(e.message).toBe('listvehicles failed: bad thing: line one line two [31m red evil end');
  });

  it('are replaced in the kept head of a text that is cut too', () => {
    const cut = boundedText(`a\nb${'c'.repeat(UPSTREAM_TEXT_MAX)}\n`);
    expect(cut).toBe(`a b${'c'.repeat(UPSTREAM_TEXT_MAX - 3)}… (${UPSTREAM_TEXT_MAX + 4} characters)`);
  });

  it('a schema mismatch is told on one line', async () => {
    const url = await serve((_req, res) => res.end(JSON.stringify({ status: 'SUCCESS', data: [{ id: 1 }, { id: 2 }], err: '', msg: '' })));
    const e = await failureOf(new UpstreamClient({ baseUrl: url, token: TOKEN }).listVehicles());
    expect(e).toBeInstanceOf(UpstreamProtocolError);
    expect(e.message).not.toMatch(/[\r\n]/);
  });
});
