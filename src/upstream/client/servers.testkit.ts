import type { Server } from 'node:http';
import { afterEach } from 'vitest';

/**
 * The HTTP servers a test file starts, closed after each test: their connections too, since a client
 * that stopped reading leaves its connection open and closing must not wait for it.
 */
export function serversClosedAfterEach(): Server[] {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(
      servers.splice(0).map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
  });
  return servers;
}

/** The rejection of `p`, which must reject with an Error. */
export async function failureOf(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => {
      if (!(e instanceof Error)) throw new Error(`rejected with a non-Error: ${String(e)}`);
      return e;
    },
  );
}
