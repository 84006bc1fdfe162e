import { parse } from '../../cli/args.js';
import { type Command, showHelp } from '../../cli/command.js';
import { EXIT, UsageError } from '../../cli/exit.js';
import { isoTime, table } from '../../cli/format.js';
import type { CliIO } from '../../cli/io.js';
import { redisKeys } from '../queue/keys.js';
import { TOOL_SETTINGS, withServiceRedis } from '../../redis/tool.js';
import { featureOf, GEOFENCE_LIMITS, GeofenceLimitError, type Geofence } from './geofence.js';
import { GeofenceRegistry, parseGeofencesFile, WATCH_EVERY_MS, type GeofenceRef } from './registry.js';

/** `telematics-fleet geofences add|list|remove`: the fleet's geofences in the registry (Redis) the service reads. */

const line = (io: CliIO, s: string) => io.stdout.write(`${s}\n`);

const withRegistry = <T>(io: CliIO, use: (registry: GeofenceRegistry) => Promise<T>): Promise<T> =>
  withServiceRedis(io, (redis, cfg) => use(new GeofenceRegistry(redis, redisKeys(cfg.QUEUE_NAME).geofences)));

/**
 * Characters a terminal acts on or reorders text by: C0, DEL and C1 controls (escape sequences start
 * with ESC), Unicode's bidirectional controls, and the line and paragraph separators. New names cannot
 * hold them (`nameFault`); names stored by an older release may.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'g');
const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** A name as printed: as it is, or, when it holds such characters, quoted with them escaped as JSON writes them (`"Depot\u001b[2J"`). */
export function printable(name: string): string {
  return UNSAFE.test(name) ? JSON.stringify(name).replace(UNSAFE_ALL, escaped) : name;
}

/** JSON for a terminal: the same value, with the characters JSON.stringify leaves raw (DEL, C1, bidirectional controls) escaped too. */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(UNSAFE_ALL, escaped);
}

const shape = (g: Geofence): string => (g.geometry.type === 'Point' ? `circle ${g.radiusM} m` : g.geometry.type === 'Polygon' ? `polygon ${g.geometry.coordinates[0]!.length - 1} vertices` : `multipolygon of ${g.geometry.coordinates.length}`);

export const GEOFENCES_COMMAND: Command = {
  name: 'geofences',
  summary: 'the fleet’s geofences (depots, charging points, customers, restricted zones): add, list, remove',
  help: `Usage: telematics-fleet geofences add <file.geojson>
       telematics-fleet geofences list [--all] [--json]
       telematics-fleet geofences remove --id <id> | --name <name>

The geofences the workers judge each vehicle's fixes by (geofence_entered / geofence_exited events, and
speed limits within them), kept in Redis; every worker sees a change within ${WATCH_EVERY_MS / 1000} s. A change holds
for records from the time it is made: records of before are judged by the geofences that held then.

add     a GeoJSON FeatureCollection (or one Feature): each feature a Polygon, a MultiPolygon, or a Point
        with properties.radius_m (a circle), with properties.name, properties.kind (depot, charging,
        customer, restricted, other) and optionally properties.speed_limit (km/h). A name is one
        geofence: adding one under a name held replaces it; adding the same again changes nothing.
        A name has no control characters, no bidirectional controls, and no backslash at its end or
        before a comma, space or equals sign (it is an InfluxDB tag). At most ${GEOFENCE_LIMITS.vertices} vertices a
        geofence, ${GEOFENCE_LIMITS.perDocument} geofences a file, ${GEOFENCE_LIMITS.live} holding at once with ${GEOFENCE_LIMITS.liveVertices} vertices in
        all; no ring crossing itself nor an edge across ±180° (split such a shape there into a MultiPolygon).
list    the geofences that hold now (--all: removed ones too, with their end); --json: as GeoJSON.
        A name holding characters a terminal would act on (stored by an older release) is shown quoted, escaped.
remove  ends the geofence of that id (--id) or of that name (--name) now.

${TOOL_SETTINGS}
  QUEUE_NAME (as for the service).
`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { all: { type: 'boolean' }, json: { type: 'boolean' }, id: { type: 'string' }, name: { type: 'string' } });
    if (values.help) return showHelp(io, this.help);
    const [action, arg, ...rest] = positionals;
    if (rest.length > 0) throw new UsageError(`unexpected ${rest.join(' ')}`, this.name);
    if (action === 'add') {
      if (!arg) throw new UsageError('add: give the GeoJSON file', this.name);
      let inputs;
      try {
        inputs = parseGeofencesFile(arg);
      } catch (err) {
        throw new UsageError((err as Error).message, this.name);
      }
      let change;
      try {
        change = await withRegistry(io, (r) => r.add(inputs));
      } catch (err) {
        if (!(err instanceof GeofenceLimitError)) throw err;
        io.stderr.write(`${err.message}\n`);
        return EXIT.failure;
      }
      for (const g of change.added) line(io, `added ${g.id} ${printable(g.name)} (${g.kind}, ${shape(g)})${change.ended.some((o) => o.name === g.name) ? ', replacing the one of that name' : ''}`);
      for (const g of change.unchanged) line(io, `unchanged ${g.id} ${printable(g.name)}`);
      return EXIT.ok;
    }
    if (action === 'list') {
      if (arg) throw new UsageError(`list takes no ${arg}`, this.name);
      const all = await withRegistry(io, (r) => r.all());
      const shown = values.all ? all : all.filter((g) => g.to === undefined);
      if (values.json) line(io, printableJson({ type: 'FeatureCollection', features: shown.map(featureOf) }));
      else if (shown.length === 0) line(io, 'no geofence');
      else
        io.stdout.write(
          table(shown, [
            { header: 'ID', value: (g) => String(g.id), align: 'right' },
            { header: 'NAME', value: (g) => printable(g.name) },
            { header: 'KIND', value: (g) => g.kind },
            { header: 'SPEED LIMIT', value: (g) => (g.speedLimitKmh === undefined ? '-' : String(g.speedLimitKmh)), align: 'right' },
            { header: 'SHAPE', value: shape },
            { header: 'FROM', value: (g) => isoTime(g.from) },
            ...(values.all ? [{ header: 'TO', value: (g: Geofence) => (g.to === undefined ? '-' : isoTime(g.to)) }] : []),
          ]),
        );
      return EXIT.ok;
    }
    if (action === 'remove') {
      // An id and a name are told apart by their flag, never guessed: a geofence may be named "1".
      if (arg) throw new UsageError(`remove takes --id <id> or --name <name>, not ${JSON.stringify(arg)}`, this.name);
      if ((values.id === undefined) === (values.name === undefined)) throw new UsageError('remove: give --id <id> or --name <name> (one of them)', this.name);
      let ref: GeofenceRef;
      if (values.id !== undefined) {
        if (!/^[0-9]{1,15}$/.test(values.id)) throw new UsageError(`--id takes a geofence's id (digits), not ${JSON.stringify(values.id)}; by name: --name`, this.name);
        ref = { id: Number(values.id) };
      } else ref = { name: values.name! };
      const removed = await withRegistry(io, (r) => r.remove(ref));
      if (!removed) {
        io.stderr.write(`no geofence ${'id' in ref ? `with id ${ref.id}` : `named ${printableJson(ref.name)}`} holds now (telematics-fleet geofences list)\n`);
        return EXIT.failure;
      }
      line(io, `removed ${removed.id} ${printable(removed.name)}: records from ${isoTime(removed.to!)} on are judged without it`);
      return EXIT.ok;
    }
    throw new UsageError(action === undefined ? 'give add, list or remove' : `no action ${JSON.stringify(action)}: add, list or remove`, this.name);
  },
};
