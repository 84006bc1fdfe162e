#!/usr/bin/env node
/** telematics-fleet: which vehicles report and which went silent; see src/ingest/fleet/README.md. */
import { processIO } from '../cli/io.js';
import { runProgram } from '../cli/program.js';
import { FLEET } from '../ingest/fleet/commands.js';

process.exitCode = await runProgram(FLEET, process.argv.slice(2), processIO());
