/**
 * Records as a fleet delivers them: shuffled within blocks of 20 (20 s of record time at a fix a second,
 * inside the 30-s reorder window), one in 20 sent twice; deterministic, so a failure replays.
 */
export function disordered<T>(rs: readonly T[]): T[] {
  let seed = rs.length;
  const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const out: T[] = [];
  for (let i = 0; i < rs.length; i += 20) {
    const block = rs.slice(i, i + 20);
    for (let j = block.length - 1; j > 0; j--) {
      const k = Math.floor(rnd() * (j + 1));
      [block[j], block[k]] = [block[k]!, block[j]!];
    }
    for (const r of block) {
      out.push(r);
      if (rnd() < 0.05) out.push(r);
    }
  }
  return out;
}
