import calculateSlot from 'cluster-key-slot';

/** Redis Cluster's hash slots. */
export const CLUSTER_SLOTS = 16_384;

/**
 * Redis Cluster's slot of a key, as redis-server computes it (cluster.c keyHashSlot): the hash tag,
 * the part between the first `{` and the next `}`, when it is not empty; else the whole key. The
 * CRC16 is ioredis's own (`cluster-key-slot`), given the part Redis hashes.
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  // No tag: the package too hashes the whole key when no `}` follows a `{`.
  if (close < 0) return calculateSlot(key);
  if (close > open + 1) return calculateSlot(key.slice(open + 1, close));
  // An empty first tag (`x{}{y}`): Redis hashes the whole key, where the package would go on to a
  // later tag. CRC16 (XMODEM) is linear over XOR, so hash the key with every `{` masked to 0x01, and
  // the mask alone (0x7a where a `{` was): neither holds a `{`, and their XOR is the whole key's.
  const bytes = Buffer.from(key, 'utf8');
  const mask = Buffer.alloc(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x7b) {
      bytes[i] = 0x01;
      mask[i] = 0x7b ^ 0x01;
    }
  }
  return calculateSlot(bytes) ^ calculateSlot(mask);
}
