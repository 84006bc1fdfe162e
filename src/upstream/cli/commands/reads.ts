/** vehicles, fuel-history, fuel-used */
import { onePositional, noPositionals, parse, parseTime } from '../../../cli/args.js';
import { type Command, showHelp } from '../../../cli/command.js';
import { EXIT } from '../../../cli/exit.js';
import { isoTime, printJson, table } from '../../../cli/format.js';
import { UPSTREAM_HELP, UPSTREAM_OPTIONS, clientFrom } from '../upstream.js';

const DAY_MS = 86_400_000;

const RANGE_OPTIONS = { from: { type: 'string' }, to: { type: 'string' } } as const;
const RANGE_HELP = `Range:
  --from <date>        ISO 8601, epoch seconds or ms, or "now"   [default: 24 hours before --to]
  --to <date>          same forms                                [default: now]
`;

function range(values: { from?: string | undefined; to?: string | undefined }, command: string): { from: number; to: number } {
  const now = Date.now();
  const to = values.to === undefined ? now : parseTime(values.to, '--to', command, now);
  const from = values.from === undefined ? to - DAY_MS : parseTime(values.from, '--from', command, now);
  return { from, to };
}

export const vehicles: Command = {
  name: 'vehicles',
  summary: 'list the vehicles of your account',
  help: `Usage: telematics vehicles [options]

Lists the vehicles the token gives access to (listvehicles).

${UPSTREAM_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, UPSTREAM_OPTIONS);
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const list = await clientFrom(values, io, this.name).listVehicles();
    if (values.json) printJson(io.stdout, list);
    else io.stdout.write(table(list, [{ header: 'VEHICLENO', value: (v) => v.vehicleno }]));
    return EXIT.ok;
  },
};

export const fuelHistory: Command = {
  name: 'fuel-history',
  summary: 'fuel readings of a vehicle over a time range',
  help: `Usage: telematics fuel-history <vehicleno> [--from <date>] [--to <date>] [--litres] [options]

Fuel readings of one vehicle (getfuelhistory), in percent, or in litres with --litres.
Times are shown in UTC; --json gives epoch milliseconds.

${RANGE_HELP}  --litres             values in litres instead of percent

${UPSTREAM_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { ...UPSTREAM_OPTIONS, ...RANGE_OPTIONS, litres: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    const vehicleno = onePositional(positionals, 'vehicleno', this.name);
    const readings = await clientFrom(values, io, this.name).getFuelHistory({
      vehicleno,
      ...range(values, this.name),
      inLitres: values.litres === true,
    });
    if (values.json) printJson(io.stdout, readings);
    else
      io.stdout.write(
        table(readings, [
          { header: 'TIME', value: (r) => isoTime(r.time) },
          { header: 'VALUE', value: (r) => r.value.toFixed(2), align: 'right' },
          { header: 'UNIT', value: (r) => r.unit },
        ]),
      );
    return EXIT.ok;
  },
};

export const fuelUsed: Command = {
  name: 'fuel-used',
  summary: 'fuel used by a vehicle over a time range',
  help: `Usage: telematics fuel-used <vehicleno> [--from <date>] [--to <date>] [options]

Fuel used by one vehicle (getfuelused): the litres used, the fuel level at the range's start and
end (percent and litres), the last ignition on and off, and the refuels within the range. A field
the service did not send, or had nothing for, is shown as "-" (null with --json).

${RANGE_HELP}
${UPSTREAM_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { ...UPSTREAM_OPTIONS, ...RANGE_OPTIONS });
    if (values.help) return showHelp(io, this.help);
    const vehicleno = onePositional(positionals, 'vehicleno', this.name);
    const used = await clientFrom(values, io, this.name).getFuelUsed({ vehicleno, ...range(values, this.name) });
    if (values.json) {
      printJson(io.stdout, used);
      return EXIT.ok;
    }
    const level = (n: number | null): string => (n === null ? '-' : n.toFixed(2));
    const time = (t: number | null): string => (t === null ? '-' : isoTime(t));
    io.stdout.write(
      table(
        [used],
        [
          { header: 'VEHICLENO', value: (u) => u.vehicleno },
          { header: 'FROM', value: (u) => isoTime(u.from) },
          { header: 'TO', value: (u) => isoTime(u.to) },
          { header: 'FUEL USED', value: (u) => u.value.toFixed(2), align: 'right' },
          { header: 'UNIT', value: (u) => u.unit ?? '?' },
          { header: 'START %', value: (u) => level(u.startPercent), align: 'right' },
          { header: 'END %', value: (u) => level(u.endPercent), align: 'right' },
          { header: 'START L', value: (u) => level(u.startLitres), align: 'right' },
          { header: 'END L', value: (u) => level(u.endLitres), align: 'right' },
          { header: 'LAST IGNITION ON', value: (u) => time(u.lastIgnitionOn) },
          { header: 'LAST IGNITION OFF', value: (u) => time(u.lastIgnitionOff) },
        ],
      ),
    );
    if (used.refuels === null) io.stdout.write('refuels: not told by the service\n');
    else if (used.refuels.length === 0) io.stdout.write('refuels: none\n');
    else {
      io.stdout.write(`refuels: ${used.refuels.length}\n`);
      io.stdout.write(
        table(used.refuels, [
          { header: 'TIME', value: (r) => time(r.time) },
          { header: 'LITRES', value: (r) => level(r.litres), align: 'right' },
        ]),
      );
    }
    return EXIT.ok;
  },
};
