/**
 * change-password at a real terminal: the CLI runs in a pseudo-terminal made by python3's pty module,
 * keys are typed one write at a time as a terminal sends them (arrows and other keys as escape
 * sequences), and the emulator started here shows which password actually arrived.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../cli/exit.js';
import { type RunningEmulator, startEmulator } from '../emulator/index.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const TOKEN = 'pty-test-token-3e7a';

/**
 * argv: the steps as JSON, then the command. A step waits for text in the output (counted from the end
 * of the previous wait, so the second prompt is not matched by the first) or writes bytes. Relays the
 * output to stdout and exits with the child's status; 99 if the child stalls.
 */
const PTY_SCRIPT = `
import json, os, pty, select, signal, sys, time
steps, cmd = json.loads(sys.argv[1]), sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
out, seen = b'', 0
def pump(until):
    global out
    r, _, _ = select.select([fd], [], [], max(0, until - time.time()))
    if not r:
        return True
    try:
        data = os.read(fd, 4096)
    except OSError:
        data = b''
    out += data
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return data != b''
def stall(what):
    sys.stderr.write('stalled waiting for %r\\n' % what)
    os.kill(pid, signal.SIGKILL)
    sys.exit(99)
for step in steps:
    if 'wait' in step:
        want, until = step['wait'].encode(), time.time() + 30
        while want not in out[seen:]:
            if time.time() > until or not pump(until):
                stall(step['wait'])
        seen = out.index(want, seen) + len(want)
        time.sleep(0.1)
    else:
        os.write(fd, step['send'].encode())
        time.sleep(0.05)
until = time.time() + 30
while pump(until):
    if time.time() > until:
        stall('exit')
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
`;

type Step = { wait: string } | { send: string };

function inPty(args: string[], steps: Step[]): Promise<{ code: number | null; output: string }> {
  const child = spawn('python3', ['-c', PTY_SCRIPT, JSON.stringify(steps), process.execPath, '--import', 'tsx', 'src/cmd/telematics.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TERM: 'xterm', UPSTREAM_URL: emu.url, UPSTREAM_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output: output.replaceAll('\r\n', '\n') }));
  });
}

const KEY = {
  left: '\x1b[D',
  right: '\x1b[C',
  up: '\x1b[A',
  down: '\x1b[B',
  home: '\x1b[H',
  homeVt: '\x1b[1~',
  end: '\x1b[F',
  endVt: '\x1b[4~',
  delete: '\x1b[3~',
  f1: '\x1bOP',
  f5: '\x1b[15~',
  backspace: '\x7f',
  ctrlU: '\x15',
  ctrlC: '\x03',
  enter: '\r',
};

// Multi-character sends arrive as one read, as a paste does.
const TYPED = ['Zq', KEY.left, 'é', KEY.right, KEY.up, '7', KEY.down, KEY.home, KEY.homeVt, 'Wx', KEY.end, KEY.endVt, KEY.delete,
  'Mv', KEY.backspace, '😀', KEY.backspace, KEY.f1, KEY.f5, 'k!3'];
const PASSWORD = 'Zqé7WxMk!3';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator({ seed: 5, vehicles: 1, token: TOKEN });
});
afterAll(async () => {
  await emu.close();
});

describe('change-password in a pseudo-terminal', () => {
  it('sends only the printable characters typed, ignoring cursor, editing and function keys, without echo', async () => {
    const entry: Step[] = [{ send: 'typo' }, { send: KEY.ctrlU }, ...TYPED.map((send) => ({ send })), { send: KEY.enter }];
    const r = await inPty(['change-password', '--username', 'demo'], [{ wait: 'New password: ' }, ...entry, { wait: 'Repeat new password: ' }, ...entry]);
    const received = emu.state.users[0]?.password;
    expect(received).not.toMatch(/\p{Cc}/u);
    expect(received).toBe(PASSWORD);
    // The output is the prompts and the answer alone: nothing typed was echoed.
    expect(r).toEqual({ code: EXIT.ok, output: 'New password: \nRepeat new password: \nPassword changed for user demo\n' });
  });

  it('Ctrl-C at the prompt cancels with the cancelled exit code and sends nothing', async () => {
    const before = emu.state.calls.get('changepassword') ?? 0;
    const r = await inPty(['change-password', '--username', 'demo'], [{ wait: 'New password: ' }, { send: 'Sec' }, { send: 'ret9' }, { send: KEY.ctrlC }]);
    expect(r).toEqual({ code: EXIT.cancelled, output: 'New password: \ncancelled\n' });
    expect(emu.state.calls.get('changepassword') ?? 0).toBe(before);
  });
});
