/** emulate: run the emulator of the service until interrupted. */
import { noPositionals, parse, parseDurationFlag, parseNumber } from '../../../cli/args.js';
import { type Command, showHelp } from '../../../cli/command.js';
import { EXIT, UsageError } from '../../../cli/exit.js';
import { printJson } from '../../../cli/format.js';

export const emulate: Command = {
  name: 'emulate',
  summary: 'run the emulator of the service (six operations) until Ctrl-C',
  help: `Usage: telematics emulate [--port <n>] [--host <addr>] [--seed <n>] [--vehicles <n>] [options]

Serves POST /api/standard/<op> for the six operations, for a fleet generated from the seed.
Prints the base URL (use it as UPSTREAM_URL) and runs until SIGINT/SIGTERM.

  --port <n>           port; 0 picks a free one                 [default 8090]
  --host <addr>        address to listen on                     [default 127.0.0.1]
  --seed <n>           fleet seed                               [default 1]
  --vehicles <n>       fleet size                               [default 10]
  --token <token>      token the emulator accepts               [env EMULATOR_TOKEN, default emulator-token]
  --time-unit <ms|s>   unit of starttime/endtime and fuel time  [default ms]
  --limits <l>         provider: the provider's published limits (3 calls a second,
                       400 ms apart, 24 getfuelhistory calls per vehicle a day;
                       beyond them 429 with Retry-After); none: no limits  [default provider]
  --token-expires-in <d>
                       also issue a token (JWT-shaped, with exp) that expires this long
                       from now, e.g. 15d, and print it                   [default: none]
  --json               print {"url", ...} as JSON
  -h, --help           this help
`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, {
      port: { type: 'string' },
      host: { type: 'string' },
      seed: { type: 'string' },
      vehicles: { type: 'string' },
      token: { type: 'string' },
      'time-unit': { type: 'string' },
      limits: { type: 'string' },
      'token-expires-in': { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const port = parseNumber(values.port ?? '8090', '--port', this.name, { integer: true, min: 0, max: 65535 });
    const seed = parseNumber(values.seed ?? '1', '--seed', this.name, { integer: true });
    const vehicles = parseNumber(values.vehicles ?? '10', '--vehicles', this.name, { integer: true, min: 1, max: 100_000 });
    const timeUnit = values['time-unit'] ?? 'ms';
    if (timeUnit !== 'ms' && timeUnit !== 's') throw new UsageError(`--time-unit must be ms or s, not "${timeUnit}"`, this.name);
    const limitsName = values.limits ?? 'provider';
    if (limitsName !== 'provider' && limitsName !== 'none') throw new UsageError(`--limits must be provider or none, not "${limitsName}"`, this.name);
    const expiresIn = values['token-expires-in'] === undefined ? undefined : parseDurationFlag(values['token-expires-in'], '--token-expires-in', this.name);
    const givenToken = values.token ?? io.env.EMULATOR_TOKEN;
    const { startEmulator } = await import('../../emulator/app.js');
    const { PROVIDER_LIMITS } = await import('../../emulator/limits.js');
    const host = values.host ?? '127.0.0.1';
    const limits = limitsName === 'provider' ? { limits: PROVIDER_LIMITS } : {};
    const emu = await startEmulator({ port, host, seed, vehicles, timeUnit, ...limits, ...(givenToken ? { token: givenToken } : {}) }).catch(
      (e: unknown) => {
        const code = (e as { code?: unknown }).code;
        if (code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES') {
          throw new UsageError(`cannot listen on ${host}:${port}: ${code}`, 'emulate');
        }
        throw e;
      },
    );
    // A token the user chose is theirs to keep quiet; the default one is public anyway.
    const tokenNote = givenToken ? '(the one given)' : emu.token;
    // An expiring token is made here, not chosen by the user: it must be printed to be used.
    const expiring = expiresIn === undefined ? undefined : { token: emu.state.issueToken(emu.state.users[0]!.username, Date.now() + expiresIn), expiresAt: new Date(Math.floor((Date.now() + expiresIn) / 1000) * 1000).toISOString() };
    if (values.json) printJson(io.stdout, { url: emu.url, seed, vehicles, timeUnit, limits: limitsName, ...(expiring ? { expiringToken: expiring } : {}) });
    else {
      io.stdout.write(`emulator listening on ${emu.url} (${vehicles} vehicles, seed ${seed}, times in ${timeUnit}, limits: ${limitsName}); token: ${tokenNote}\n`);
      if (expiring) io.stdout.write(`token expiring at ${expiring.expiresAt}: ${expiring.token}\n`);
    }
    const signal = await io.interrupted();
    io.stderr.write(`${signal}: stopping\n`);
    await emu.close();
    return EXIT.ok;
  },
};
