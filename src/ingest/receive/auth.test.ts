import { describe, expect, it } from 'vitest';
import { parseSenders } from '../../config/senders.js';
import { SenderAuth } from './auth.js';

describe('SenderAuth', () => {
  it('names the sender of each token, old and new during a rotation, and keeps only tokens it found valid', () => {
    const { senders, problems } = parseSenders(['fleet-a:token-a-0123456789abcdef', 'fleet-a:token-a2-0123456789abcdef', 'fleet-b:token-b-0123456789abcdef'], []);
    expect(problems).toEqual([]);
    const auth = new SenderAuth(senders);
    for (let round = 0; round < 3; round++) {
      expect(auth.byToken('token-a-0123456789abcdef')?.name).toBe('fleet-a');
      expect(auth.byToken('token-a2-0123456789abcdef')?.name).toBe('fleet-a');
      expect(auth.byToken('token-b-0123456789abcdef')?.name).toBe('fleet-b');
      expect(auth.byToken('token-b-0123456789abcdeF')).toBeUndefined();
      expect(auth.byToken('')).toBeUndefined();
    }
    // A flood of wrong tokens leaves nothing behind: what is kept is bounded by the configured tokens.
    for (let i = 0; i < 10_000; i++) expect(auth.byToken(`guess-${i}`)).toBeUndefined();
    expect((auth as unknown as { known: Map<string, unknown> }).known.size).toBe(3);
  });
});
