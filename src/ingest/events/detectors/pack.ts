/**
 * A pack's id: its BMS's id (`bms_id`) when the record carries one, else its first module's (`bat_id_1`);
 * NaN when neither is known. (bms_id names the pack's BMS, which travels with the pack; bat_id_1 is the
 * first module's id, present on packs without a BMS id.) As a tag, `pack` is its decimal text.
 */
export const packIdOf = (bmsId: number, batteryId: number): number =>
  bmsId === bmsId && bmsId !== 0 ? bmsId : batteryId === batteryId && batteryId !== 0 ? batteryId : NaN;
