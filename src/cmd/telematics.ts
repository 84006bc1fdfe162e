#!/usr/bin/env node
/** The `telematics` CLI: see src/upstream/cli/README.md. */
import { processIO } from '../cli/io.js';
import { main } from '../upstream/cli/main.js';

// exitCode rather than exit(): let stdout drain when it is a pipe.
process.exitCode = await main(process.argv.slice(2), processIO());
