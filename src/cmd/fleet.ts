#!/usr/bin/env node
/** telematics-fleet: which vehicles report and which went silent; see src/ingest/fleet/README.md. */
import { processIO } from '../cli/io.js';
import { runProgram } from '../cli/program.js';
import { TELEMATICS_FLEET } from './fleetProgram.js';

process.exitCode = await runProgram(TELEMATICS_FLEET, process.argv.slice(2), processIO());
