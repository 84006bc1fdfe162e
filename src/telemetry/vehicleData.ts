/**
 * What a record is: the one declaration every other part derives from (as fleet-telemetry derives
 * everything from its vehicle_data.proto). The spec's sections 2.4–2.6, plus what it leaves "not
 * shown" and this service decided (units, bounds). Derived from it (src/telemetry/fields.ts and the
 * modules it names): the general validator, the scanner's tables, the plausibility defaults, the row
 * dictionary of job payloads, the JSON Schema and OpenAPI documents, docs/fields.md's and
 * docs/analysts.md's field tables (`npm run docs`), and the emulator's field set.
 *
 * To add a parameter: one entry in its type's `fields`, with the next free wire id, then `npm run docs`.
 * To add a record type: one entry in RECORD_TYPES, naming a flatten rule (src/ingest/flatten/).
 * Wire ids are frozen: a job written by one release is read by the next (docs/upgrading.md), so
 * an id is never reused, reordered or removed; a name keeps its id in every type that has it.
 */

/** A bound on a value, and what breaking it costs. */
export interface RangeSpec {
  /**
   * The rule's name: the `rule` label on /metrics, in answers and the quarantine, and the name
   * PLAUSIBLE_RANGES overrides it by. Unnamed bounds (`refuses: 'record'`) are the record's shape.
   */
  readonly rule?: string;
  readonly min: number;
  readonly max: number;
  /** Only whole numbers (the 0/1 flags). */
  readonly integer?: boolean;
  /**
   * `record`: a value outside is a malformed record, refused whole at validation (a latitude of 91);
   * `field`: a value outside cannot be true, and only the field is refused (plausibility).
   */
  readonly refuses: 'record' | 'field';
  /** Why the bound is where it is: an operator tells a rule to widen from a device to fix. */
  readonly why?: string;
}

export interface FieldSpec {
  readonly name: string;
  /** Its index in the row dictionary that job payloads refer to names by (frozen, see above). */
  readonly id: number;
  /** JSON type: always a number on the wire (a numeric string, or a boolean for a flag, is read as one). */
  readonly json: 'number' | 'integer';
  readonly unit?: string;
  /** Every record of its type carries it. */
  readonly required?: boolean;
  /** 0/1 shape: a boolean is read as 1/0. */
  readonly flag?: boolean;
  /**
   * One of the spec's alert flags, raised at 1 and cleared at 0: its bit in a vehicle's stored alarm
   * flags (src/ingest/events/detectors/alarms.ts). Frozen like wire ids: a stored state names its
   * raised alarms by these bits, so a bit is never reused, and a new alarm takes the next free one
   * wherever it sits in the list.
   */
  readonly alarmBit?: number;
  /**
   * A safety alarm (a fire risk): told the moment it is raised, never held back by ALARM_MIN_DURATION,
   * and paged (TelematicsBatteryCritical).
   */
  readonly safety?: boolean;
  readonly range?: RangeSpec;
  /** How InfluxDB stores it: every value a float, so a field never changes type between points. */
  readonly stored: 'float';
  readonly description: string;
}

/** Names beyond those listed that a numbered series' bound still covers (a 17th cell's voltage). */
export interface FamilySpec {
  readonly pattern: RegExp;
  readonly range: RangeSpec;
}

export interface RecordTypeSpec {
  /** The push record's `type`. */
  readonly name: string;
  /** Where its points go in InfluxDB. */
  readonly measurement: string;
  /** The letter its rows start with in job payload v3 (frozen, like wire ids). */
  readonly row: string;
  /**
   * Its stream's id in a vehicle's stored event state (src/ingest/events/streams.ts): each type is its
   * own ordered stream, and a stored state names its streams by these ids. Frozen like wire ids.
   */
  readonly streamId: number;
  readonly description: string;
  /** `required`: a record without `time` is malformed; `stamped`: it gets the time the receiver accepted it. */
  readonly time: 'required' | 'stamped';
  /** Parameters (besides time) a record must carry, counting the required ones. */
  readonly minParameters: number;
  /** The fields that are its position: the zero-position rule and the fleet's last position read them. */
  readonly position?: { readonly lat: string; readonly lng: string };
  /**
   * How a record becomes points (src/ingest/flatten/flatten.ts): `plain`, one point of what was sent;
   * `battery`, unused temperature sensors left out and a pack-health point beside it.
   */
  readonly flatten: 'plain' | 'battery';
  /** The parameters the spec names; others are dynamic: kept when numeric, and bounded by no rule but a family's. */
  readonly fields: readonly FieldSpec[];
  readonly families?: readonly FamilySpec[];
}

/** The tag every point of a record carries (`<measurement>,vehicleno=…`): no field may be named so. */
export const VEHICLE_TAG = 'vehicleno';

/** The time every record carries (or is stamped with): the point's timestamp, never a field. */
export const TIME = {
  name: 'time',
  id: 5,
  json: 'integer',
  unit: 'ms',
  stored: 'float',
  description: 'epoch milliseconds; becomes the point\'s timestamp',
} as const satisfies FieldSpec;

const field = (id: number, name: string, description: string, more: Partial<Omit<FieldSpec, 'id' | 'name' | 'description'>> = {}): FieldSpec => ({
  id,
  name,
  json: 'number',
  stored: 'float',
  description,
  ...more,
});

/** A numbered series, `<prefix>NN` (or `<prefix>N`), from wire id `firstId` on. */
const series = (firstId: number, prefix: string, count: number, pad: number, description: (n: number) => string, more: Partial<FieldSpec> = {}): FieldSpec[] =>
  Array.from({ length: count }, (_, i) => field(firstId + i, `${prefix}${String(i + 1).padStart(pad, '0')}`, description(i + 1), more));

// ---- the rules a value is judged by --------------------------------------------------------------

const flagRule = (why: string): RangeSpec => ({ rule: 'flag', min: 0, max: 1, integer: true, refuses: 'field', why });
const IGNITION = flagRule('spec shape: ignition is on (1) or off (0); a boolean is read as 1/0');
const CAN_FLAG = flagRule('spec shape: allow_charging, allow_discharging, alert and every alert_* flag are 0 or 1');
const PERCENT: RangeSpec = { rule: 'percent', min: 0, max: 100, refuses: 'field', why: 'spec shape: state of charge and of health are percentages' };
const CELL_VOLTAGE: RangeSpec = {
  rule: 'cell_voltage',
  min: 0,
  max: 5,
  refuses: 'field',
  why: 'physics: no lithium-ion (at most 4.45 V charged) or lead-acid cell holds 5 V; below 0 V is a sensor fault',
};
const CELL_TEMPERATURE: RangeSpec = {
  rule: 'cell_temperature',
  min: -55,
  max: 150,
  refuses: 'field',
  why: 'physics: beyond the range of the thermistors a BMS reads (−55 to 150 °C) a reading is a sensor fault',
};

const flag = (id: number, name: string, description: string): FieldSpec => field(id, name, description, { json: 'integer', unit: '0/1', flag: true, range: CAN_FLAG });
const alarm = (id: number, name: string, description: string, alarmBit: number, safety: boolean): FieldSpec => ({ ...flag(id, name, description), alarmBit, ...(safety ? { safety } : {}) });

export const GPS: RecordTypeSpec = {
  name: 'gps',
  measurement: 'gps',
  row: 'g',
  streamId: 0,
  description: 'a position fix: where the vehicle is, how high and fast, and whether its ignition is on',
  time: 'required',
  minParameters: 5,
  position: { lat: 'lat', lng: 'lng' },
  flatten: 'plain',
  fields: [
    field(0, 'lat', 'latitude, WGS 84', { unit: '°', required: true, range: { min: -90, max: 90, refuses: 'record' } }),
    field(1, 'lng', 'longitude, WGS 84', { unit: '°', required: true, range: { min: -180, max: 180, refuses: 'record' } }),
    field(2, 'alti', 'altitude above sea level', {
      unit: 'm',
      required: true,
      range: { rule: 'altitude', min: -500, max: 9_000, refuses: 'field', why: 'physics: roads run from the Dead Sea shore (−430 m) to about 5,800 m; GPS altitude errs by tens of metres' },
    }),
    field(3, 'speed', 'ground speed', {
      unit: 'km/h',
      required: true,
      range: { rule: 'speed', min: 0, max: 300, refuses: 'field', why: 'physics: no fleet road vehicle reaches 300 km/h; GPS glitches report thousands' },
    }),
    field(4, 'ignstatus', 'ignition: 1 on, 0 off', { json: 'integer', unit: '0/1', required: true, flag: true, range: IGNITION }),
  ],
};

const ALERTS: ReadonlyArray<[string, string, 'safety'?]> = [
  ['alert_board_over_temp', 'the BMS board is too hot'],
  ['alert_board_under_temp', 'the BMS board is too cold'],
  ['alert_cell_conn_broken', 'a cell connection is broken'],
  ['alert_cell_diff_fault_battery_is_disbalanced', 'cell voltages differ too much: the pack is imbalanced'],
  ['alert_cell_over_voltage_charged', 'a cell is over-charged'],
  ['alert_cell_under_voltage_discharged', 'a cell is over-discharged'],
  ['alert_over_current_charging', 'charging current too high'],
  ['alert_over_current_cont_charging', 'continuous charging current too high'],
  ['alert_over_current_discharging', 'discharging current too high'],
  ['alert_over_temp', 'the pack is too hot'],
  ['alert_pack_ov_fault_total_pack_voltage_is_higher_than_set_threshold', 'the pack voltage is above its threshold'],
  ['alert_prl_fault_fault_in_battery_connected_in_parallel', 'a fault in a battery connected in parallel'],
  ['alert_short_circuit', 'a short circuit', 'safety'],
  ['alert_thermal_runaway', 'thermal runaway', 'safety'],
  ['alert_under_temp', 'the pack is too cold'],
];

export const CAN: RecordTypeSpec = {
  name: 'can',
  measurement: 'can',
  row: 'c',
  streamId: 1,
  description: 'the battery management system\'s reading: only the parameters the vehicle sent',
  time: 'stamped',
  minParameters: 1,
  flatten: 'battery',
  fields: [
    flag(6, 'allow_charging', 'the BMS allows charging: 1 yes, 0 no'),
    flag(7, 'allow_discharging', 'the BMS allows discharging: 1 yes, 0 no'),
    field(8, 'battery_voltage', 'pack voltage', {
      unit: 'V',
      range: { rule: 'battery_voltage', min: 0, max: 1000, refuses: 'field', why: 'physics: the highest-voltage vehicle packs (800 V class) stay below 1000 V; set a fleet\'s own bound' },
    }),
    field(9, 'current', 'pack current, negative while discharging', { unit: 'A' }),
    field(10, 'power', 'pack power', { unit: 'W' }),
    field(11, 'soc', 'state of charge', { unit: '%', range: PERCENT }),
    field(12, 'soh', 'state of health', { unit: '%', range: PERCENT }),
    field(13, 'battery_capacity', 'rated capacity', { unit: 'Ah' }),
    field(14, 'charge_cycle', 'charge cycles completed', { unit: 'count' }),
    field(15, 'chemistry', 'cell chemistry, a code the spec does not list'),
    field(16, 'load_status', 'load: 0 idle, 1 discharging (driving), 2 charging'),
    field(17, 'bms_id', 'the BMS\'s id'),
    ...series(18, 'bat_id_', 16, 1, (n) => `id of battery ${n}`),
    field(34, 'no_of_cells', 'cells in the pack: cell voltages numbered beyond it are not counted in pack health', { unit: 'count' }),
    field(35, 'no_of_temperature_sensors', 'temperature sensors fitted: readings numbered beyond it are unused sensors, not stored', { unit: 'count' }),
    ...series(36, 'cell_voltage_', 16, 2, (n) => `voltage of cell ${n}`, { unit: 'V', range: CELL_VOLTAGE }),
    ...series(52, 'cell_temperature_', 6, 2, (n) => `temperature sensor ${n}; a sentinel value (CAN_TEMP_SENTINELS) is an unused sensor, not stored`, {
      unit: '°C',
      range: CELL_TEMPERATURE,
    }),
    flag(58, 'alert', 'any alert raised: 1 yes, 0 no'),
    ...ALERTS.map(([name, what, safety], i) => alarm(59 + i, name, `alarm: ${what}${safety ? ' (a safety alarm: told at once)' : ''}`, i, safety === 'safety')),
  ],
  families: [
    { pattern: /^cell_voltage_\d{2}$/, range: CELL_VOLTAGE },
    { pattern: /^cell_temperature_\d{2}$/, range: CELL_TEMPERATURE },
  ],
};

/** Every record type, in the order they are documented. */
export const RECORD_TYPES: readonly RecordTypeSpec[] = [GPS, CAN];
