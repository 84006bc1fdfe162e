import type { NewQuarantineEntry, Reservation } from './quarantine.js';

/** A quarantine in memory for the receiver's tests without Redis: every share has room, kept entries land in `into`. */
export function quarantineInMemory(into: NewQuarantineEntry[]): { reserve(sender: string, entries: readonly NewQuarantineEntry[]): Promise<Reservation> } {
  return {
    reserve: async (_sender, entries) => ({ ok: true, keep: async () => void into.push(...entries), release: async () => {} }),
  };
}
