/** `telematics-fleet` whole: the fleet's commands and the command ledger's (which stands above the fleet's folder). */
import { LEDGER_COMMANDS } from '../ingest/commands/commands.js';
import { fleetProgram } from '../ingest/fleet/commands.js';

export const TELEMATICS_FLEET = fleetProgram(LEDGER_COMMANDS);
