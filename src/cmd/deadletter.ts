#!/usr/bin/env node
/** telematics-deadletter: list, show, replay and purge what did not land; see src/ingest/deadletter/README.md. */
import { processIO } from '../cli/io.js';
import { runProgram } from '../cli/program.js';
import { DEADLETTER } from '../ingest/deadletter/commands.js';

process.exitCode = await runProgram(DEADLETTER, process.argv.slice(2), processIO());
