import { describe, expect, it } from 'vitest';
import { UpstreamError, UpstreamProtocolError, UpstreamTransportError } from '../../upstream/client/errors.js';
import { failureNote } from './sweep.js';

describe('what a failed send is told', () => {
  it('not carried out only when the service itself refused it below HTTP 500', () => {
    expect(failureNote(new UpstreamError('immobilize', 'unknown_vehicle', 'vehicle X is not in your fleet', 200))).toBe('the service refused it (unknown_vehicle: vehicle X is not in your fleet): not carried out');
    expect(failureNote(new UpstreamError('immobilize', 'rate_limited', 'slow down', 429))).toMatch(/not carried out$/);
  });

  it.each([
    ['a timeout', new UpstreamTransportError('immobilize', 'timeout', 'timed out after 10000 ms')],
    ['a broken connection', new UpstreamTransportError('immobilize', 'network', 'network error: ECONNRESET')],
    ['a server error with a FAILURE answer', new UpstreamError('immobilize', 'service_unavailable', 'down', 503)],
    ['an answer of the wrong shape', new UpstreamProtocolError('immobilize', 'data: expected string', 200)],
  ])('%s: may have been carried out, never sent again', (_, err) => {
    expect(failureNote(err)).toMatch(/: it may have been carried out; check the vehicle before asking again \(never re-sent by the service\)$/);
  });
});
