import { parse } from '../../cli/args.js';
import { type Command, showHelp } from '../../cli/command.js';
import { EXIT, UsageError } from '../../cli/exit.js';
import { isoTime, table } from '../../cli/format.js';
import type { CliIO } from '../../cli/io.js';
import { redisKeys } from '../queue/keys.js';
import { TOOL_SETTINGS, withServiceRedis } from '../../redis/tool.js';
import { featureOf, type Geofence } from './geofence.js';
import { GeofenceRegistry, parseGeofencesFile, WATCH_EVERY_MS } from './registry.js';

/** `telematics-fleet geofences add|list|remove`: the fleet's geofences in the registry (Redis) the service reads. */

const line = (io: CliIO, s: string) => io.stdout.write(`${s}\n`);

const withRegistry = <T>(io: CliIO, use: (registry: GeofenceRegistry) => Promise<T>): Promise<T> =>
  withServiceRedis(io, (redis, cfg) => use(new GeofenceRegistry(redis, redisKeys(cfg.QUEUE_NAME).geofences)));

const shape = (g: Geofence): string => (g.geometry.type === 'Point' ? `circle ${g.radiusM} m` : g.geometry.type === 'Polygon' ? `polygon ${g.geometry.coordinates[0]!.length - 1} vertices` : `multipolygon of ${g.geometry.coordinates.length}`);

export const GEOFENCES_COMMAND: Command = {
  name: 'geofences',
  summary: 'the fleet’s geofences (depots, charging points, customers, restricted zones): add, list, remove',
  help: `Usage: telematics-fleet geofences add <file.geojson>
       telematics-fleet geofences list [--all] [--json]
       telematics-fleet geofences remove <id or name>

The geofences the workers judge each vehicle's fixes by (geofence_entered / geofence_exited events, and
speed limits within them), kept in Redis; every worker sees a change within ${WATCH_EVERY_MS / 1000} s. A change holds
for records from the time it is made: records of before are judged by the geofences that held then.

add     a GeoJSON FeatureCollection (or one Feature): each feature a Polygon, a MultiPolygon, or a Point
        with properties.radius_m (a circle), with properties.name, properties.kind (depot, charging,
        customer, restricted, other) and optionally properties.speed_limit (km/h). A name is one
        geofence: adding one under a name held replaces it; adding the same again changes nothing.
list    the geofences that hold now (--all: removed ones too, with their end); --json: as GeoJSON.
remove  ends the geofence of that id or name now.

${TOOL_SETTINGS}
  QUEUE_NAME (as for the service).
`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { all: { type: 'boolean' }, json: { type: 'boolean' } });
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
      const change = await withRegistry(io, (r) => r.add(inputs));
      for (const g of change.added) line(io, `added ${g.id} ${g.name} (${g.kind}, ${shape(g)})${change.ended.some((o) => o.name === g.name) ? ', replacing the one of that name' : ''}`);
      for (const g of change.unchanged) line(io, `unchanged ${g.id} ${g.name}`);
      return EXIT.ok;
    }
    if (action === 'list') {
      if (arg) throw new UsageError(`list takes no ${arg}`, this.name);
      const all = await withRegistry(io, (r) => r.all());
      const shown = values.all ? all : all.filter((g) => g.to === undefined);
      if (values.json) line(io, JSON.stringify({ type: 'FeatureCollection', features: shown.map(featureOf) }));
      else if (shown.length === 0) line(io, 'no geofence');
      else
        io.stdout.write(
          table(shown, [
            { header: 'ID', value: (g) => String(g.id), align: 'right' },
            { header: 'NAME', value: (g) => g.name },
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
      if (!arg) throw new UsageError('remove: give the geofence’s id or name', this.name);
      const removed = await withRegistry(io, (r) => r.remove(arg));
      if (!removed) {
        io.stderr.write(`no geofence ${JSON.stringify(arg)} holds now (telematics-fleet geofences list)\n`);
        return EXIT.failure;
      }
      line(io, `removed ${removed.id} ${removed.name}: records from ${isoTime(removed.to!)} on are judged without it`);
      return EXIT.ok;
    }
    throw new UsageError(action === undefined ? 'give add, list or remove' : `no action ${JSON.stringify(action)}: add, list or remove`, this.name);
  },
};
