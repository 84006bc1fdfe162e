/**
 * The measurements the service derives beside the records' own (vehicleData.ts declares those): each
 * one's name, tags and fields with their units, declared once. The writers take their measurement names
 * from here, `npm run docs` renders docs/analysts.md's table of them, and a test (test/derived.test.ts)
 * fails when a writer writes a tag or field not declared here.
 */

export interface DerivedField {
  readonly name: string;
  /** As vehicleData.ts writes units: `ms`, `s`, `m`, `km/h`, `%`, `Wh`, `Ah`, `°`, `0/1`, `count`; none for a code. */
  readonly unit?: string;
  readonly description: string;
}

export interface DerivedMeasurement {
  readonly name: string;
  /** Who writes it. */
  readonly writer: string;
  readonly description: string;
  /** The point's time. */
  readonly time: string;
  readonly tags: readonly DerivedField[];
  readonly fields: readonly DerivedField[];
  /**
   * For a measurement corrections rewrite (src/ingest/events/corrections/): the InfluxQL condition that
   * keeps its rows that stand, leaving out the retracted ones. Every row of every release passes it.
   */
  readonly standing?: string;
}

const vehicleno: DerivedField = { name: 'vehicleno', description: 'the vehicle' };
/** A trip's, stop's or charging session's length (each says it alike). */
const durationS: DerivedField = { name: 'duration_s', unit: 's', description: 'end − start; -1 retracted' };
const soc = (which: string): DerivedField => ({ name: `soc_${which}`, unit: '%', description: `state of charge at the ${which}` });
/** What a correction writes on a row (src/ingest/events/corrections/, docs/events.md "Corrections"). */
const corrections: readonly DerivedField[] = [
  { name: 'late', unit: '0/1', description: '1: first told by a correction, after records that came late (past EVENTS_WINDOW)' },
  { name: 'revision', unit: 'count', description: 'corrections of the row since it was first told (absent: none); the row holds the latest' },
  { name: 'retracted', unit: '0/1', description: '1: the records no longer support it; kept (InfluxDB 3 deletes no point), its `value` or `duration_s` set to -1 so every query keeping the standing rows leaves it out' },
];

export const VEHICLE_EVENTS: DerivedMeasurement = {
  name: 'vehicle_events',
  writer: 'src/ingest/events (detectors), src/ingest/fleet (silent, back), src/ingest/sync (fuel_drop, fuel_refuel)',
  description: 'one point a transition: an alarm raised or cleared, ignition on or off, charging started or stopped, idling, overspeed, moved while off, a battery low, swapped or drained, a BMS’s health figure disagreeing or stuck, a pack heating fast, a sensor apart, a high C-rate or a cell drifting, fuel dropped or refuelled, a vehicle silent or back',
  time: 'the record time of the transition',
  tags: [
    vehicleno,
    {
      name: 'event',
      description:
        '`alert_<flag>_raised` / `_cleared`, `ignition_on` / `_off`, `charging_started` / `_stopped`, `idle_started` / `_ended`, `overspeed_started` / `_ended`, `moved_while_off`, `moved_while_immobilised`, `geofence_entered` / `_exited`, `soc_low` / `soc_recovered`, `battery_swapped`, `soc_drain_while_parked`, `bms_soh_disagrees`, `bms_soh_stuck`, `pack_heating_fast`, `pack_sensor_apart`, `pack_c_rate_high`, `cell_drifting`, `fuel_drop` / `fuel_refuel`, `silent`, `back`',
    },
    { name: 'geofence', description: 'geofence events: the geofence’s name' },
    { name: 'geofence_kind', description: 'geofence events: its kind (depot, charging, customer, restricted, other)' },
    { name: 'unit', description: '`fuel_drop` / `fuel_refuel`: the unit of the fuel history judged (litres, percent), as in measurement fuel' },
    { name: 'command_type', description: '`moved_while_immobilised`: the immobilise type the vehicle was under (docs/commands.md)' },
    { name: 'pack', description: '`bms_soh_disagrees`, `bms_soh_stuck`, `pack_heating_fast`, `pack_sensor_apart`, `pack_c_rate_high`, `cell_drifting`: the pack’s id (`bms_id`, else `bat_id_1`), where the vehicle reported one' },
  ],
  fields: [
    { name: 'value', unit: '0/1', description: '1 raised, on, started, silent; 0 cleared, off, stopped, back; -1 retracted' },
    { name: 'soc', unit: '%', description: 'alarms, charging, `soc_low` / `soc_recovered`: the state of charge then; `cell_drifting`: at the end-of-charge sample' },
    { name: 'battery_voltage', unit: 'V', description: 'alarms, charging, soc low: the record’s pack voltage' },
    { name: 'current', unit: 'A', description: 'alarms and charging: the record’s pack current' },
    { name: 'since', unit: 'ms', description: 'an alarm’s raise told once it held ALARM_MIN_DURATION: when it was raised; `bms_soh_stuck`: the start of the first session estimated with that soh' },
    { name: 'lat', unit: '°', description: 'ignition: the fix’s latitude; idling, `overspeed_started`: where it began; `moved_while_off`, `moved_while_immobilised`: where it was seen' },
    { name: 'lng', unit: '°', description: 'the same, longitude' },
    { name: 'speed', unit: 'km/h', description: 'ignition: the fix’s speed; `overspeed_started`: the first fix over the limit; `moved_while_immobilised`: the fix’s' },
    { name: 'ignition', unit: '0/1', description: '`moved_while_immobilised`: the fix’s ignition' },
    { name: 'duration_s', unit: 's', description: '`charging_stopped`, `idle_ended`, `overspeed_ended`: how long it lasted; `pack_c_rate_high`: how long it had lasted when told' },
    { name: 'limit', unit: 'km/h', description: 'overspeed: the limit broken' },
    { name: 'max_speed', unit: 'km/h', description: '`overspeed_ended`: the highest speed over the limit' },
    { name: 'distance_m', unit: 'm', description: '`overspeed_ended`: driven over the limit; `moved_while_off`: from where it was parked' },
    { name: 'parked_lat', unit: '°', description: '`moved_while_off`: where it was parked' },
    { name: 'parked_lng', unit: '°', description: '`moved_while_off`: where it was parked' },
    { name: 'geofence_id', description: 'geofence events: the geofence’s id (`telematics-fleet geofences list`)' },
    { name: 'bms_id_old', description: '`battery_swapped`: the BMS id before (when it changed)' },
    { name: 'bms_id_new', description: '`battery_swapped`: the BMS id after' },
    { name: 'bat_id_old', description: '`battery_swapped`: the first battery’s id before (when it changed)' },
    { name: 'bat_id_new', description: '`battery_swapped`: the first battery’s id after' },
    { name: 'soc_from', unit: '%', description: '`soc_drain_while_parked`: the highest soc within SOC_DRAIN_WINDOW before' },
    { name: 'soc_to', unit: '%', description: '`soc_drain_while_parked`: the soc that reached the fall' },
    { name: 'over_s', unit: 's', description: '`soc_drain_while_parked`: since the soc last read `soc_from`; fuel events: from the level before to the level after; `pack_heating_fast`: since the low; `pack_sensor_apart`: how long it had been apart' },
    { name: 'fuel_before', unit: 'l or %', description: '`fuel_drop` / `fuel_refuel`: the level before (the highest, lowest, within FUEL_CHANGE_WINDOW)' },
    { name: 'fuel_after', unit: 'l or %', description: '`fuel_drop` / `fuel_refuel`: the level it fell to, rose to' },
    { name: 'fuel_amount', unit: 'l or %', description: '`fuel_drop` / `fuel_refuel`: how much, in `unit`' },
    { name: 'crossed', unit: '0/1', description: 'geofence events: 1 when a step between two fixes passed through it (neither fix inside)' },
    { name: 'energy_wh', unit: 'Wh', description: '`charging_stopped`: the energy charged' },
    { name: 'soh', unit: '%', description: '`bms_soh_disagrees`, `bms_soh_stuck`: the BMS’s state of health as the session ended' },
    { name: 'bms_capacity_ah', unit: 'Ah', description: '`bms_soh_disagrees`, `bms_soh_stuck`: what the BMS says the pack holds, battery_capacity × soh / 100' },
    { name: 'capacity_ah_estimate', unit: 'Ah', description: '`bms_soh_disagrees`, `bms_soh_stuck`: the session’s capacity estimate (as on its `charging` row)' },
    { name: 'capacity_uncertainty_pct', unit: '%', description: '`bms_soh_disagrees`, `bms_soh_stuck`: the bound of the estimate’s relative error' },
    { name: 'capacity_ah_before', unit: 'Ah', description: '`bms_soh_stuck`: the highest lower bound of the estimates with the same soh, which this one’s upper bound fell below' },
    { name: 'sessions', unit: 'count', description: '`bms_soh_disagrees`: estimates in a row the BMS’s figure lay outside; `bms_soh_stuck`: estimates with the same soh; `cell_drifting`: end-of-charge samples the cell grew over' },
    { name: 'after_s', unit: 's', description: '`silent` / `back`: the SILENT_AFTER threshold crossed' },
    { name: 'last_seen', unit: 'ms', description: '`silent` / `back`: the last record’s time, or the one that ended the silence' },
    { name: 'rate_c_per_min', unit: '°C/min', description: '`pack_heating_fast`: the hottest sensor’s rise over the time since its low' },
    { name: 'temperature', unit: '°C', description: '`pack_heating_fast`, `pack_sensor_apart`: the hottest real sensor’s reading' },
    { name: 'from_temperature', unit: '°C', description: '`pack_heating_fast`: the lowest the hottest sensor read within PACK_HEAT_WINDOW' },
    { name: 'sensor', unit: 'number', description: '`pack_heating_fast`: the hottest sensor; `pack_sensor_apart`: the sensor apart' },
    { name: 'window_s', unit: 's', description: '`pack_heating_fast`: PACK_HEAT_WINDOW' },
    { name: 'deviation_c', unit: '°C', description: '`pack_sensor_apart`: the sensor’s reading less the median of the pack’s real sensors' },
    { name: 'limit_c', unit: '°C or C', description: '`pack_sensor_apart`: PACK_SENSOR_APART (°C); `pack_c_rate_high`: PACK_C_RATE_HIGH (C)' },
    { name: 'c_rate_max', unit: 'C', description: '`pack_c_rate_high`: the highest \\|current\\| / capacity of the spell when told' },
    { name: 'c_rate_mean', unit: 'C', description: '`pack_c_rate_high`: the mean of its records' },
    { name: 'cell', unit: 'number', description: '`cell_drifting`: the drifting cell' },
    { name: 'deviation_v', unit: 'V', description: '`cell_drifting`: its voltage less the median of the pack’s real cells at the end of the charge told at' },
    { name: 'from_deviation_v', unit: 'V', description: '`cell_drifting`: the same at the first end-of-charge sample of its growth' },
    { name: 'growth_v', unit: 'V', description: '`cell_drifting`: how much further from the median it got since' },
    { name: 'rest_deviation_v', unit: 'V', description: '`cell_drifting`: its voltage less the median at the pack’s last rest, where it was the furthest there too' },
    ...corrections,
  ],
  standing: '"value" >= 0',
};

export const TRIPS: DerivedMeasurement = {
  name: 'trips',
  writer: 'src/ingest/events/detectors/trips.ts',
  description: 'one point a trip, ignition on to off (or to the last fix before a gap), written once it has ended',
  time: 'the trip’s start',
  tags: [
    vehicleno,
    { name: 'start_geofence', description: 'the geofences its first confirmed fix lay in (names, `, ` between), when any' },
    { name: 'end_geofence', description: 'the geofences its last confirmed fix lay in, when any' },
  ],
  fields: [
    { name: 'end', unit: 'ms', description: 'the trip’s end' },
    durationS,
    { name: 'distance_m', unit: 'm', description: 'the steps between its confirmed fixes' },
    { name: 'max_speed_kmh', unit: 'km/h', description: 'the highest speed of its confirmed fixes' },
    { name: 'start_lat', unit: '°', description: 'its first confirmed fix' },
    { name: 'start_lng', unit: '°', description: 'its first confirmed fix' },
    { name: 'end_lat', unit: '°', description: 'its last confirmed fix' },
    { name: 'end_lng', unit: '°', description: 'its last confirmed fix' },
    soc('start'),
    soc('end'),
    { name: 'gap_ended', unit: '0/1', description: '1: ended by a gap in the GPS stream (EVENTS_MAX_GAP), not by ignition off' },
    { name: 'idle_s', unit: 's', description: 'idling within it (IDLE_MIN_DURATION at least each)' },
    { name: 'overspeed_s', unit: 's', description: 'over SPEED_LIMIT within it (OVERSPEED_MIN_DURATION at least each)' },
    ...corrections,
  ],
  standing: '"duration_s" >= 0',
};

export const STOPS: DerivedMeasurement = {
  name: 'stops',
  writer: 'src/ingest/events/detectors/stops.ts',
  description: 'one point a stop (standing still STOP_MIN_DURATION at least), written once the vehicle moves again',
  time: 'the stop’s first confirmed fix standing still',
  tags: [vehicleno, { name: 'geofence', description: 'the geofences it stood in, when any' }],
  fields: [
    { name: 'end', unit: 'ms', description: 'the first confirmed fix moving again, or the last record before a gap' },
    durationS,
    { name: 'lat', unit: '°', description: 'where it stood' },
    { name: 'lng', unit: '°', description: 'where it stood' },
    { name: 'ignition_on_s', unit: 's', description: 'of it with the ignition on' },
    ...corrections,
  ],
  standing: '"duration_s" >= 0',
};

export const CHARGING_SESSIONS: DerivedMeasurement = {
  name: 'charging',
  writer: 'src/ingest/events/detectors/charging.ts',
  description: 'one point a charging session, written once it has stopped',
  time: 'the session’s first charging record',
  tags: [
    vehicleno,
    { name: 'geofence', description: 'the geofences the vehicle stood in as it started (where it came to stand, by the GPS track), when any' },
    { name: 'pack', description: 'the pack charged (`bms_id`, else `bat_id_1`), when the records told it and it stayed one pack' },
  ],
  fields: [
    { name: 'end', unit: 'ms', description: 'the first record not charging, or the last charging record before a gap' },
    durationS,
    soc('start'),
    soc('end'),
    { name: 'energy_wh', unit: 'Wh', description: '∫ voltage × |current| dt between charging records carrying both' },
    { name: 'charge_ah', unit: 'Ah', description: '∫ |current| dt between charging records carrying a current (trapezoids, never across a gap)' },
    { name: 'soc_moved', unit: 'percentage points', description: 'the soc’s rise from the first to the last of those records' },
    { name: 'capacity_ah_estimate', unit: 'Ah', description: 'charge_ah ÷ (soc_moved / 100), when soc_moved is at least CAPACITY_MIN_SOC_MOVED' },
    { name: 'capacity_uncertainty_pct', unit: '%', description: 'the bound of the estimate’s relative error (the soc a whole percent: ±1 point each end; the current monotonic between records)' },
    { name: 'bms_capacity_ah', unit: 'Ah', description: 'what the BMS says the pack holds: battery_capacity × soh / 100 as the session ended' },
    ...corrections,
  ],
  standing: '"duration_s" >= 0',
};

/** Time a pack spent in a band (pack_life). */
const seconds = (name: string, description: string): DerivedField => ({ name, unit: 's', description });

export const PACK_LIFE: DerivedMeasurement = {
  name: 'pack_life',
  writer: 'src/ingest/events/detectors/packLife.ts',
  description:
    'what a pack did in a vehicle: one point per pack, per vehicle, per UTC day it was in it, and one ending where it left the vehicle; a pack’s history across vehicles is `WHERE "pack" = \'<id>\'`',
  time: 'the row’s start: the pack’s first record in the vehicle, the UTC midnight it went on from, or its first record after a gap that crossed midnight',
  tags: [vehicleno, { name: 'pack', description: 'the pack’s id: its `bms_id`, else its `bat_id_1` (decimal)' }],
  fields: [
    { name: 'end', unit: 'ms', description: 'its last record in the vehicle, or the UTC midnight it went on past' },
    durationS,
    { name: 'stint_start', unit: 'ms', description: 'the pack’s first record in the vehicle this stint (the rows of one stint share it)' },
    { name: 'left', unit: '0/1', description: '1: the pack left the vehicle at `end` (the next record named another pack)' },
    { name: 'ah_in', unit: 'Ah', description: '∫ |current| dt while charging (the charging sign, CHARGING_CURRENT_SIGN), trapezoids between readings, never across a gap' },
    { name: 'ah_out', unit: 'Ah', description: 'the same while discharging' },
    { name: 'kwh_in', unit: 'kWh', description: '∫ |voltage × current| dt while charging, between readings carrying both' },
    { name: 'kwh_out', unit: 'kWh', description: 'the same while discharging' },
    { name: 'cycle_start', unit: 'count', description: 'the BMS’s `charge_cycle` at its first reading in the row' },
    { name: 'cycle_end', unit: 'count', description: 'at its last' },
    { name: 'capacity_ah', unit: 'Ah', description: 'the pack’s rated `battery_capacity`, as last read' },
    seconds('temp_cold_s', 'at a temperature (the hottest sensor) under 0 °C'),
    seconds('temp_cool_s', 'at 0 °C to under 15 °C'),
    seconds('temp_mild_s', 'at 15 °C to under 35 °C'),
    seconds('temp_warm_s', 'at 35 °C to under 45 °C'),
    seconds('temp_hot_s', 'at 45 °C and over'),
    { name: 'temperature_max', unit: '°C', description: 'the hottest sensor read' },
    seconds('c_rate_low_s', 'at a C-rate (|current| / `battery_capacity`) under 0.5'),
    seconds('c_rate_medium_s', 'at 0.5 C to under 1 C'),
    seconds('c_rate_high_s', 'at 1 C to under 2 C'),
    seconds('c_rate_extreme_s', 'at 2 C and over'),
    { name: 'c_rate_max', unit: 'C', description: 'the highest C-rate read' },
    seconds('soc_high_s', 'at a soc of 90 % and over'),
    seconds('soc_low_s', 'at a soc of 20 % and under'),
    ...corrections,
  ],
  standing: '"duration_s" >= 0',
};

export const FLEET_STATUS: DerivedMeasurement = {
  name: 'fleet_status',
  writer: 'src/ingest/fleet/changes.ts',
  description: 'a vehicle crossing a SILENT_AFTER threshold, or back from it: its last point is its status',
  time: 'the status run',
  tags: [{ name: 'after', description: 'the SILENT_AFTER threshold, as configured (`1h`)' }, vehicleno],
  fields: [
    { name: 'silent', unit: '0/1', description: '1 silent, 0 back' },
    { name: 'last_seen', unit: 'ms', description: 'its last record’s time, or the record that ended the silence' },
  ],
};

export const FLEET: DerivedMeasurement = {
  name: 'fleet',
  writer: 'src/ingest/fleet/changes.ts',
  description: 'the fleet’s counts at each status run',
  time: 'the status run',
  tags: [{ name: 'after', description: 'the SILENT_AFTER threshold' }],
  fields: [
    { name: 'vehicles', unit: 'count', description: 'vehicles known' },
    { name: 'silent', unit: 'count', description: 'of them silent for the threshold' },
    { name: 'reporting', unit: 'count', description: 'vehicles − silent' },
  ],
};

export const CAN_PACK: DerivedMeasurement = {
  name: 'can_pack',
  writer: 'src/ingest/flatten/packHealth.ts',
  description: 'pack health across one CAN record’s fields (what InfluxQL cannot compute from the `can` point)',
  time: 'the CAN record’s',
  tags: [vehicleno],
  fields: [
    { name: 'cell_voltage_min', unit: 'V', description: 'the lowest cell voltage reported' },
    { name: 'cell_voltage_max', unit: 'V', description: 'the highest' },
    { name: 'cell_voltage_mean', unit: 'V', description: 'their mean' },
    { name: 'cell_voltage_spread', unit: 'V', description: 'max − min' },
    { name: 'cells_reported', unit: 'count', description: 'cell voltages counted (up to `no_of_cells`, none reading 0 V)' },
    { name: 'cell_temperature_min', unit: '°C', description: 'the lowest sensor in use' },
    { name: 'cell_temperature_max', unit: '°C', description: 'the highest' },
    { name: 'cell_temperature_spread', unit: '°C', description: 'max − min' },
    { name: 'temperature_sensors_reported', unit: 'count', description: 'sensors in use counted' },
    { name: 'alerts_raised', unit: 'count', description: '`alert_*` flags at 1' },
    { name: 'cells_unused', unit: 'count', description: 'cell voltages left out as unused slots: numbered beyond `no_of_cells`, or reading 0 V; absent: none' },
    { name: 'temperature_sensors_unused', unit: 'count', description: 'temperatures left out as unused sensors: numbered beyond `no_of_temperature_sensors`, or a sentinel (`CAN_TEMP_SENTINELS`); absent: none' },
  ],
};

export const FUEL: DerivedMeasurement = {
  name: 'fuel',
  writer: 'src/ingest/sync/fuel.ts',
  description: 'the telematics service’s fuel history, pulled on a schedule',
  time: 'the reading’s',
  tags: [{ name: 'unit', description: 'the reading’s unit, as the service says it (litres or percent)' }, vehicleno],
  fields: [{ name: 'value', description: 'the reading, in the `unit` tag’s unit' }],
};

export const COMMANDS: DerivedMeasurement = {
  name: 'commands',
  writer: 'src/ingest/commands/tell.ts',
  description: 'the command ledger’s history: one point each state an immobilise or mobilise went through (docs/commands.md), kept after the live ledger in Redis forgets the command',
  time: 'the state change',
  tags: [
    vehicleno,
    { name: 'id', description: 'the command’s id (the ledger’s, `telematics-fleet commands`)' },
    { name: 'command', description: '`immobilize` or `mobilize`' },
    { name: 'type', description: 'the spec’s type: ignition, crank, movement, can, charge, discharge, chargendischarge' },
    { name: 'state', description: 'requested, waiting, sending, sent, confirmed, not_confirmed, failed, expired, cancelled' },
    { name: 'author', description: 'who asked: the admin credential’s name, or the automation rule’s' },
    { name: 'author_kind', description: '`credential` or `rule`' },
    { name: 'reason', description: 'why, as the author gave it' },
  ],
  fields: [
    { name: 'value', unit: '0/1', description: 'always 1 (a point says a change happened)' },
    { name: 'immediate', unit: '0/1', description: '1: sent without waiting for the vehicle to be safe (confirmed twice, by a credential allowed to)' },
    { name: 'requested_at', unit: 'ms', description: 'when it was asked' },
    { name: 'fix_time', unit: 'ms', description: 'when asked: the vehicle’s newest GPS fix' },
    { name: 'lat', unit: '°', description: 'when asked: its position' },
    { name: 'lng', unit: '°', description: 'when asked: its position' },
    { name: 'speed', unit: 'km/h', description: 'when asked: its speed' },
    { name: 'ignition', unit: '0/1', description: 'when asked: its ignition' },
    { name: 'soc', unit: '%', description: 'when asked: its state of charge' },
    { name: 'allow_charging', unit: '0/1', description: 'when asked: the pack’s allow_charging, where sent' },
    { name: 'allow_discharging', unit: '0/1', description: 'when asked: the pack’s allow_discharging, where sent' },
  ],
};

/** Every derived measurement, in the order documented. */
export const DERIVED_MEASUREMENTS: readonly DerivedMeasurement[] = [VEHICLE_EVENTS, TRIPS, CHARGING_SESSIONS, STOPS, PACK_LIFE, FLEET_STATUS, FLEET, CAN_PACK, FUEL, COMMANDS];
