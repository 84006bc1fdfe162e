/**
 * A pack's id: its BMS's id (`bms_id`) when the record carries one, else its first battery module's
 * (`bat_id_1`); NaN when it carries neither (0 counts as absent). The BMS names the pack and travels with
 * it through swaps; `bat_id_1` names packs that report no BMS id. As a tag (`pack`), its decimal text.
 */
export const packIdOf = (bmsId: number, batteryId: number): number => bmsId === bmsId && bmsId !== 0 ? bmsId : batteryId === batteryId && batteryId !== 0 ? batteryId : NaN;
