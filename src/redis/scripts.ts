import { readFileSync } from 'node:fs';
import type { RedisClient } from './connect.js';

/**
 * The Lua scripts, each a file of its own in `scripts/` (as BullMQ keeps its commands), its KEYS and
 * ARGV documented in its header: `<name>-<number of keys>.lua`, or `<name>.lua` for a script whose
 * caller says how many keys it passes (the count varies). The build copies them beside the compiled
 * modules (`package.json`'s build).
 */
export function defineScript(redis: RedisClient, command: string, name: string): void {
  const lua = readFileSync(new URL(`./scripts/${name}.lua`, import.meta.url), 'utf8');
  const keys = /-(\d+)$/.exec(name);
  redis.defineCommand(command, keys === null ? { lua } : { lua, numberOfKeys: Number(keys[1]) });
}
