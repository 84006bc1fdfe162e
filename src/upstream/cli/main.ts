/** `telematics`: the upstream's commands, and the exit codes of its answers. */
import type { ErrorClassifier } from '../../cli/exit.js';
import { EXIT } from '../../cli/exit.js';
import type { CliIO } from '../../cli/io.js';
import { runProgram, type Program } from '../../cli/program.js';
import { UpstreamError, UpstreamProtocolError, UpstreamThrottledError, UpstreamTransportError } from '../client/errors.js';
import { changePassword } from './commands/password.js';
import { emulate } from './commands/emulate.js';
import { feed } from './commands/feed.js';
import { immobilize, mobilize } from './commands/control.js';
import { fuelHistory, fuelUsed, vehicles } from './commands/reads.js';

/** FAILURE answers, network trouble and answers of the wrong shape each have their exit code. */
const classify: ErrorClassifier = (e) => {
  // Its own message says whether the call was carried out (it was not) and when to try again.
  if (e instanceof UpstreamThrottledError) return { code: EXIT.failure, message: e.message };
  if (e instanceof UpstreamError) return { code: EXIT.failure, message: `${e.operation} failed: ${e.err}: ${e.msg}` };
  if (e instanceof UpstreamTransportError) return { code: EXIT.network, message: e.message };
  if (e instanceof UpstreamProtocolError) return { code: EXIT.protocol, message: e.message };
  return undefined;
};

export const TELEMATICS: Program = {
  name: 'telematics',
  commands: [vehicles, fuelHistory, fuelUsed, immobilize, mobilize, changePassword, emulate, feed],
  classify,
  help: (commands) => `Usage: telematics <command> [options]

Client of the vehicle telematics service, its emulator and its push feed.

Commands:
${commands}

Run "telematics <command> --help" for the options of a command.

Environment:
  UPSTREAM_URL        service base URL (flag --url)
  UPSTREAM_TOKEN      API token (flag --token); never printed
  UPSTREAM_TIME_UNIT  ms or s: unit of starttime/endtime sent (flag --time-unit)
  PUSH_TOKEN          token the feed sends to the receiver (flag --token of feed)
  EMULATOR_TOKEN      token the emulator accepts (flag --token of emulate)

Exit status:
  0    success
  1    the service answered FAILURE, or 429 (too many calls: not carried out; the message says when to
       retry) (feed: the receiver refused valid records)
  2    usage error: bad flags, missing configuration, confirmation impossible without --yes
  3    network error, timeout, or HTTP error without an answer envelope
  4    the service's answer does not have the expected shape
  5    cancelled at a confirmation prompt
  130  interrupted
`,
};

export function main(argv: readonly string[], io: CliIO): Promise<number> {
  return runProgram(TELEMATICS, argv, io);
}
