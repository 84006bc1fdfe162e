import { parse, parseNumber } from '../../cli/args.js';
import { type Command, showHelp } from '../../cli/command.js';
import { EXIT, UsageError } from '../../cli/exit.js';
import { isoTime, table } from '../../cli/format.js';
import type { CliIO } from '../../cli/io.js';
import { redisKeys } from '../queue/keys.js';
import { TOOL_SETTINGS, withServiceRedis } from '../../redis/tool.js';
import { SpeedLimitRegistry, WATCH_EVERY_MS } from './registry.js';

const line = (io: CliIO, s: string) => io.stdout.write(`${s}\n`);
const withRegistry = <T>(io: CliIO, use: (registry: SpeedLimitRegistry) => Promise<T>): Promise<T> =>
  withServiceRedis(io, (redis, cfg) => use(new SpeedLimitRegistry(redis, redisKeys(cfg.QUEUE_NAME).speedLimits)));

/** `telematics-fleet speed-limit set|clear|list`: per-vehicle speed limits, in the registry the workers read. */
export const SPEED_LIMIT_COMMAND: Command = {
  name: 'speed-limit',
  summary: 'per-vehicle speed limits (over SPEED_LIMIT): set, clear, list',
  help: `Usage: telematics-fleet speed-limit set <plate> <km/h>
       telematics-fleet speed-limit clear <plate>
       telematics-fleet speed-limit list [--json]

A vehicle's own speed limit, in place of SPEED_LIMIT for it (overspeed_started / overspeed_ended); inside a
geofence with a speed_limit, the lowest of the two applies (SPEED_LIMIT_PREFER_LOWEST=on) or the
geofence's (off). A change holds for records from the time it is made; every worker sees it within ${WATCH_EVERY_MS / 1000} s.

${TOOL_SETTINGS}
  QUEUE_NAME (as for the service).
`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    const [action, plate, kmhText, ...rest] = positionals;
    if (rest.length > 0) throw new UsageError(`unexpected ${rest.join(' ')}`, this.name);
    if (action === 'set' || action === 'clear') {
      if (!plate) throw new UsageError(`${action}: give the vehicle's plate`, this.name);
      if (action === 'set' && kmhText === undefined) throw new UsageError('set: give the limit in km/h', this.name);
      if (action === 'clear' && kmhText !== undefined) throw new UsageError(`clear takes no ${kmhText}`, this.name);
      const kmh = action === 'set' ? parseNumber(kmhText!, '<km/h>', this.name, { min: 1, max: 1_000 }) : 0;
      const now = Date.now();
      await withRegistry(io, (r) => r.set(plate, kmh, now));
      line(io, action === 'set' ? `${plate}: ${kmh} km/h from ${isoTime(now)}` : `${plate}: SPEED_LIMIT again from ${isoTime(now)}`);
      return EXIT.ok;
    }
    if (action === 'list') {
      if (plate) throw new UsageError(`list takes no ${plate}`, this.name);
      const rows = (await withRegistry(io, (r) => r.read())).current();
      if (values.json) line(io, JSON.stringify(rows));
      else if (rows.length === 0) line(io, 'no vehicle has a speed limit of its own');
      else
        io.stdout.write(
          table(rows, [
            { header: 'VEHICLE', value: (r) => r.vehicleno },
            { header: 'KM/H', value: (r) => String(r.kmh), align: 'right' },
            { header: 'FROM', value: (r) => isoTime(r.from) },
          ]),
        );
      return EXIT.ok;
    }
    throw new UsageError(action === undefined ? 'give set, clear or list' : `no action ${JSON.stringify(action)}: set, clear or list`, this.name);
  },
};
