/** `telematics-fleet`: which vehicles report and which went silent, on the one CLI framework (`src/cli`). */
import { parse, parseDurationFlag, parseNumber, noPositionals } from '../../cli/args.js';
import { type Command, showHelp } from '../../cli/command.js';
import { EXIT } from '../../cli/exit.js';
import { isoTime, table } from '../../cli/format.js';
import type { CliIO } from '../../cli/io.js';
import type { Program } from '../../cli/program.js';
import type { Config } from '../../config/index.js';
import { fleetStateFor } from '../service/components.js';
import { classifyToolError, TOOL_SETTINGS, withServiceRedis } from '../service/tool.js';
import { span } from '../plausibility/judge.js';
import type { FleetState, VehicleSeen } from './state.js';

const SETTINGS_HELP = `${TOOL_SETTINGS}
  QUEUE_NAME, QUEUE_PARTITIONS and SILENT_AFTER (as for the service).\n`;

/** The fleet state of the Redis the environment names; closed when `use` settles. */
const withFleet = <T>(io: CliIO, use: (fleet: FleetState, cfg: Config) => Promise<T>): Promise<T> =>
  withServiceRedis(io, (redis, cfg) => use(fleetStateFor(cfg, redis), cfg));

const line = (io: CliIO, s: string) => io.stdout.write(`${s}\n`);

const status: Command = {
  name: 'status',
  summary: 'vehicles known, reporting and silent per SILENT_AFTER threshold',
  help: `Usage: telematics-fleet status [--json]\n\nVehicles known (seen at least once), and for each SILENT_AFTER threshold those reporting within it and those silent longer.\n${SETTINGS_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const now = Date.now();
    const rows = await withFleet(io, async (fleet, cfg) => {
      const counts = await fleet.counts(now, cfg.SILENT_AFTER.map((t) => t.ms));
      return cfg.SILENT_AFTER.map((t, i) => ({ after: t.label, known: counts.known, reporting: counts.known - counts.silent[i]!, silent: counts.silent[i]! }));
    });
    if (values.json) line(io, JSON.stringify(rows));
    else
      io.stdout.write(
        table(rows, [
          { header: 'SILENT AFTER', value: (r) => r.after },
          { header: 'KNOWN', value: (r) => String(r.known), align: 'right' },
          { header: 'REPORTING', value: (r) => String(r.reporting), align: 'right' },
          { header: 'SILENT', value: (r) => String(r.silent), align: 'right' },
        ]),
      );
    return EXIT.ok;
  },
};

const silent: Command = {
  name: 'silent',
  summary: 'the vehicles not heard from, longest silent first, with last-seen time and position',
  help: `Usage: telematics-fleet silent [--after 1h] [--limit 100] [--json]

Vehicles whose newest plausible record is older than --after (default: the first SILENT_AFTER threshold),
longest silent first: plate, last seen, silent for, last position and its time.
${SETTINGS_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { after: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const limit = values.limit === undefined ? 100 : parseNumber(values.limit, '--limit', this.name, { integer: true, min: 1, max: 100_000 });
    const given = values.after === undefined ? undefined : parseDurationFlag(values.after, '--after', this.name);
    const now = Date.now();
    const vehicles = await withFleet(io, (fleet, cfg) => fleet.silent(now, given ?? cfg.SILENT_AFTER[0]!.ms, limit));
    if (values.json) line(io, JSON.stringify(vehicles));
    else if (vehicles.length === 0) line(io, 'no silent vehicle');
    else io.stdout.write(table<VehicleSeen>(vehicles, silentColumns(now)));
    return EXIT.ok;
  },
};

/** The silent list as a table, for the CLI. */
export function silentColumns(now: number) {
  return [
    { header: 'VEHICLE', value: (v: VehicleSeen) => v.vehicleno },
    { header: 'LAST SEEN', value: (v: VehicleSeen) => isoTime(v.lastSeen) },
    { header: 'SILENT FOR', value: (v: VehicleSeen) => span(now - v.lastSeen), align: 'right' as const },
    { header: 'LAST POSITION', value: (v: VehicleSeen) => (v.position ? `${v.position.lat},${v.position.lng}` : '-') },
    { header: 'POSITION AT', value: (v: VehicleSeen) => (v.position ? isoTime(v.position.time) : '-') },
  ];
}

export const FLEET: Program = {
  name: 'telematics-fleet',
  commands: [status, silent],
  classify: classifyToolError,
  help: (commands) => `Usage: telematics-fleet <command> [options]

Which vehicles report and which went silent, from each vehicle's last-seen time (its newest record that
passed the plausibility rules), kept by the service's workers.

Commands:
${commands}

${SETTINGS_HELP}
Exit status:
  0  done
  2  usage or configuration error (REDIS_URL unset, bad flags)
  3  Redis unreachable or refused a command
`,
};
