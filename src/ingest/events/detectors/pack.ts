/**
 * A pack's id: its BMS's (`bms_id`) when the record carries one, else its first module's (`bat_id_1`),
 * NaN when neither. The BMS travels with the pack; `bat_id_1` names packs that report no BMS id.
 */
export const packIdOf = (bmsId: number, batteryId: number): number => bmsId === bmsId && bmsId !== 0 ? bmsId : batteryId === batteryId && batteryId !== 0 ? batteryId : NaN;
