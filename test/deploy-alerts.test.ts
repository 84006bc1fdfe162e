/** The alert rules operators load are valid and behave as their unit tests say (Debian's promtool). */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { expect, it } from 'vitest';

const run = (...args: string[]) => execFileSync('promtool', args, { cwd: 'deploy/prometheus', encoding: 'utf8', stdio: 'pipe' });

it('checks every rule and passes the rules’ unit tests, and every rule has a unit test and a runbook line', () => {
  const rules = (parse(readFileSync('deploy/prometheus/alerts.yml', 'utf8')) as { groups: Array<{ rules: Array<{ alert: string }> }> }).groups.flatMap((g) => g.rules.map((r) => r.alert));
  // Every rule the file holds, as promtool reads it (none it skips).
  expect(run('check', 'rules', 'alerts.yml')).toContain(`SUCCESS: ${rules.length} rules found`);
  expect(rules).toContain('TelematicsVehicleMovedWhileOff');
  expect(run('test', 'rules', 'alerts.test.yml')).toContain('SUCCESS');
  const tests = readFileSync('deploy/prometheus/alerts.test.yml', 'utf8');
  const readme = readFileSync('docs/operating.md', 'utf8');
  for (const alert of rules) {
    expect(tests, `${alert} has a unit test`).toContain(`alertname: ${alert}`);
    expect(readme, `${alert} has a runbook line`).toMatch(new RegExp(`\\| \`${alert}\` \\|`));
  }
});
