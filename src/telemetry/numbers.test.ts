import { describe, expect, it } from 'vitest';
import { cases } from '../../test/harness/short.js';
import { numberText } from './numbers.js';

describe('numberText', () => {
  const reads = (x: number) => {
    const text = numberText(x);
    expect(Number(text), text).toBe(x === 0 ? 0 : x);
    expect(JSON.parse(text), text).toBe(x === 0 ? 0 : x);
  };

  it('gives back every double it is handed: decimals devices send, epoch times, and anything else', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < cases(50_000); i++) {
      const places = i % 9;
      const scale = 10 ** places;
      reads(Math.round((rnd() - 0.5) * 400 * scale) / scale); // lat/lng, speed, soc, current at 0..8 places
      reads(1_000_000_000_000 + Math.floor(rnd() * 8_000_000_000_000)); // epoch ms
      reads((rnd() - 0.5) * 10 ** (i % 40 - 20)); // full-precision doubles, tiny to huge
    }
    for (const x of [0, -0, 1, -1, 0.1, 0.30000000000000004, 1e-7, -1e-7, 5e-324, 1e21, -1e21, 2 ** 53, 2 ** 53 + 2, 999_999_999, 1e9, 12.9715987, -77.5, 179.9999999]) reads(x);
  });

  it('writes the shortest form for the values devices send', () => {
    expect(['12.9715987', '-77.5', '45', '0.0000001', '1764028800123', '-0.25'].map((t) => numberText(Number(t)))).toEqual(['12.9715987', '-77.5', '45', '0.0000001', '1764028800123', '-0.25']);
  });
});
