import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_KEYS, loadConfig } from '../src/config/index.js';
import { SECRET_SETTINGS } from '../src/config/secrets.js';
import { bullKey } from '../src/ingest/queue/keys.js';

/** No Docker engine runs here; these keep docker-compose.yml, deploy/ and .env.example true by reading them. */

type Service = {
  healthcheck?: { test: string[] };
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  build?: { context: string; dockerfile: string };
  image?: string;
  volumes?: string[];
  ports?: string[];
  restart?: string;
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
};
const composeText = readFileSync('docker-compose.yml', 'utf8');
const compose = parse(composeText, { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = compose.services;

/** What compose must be given, from the environment or .env: each `${NAME:?…}`, none with a default. */
const SECRETS = ['GRAFANA_ADMIN_PASSWORD', 'INFLUX_ADMIN_PASSWORD', 'INFLUX_ADMIN_TOKEN', 'PUSH_TOKENS'];
const BIND_VARIABLES = ['BIND_ADDRESS', 'RECEIVER_BIND_ADDRESS'];
/** A value per secret that nothing else in the rendered file could hold. */
const sentinel = (name: string) => `sentinel-${name.toLowerCase().replace(/_/g, '-')}-0123456789`;
const allSecrets = () => Object.fromEntries(SECRETS.map((n) => [n, sentinel(n)]));

const scratch = mkdtempSync(join(tmpdir(), 'deploy-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const emptyEnvFile = join(scratch, 'empty.env');
writeFileSync(emptyEnvFile, '');

/**
 * `docker-compose config` as a user runs it: with `env` alone (nothing of this process's secrets or bind
 * addresses) and the given .env file (an empty one by default, so a developer's own .env changes nothing).
 */
function composeConfig(env: Record<string, string>, envFile = emptyEnvFile): { status: number | null; stdout: string; stderr: string } {
  const base = { ...process.env };
  for (const n of [...SECRETS, ...BIND_VARIABLES]) delete base[n];
  const r = spawnSync('docker-compose', ['--env-file', envFile, '-f', 'docker-compose.yml', 'config'], { env: { ...base, ...env }, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
function rendered(env: Record<string, string>): { services: Record<string, Service & { ports?: string[] }> } {
  const r = composeConfig(env);
  expect(r.status, r.stderr).toBe(0);
  return parse(r.stdout) as { services: Record<string, Service & { ports?: string[] }> };
}
/** The services others wait on to have run to completion (one-shot jobs). */
const jobs = new Set(Object.values(services).flatMap((s) => Object.entries(s.depends_on ?? {}).filter(([, d]) => d.condition === 'service_completed_successfully').map(([n]) => n)));

describe('docker-compose.yml', () => {
  it('is valid compose, as docker-compose itself reads it', () => {
    const r = composeConfig(allSecrets());
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('takes every secret from the environment or .env, refusing to start without it, and ships no default password', () => {
    const required = [...new Set([...composeText.matchAll(/\$\{([A-Z0-9_]+):\?[^}]+\}/g)].map((m) => m[1]!))].sort();
    expect(required).toEqual(SECRETS);
    for (const name of SECRETS) {
      for (const value of [undefined, '']) {
        const env = allSecrets();
        if (value === undefined) delete env[name];
        else env[name] = value;
        const r = composeConfig(env);
        expect(r.status, `${name} ${value === undefined ? 'unset' : 'empty'}`).not.toBe(0);
        expect(r.stderr).toContain(name);
      }
    }
    // No variable that looks secret has a default, and no literal credential is written in the file.
    for (const m of composeText.matchAll(/\$\{([A-Z0-9_]+)(:?[-?=+]?)/g)) {
      if (/PASSWORD|TOKEN|SECRET|CREDENTIAL/.test(m[1]!)) expect(m[2], m[1]).toBe(':?');
    }
    expect(composeText).not.toMatch(/change-?me|changeme|admin:admin|password123/i);
    // Rendered, every credential setting holds exactly what the operator gave.
    const out = rendered(allSecrets());
    const given = new Set(Object.values(allSecrets()));
    let credentials = 0;
    for (const [name, s] of Object.entries(out.services)) {
      for (const [key, value] of Object.entries(s.environment ?? {})) {
        if (!/PASSWORD|TOKEN|SECRET|CREDENTIAL/.test(key)) continue;
        credentials++;
        expect(given.has(String(value)), `${name}: ${key}`).toBe(true);
      }
    }
    expect(credentials).toBeGreaterThanOrEqual(SECRETS.length);
    // Grafana's admin is not admin/admin; InfluxDB's admin password is the operator's.
    expect(out.services.grafana!.environment!.GF_SECURITY_ADMIN_PASSWORD).toBe(sentinel('GRAFANA_ADMIN_PASSWORD'));
    expect(out.services.grafana!.environment!.GF_AUTH_ANONYMOUS_ENABLED).toBe('false');
    expect(out.services.influxdb!.environment!.DOCKER_INFLUXDB_INIT_PASSWORD).toBe(sentinel('INFLUX_ADMIN_PASSWORD'));
  });

  it('publishes every port on 127.0.0.1 unless a bind-address variable says otherwise, and never Redis or the admin port', () => {
    let published = 0;
    for (const [name, s] of Object.entries(services)) {
      for (const p of s.ports ?? []) {
        published++;
        const m = /^\$\{([A-Z_]+):-127\.0\.0\.1\}:(\d+):(\d+)$/.exec(p);
        expect(m, `${name}: ${p}`).not.toBeNull();
        expect(BIND_VARIABLES, `${name}: ${p}`).toContain(m![1]);
        expect(['6379', '9464']).not.toContain(m![2]);
      }
    }
    expect(published).toBeGreaterThanOrEqual(4);
    expect(services.redis!.ports).toBeUndefined();
    expect(services.worker!.ports).toBeUndefined();
    const hostsOf = (out: ReturnType<typeof rendered>) =>
      Object.fromEntries(Object.entries(out.services).flatMap(([name, s]) => (s.ports ?? []).map((p) => [`${name} ${p.split(':').slice(1).join(':')}`, p.split(':')[0]])));
    const byDefault = hostsOf(rendered(allSecrets()));
    expect(Object.keys(byDefault).sort()).toEqual(['grafana 3000:3000/tcp', 'influxdb 8086:8086/tcp', 'prometheus 9090:9090/tcp', 'receiver 8080:8080/tcp']);
    for (const host of Object.values(byDefault)) expect(host).toBe('127.0.0.1');
    // Widened on purpose, each variable moves its own ports only.
    const widened = hostsOf(rendered({ ...allSecrets(), RECEIVER_BIND_ADDRESS: '0.0.0.0', BIND_ADDRESS: '192.0.2.10' }));
    expect(widened).toEqual({ 'grafana 3000:3000/tcp': '192.0.2.10', 'influxdb 8086:8086/tcp': '192.0.2.10', 'prometheus 9090:9090/tcp': '192.0.2.10', 'receiver 8080:8080/tcp': '0.0.0.0' });
  });

  it('starts with the .env its header makes, and that .env is the owner’s alone', () => {
    const header = composeText.slice(0, composeText.search(/^[^#]/m)).split('\n').filter((l) => l.startsWith('#   ')).map((l) => l.slice(4));
    const from = header.findIndex((l) => l.startsWith('test -e .env'));
    const to = header.indexOf(')', from);
    expect(from).toBeGreaterThanOrEqual(0);
    expect(to).toBeGreaterThan(from);
    expect(header.slice(to + 1)).toContain('docker compose up -d');
    const script = header.slice(from, to + 1).join('\n');
    const dir = join(scratch, 'header');
    mkdirSync(dir);
    execFileSync('bash', ['-euc', script], { cwd: dir, env: { PATH: process.env.PATH! } });
    const envFile = join(dir, '.env');
    expect(statSync(envFile).mode & 0o777).toBe(0o600);
    const made = readFileSync(envFile, 'utf8');
    const values = Object.fromEntries(made.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    expect(Object.keys(values).sort()).toEqual(SECRETS);
    expect(values.INFLUX_ADMIN_PASSWORD!.length).toBeGreaterThanOrEqual(8); // influx setup refuses fewer
    expect(loadConfig({ PUSH_TOKENS: values.PUSH_TOKENS! }).PUSH_TOKENS).toBeTruthy();
    const r = composeConfig({}, envFile);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    // Run again, it keeps the .env it made (InfluxDB took those values at its first start).
    execFileSync('bash', ['-euc', script], { cwd: dir, env: { PATH: process.env.PATH! } });
    expect(readFileSync(envFile, 'utf8')).toBe(made);
  });

  it('gives workers a read/write token and Grafana a read-only one on the bucket, from a job; the admin token stays with InfluxDB and the job', () => {
    const out = rendered(allSecrets());
    const holders = Object.entries(out.services).filter(([, s]) => JSON.stringify(s).includes(sentinel('INFLUX_ADMIN_TOKEN'))).map(([n]) => n).sort();
    expect(holders).toEqual(['influxdb', 'influxdb-tokens']);
    expect(jobs).toEqual(new Set(['influxdb-tokens']));
    const job = services['influxdb-tokens']!;
    expect(job.restart).toBe('no');
    expect(job.depends_on?.influxdb?.condition).toBe('service_healthy');
    // The server on 8086 is healthy, not the temporary one the image runs for its first setup.
    expect(services.influxdb!.healthcheck!.test.join(' ')).toContain('--host http://localhost:8086');
    const mounts = (s: Service) => Object.fromEntries((s.volumes ?? []).map((v) => v.split(':')).map(([src, dst, mode]) => [src!, { dst: dst!, mode }]));
    expect(mounts(job)['influx-token-worker']?.dst).toBe('/run/telematics/worker');
    expect(mounts(job)['influx-token-grafana']?.dst).toBe('/run/telematics/grafana');
    expect(readFileSync('deploy/influxdb/telematics-tokens.sh', 'utf8')).toContain('dir="${TOKENS_DIR:-/run/telematics}"');
    for (const v of ['influx-token-worker', 'influx-token-grafana']) expect(compose.volumes).toHaveProperty(v);
    // Workers load INFLUX_TOKEN from the job's file; receivers hold no InfluxDB token at all.
    for (const name of ['receiver', 'worker']) expect(services[name]!.environment).not.toHaveProperty('INFLUX_TOKEN');
    const worker = services.worker!;
    expect(worker.depends_on?.['influxdb-tokens']?.condition).toBe('service_completed_successfully');
    const envFile = /^--env-file=(.+)$/.exec(worker.entrypoint![1]!)?.[1];
    expect(worker.entrypoint).toEqual(['node', `--env-file=${envFile}`, 'dist/cmd/ingest.js']);
    expect(mounts(worker)['influx-token-worker']).toEqual({ dst: posix.dirname(envFile!), mode: 'ro' });
    expect(posix.basename(envFile!)).toBe('influx.env');
    expect(mounts(services.receiver!)).not.toHaveProperty('influx-token-worker');
    // Grafana's data source reads its file; Grafana never mounts the workers' token.
    const grafana = services.grafana!;
    expect(grafana.depends_on?.['influxdb-tokens']?.condition).toBe('service_completed_successfully');
    const ds = readFileSync('deploy/grafana/provisioning/datasources/influxdb.yml', 'utf8');
    const tokenFile = /httpHeaderValue1: Token \$__file\{([^}]+)\}/.exec(ds)?.[1];
    expect(tokenFile).toBeDefined();
    expect(mounts(grafana)['influx-token-grafana']).toEqual({ dst: posix.dirname(tokenFile!), mode: 'ro' });
    expect(posix.basename(tokenFile!)).toBe('token');
    expect(mounts(grafana)).not.toHaveProperty('influx-token-worker');
    expect(grafana.environment).not.toHaveProperty('INFLUX_TOKEN');
  });

  it('pins every image, checks every service’s health, bounds Redis memory, and has Prometheus load the alert rules', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.image, `${name} image`).toMatch(/:\d+\.\d+(\.\d+)?(-[a-z]+)?$|:v\d+\.\d+\.\d+$/);
      // A one-shot job is waited on to complete, not to be healthy.
      if (jobs.has(name)) expect(s.restart, `${name} restart`).toBe('no');
      else expect(s.healthcheck, `${name} healthcheck`).toBeDefined();
    }
    expect(services.redis!.command!.join(' ')).toMatch(/--maxmemory \d+[kmg]b/);
    expect(services.prometheus!.volumes).toContain('./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro');
    const prom = parse(readFileSync('deploy/prometheus/prometheus.yml', 'utf8')) as { rule_files: string[]; scrape_configs: Array<{ dns_sd_configs: Array<{ names: string[]; port: number }> }> };
    expect(prom.rule_files).toEqual(['/etc/prometheus/alerts.yml']);
    expect(prom.scrape_configs.map((c) => c.dns_sd_configs[0]!.names[0]).sort()).toEqual(['receiver', 'worker']);
    for (const c of prom.scrape_configs) expect(String(c.dns_sd_configs[0]!.port)).toBe(services.receiver!.environment!.ADMIN_PORT);
    expect(readFileSync('deploy/Dockerfile', 'utf8')).toMatch(/^FROM node:(22|24)\.\d+-bookworm-slim/m);
    expect(readFileSync('.dockerignore', 'utf8').split('\n')).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git']));
  });

  it('runs Redis with AOF persistence and noeviction, as BullMQ and "nothing lost" need', () => {
    const cmd = services.redis!.command!.join(' ');
    expect(cmd).toContain('--appendonly yes');
    expect(cmd).toContain('--maxmemory-policy noeviction');
  });

  it('runs the receiver and scalable workers from the image built by deploy/Dockerfile', () => {
    expect(services.receiver!.command).toEqual(['receiver']);
    expect(services.worker!.command).toEqual(['worker']);
    expect(services.worker!.deploy?.replicas).toBeGreaterThanOrEqual(2);
    for (const s of [services.receiver!, services.worker!]) {
      expect(existsSync(s.build!.dockerfile)).toBe(true);
    }
  });

  it('sets only settings the service knows, and points them at the compose services', () => {
    for (const name of ['receiver', 'worker']) {
      const env = services[name]!.environment!;
      for (const key of Object.keys(env)) expect(CONFIG_KEYS, `${name}: ${key}`).toContain(key);
      expect(env.REDIS_URL).toBe('redis://redis:6379');
      expect(env.INFLUX_URL).toBe('http://influxdb:8086');
      expect(env.INFLUX_BUCKET).toBe(services.influxdb!.environment!.DOCKER_INFLUXDB_INIT_BUCKET);
      expect(env.INFLUX_ORG).toBe(services.influxdb!.environment!.DOCKER_INFLUXDB_INIT_ORG);
    }
    expect(services.receiver!.environment!.PUSH_TOKENS).toMatch(/PUSH_TOKENS/);
  });

  it('provisions Grafana with an InfluxQL data source naming the database, and dashboards that use their data sources', () => {
    const ds = parse(readFileSync('deploy/grafana/provisioning/datasources/influxdb.yml', 'utf8')) as {
      datasources: Array<{ uid: string; url: string; jsonData: { version: string; dbName: string } }>;
    };
    expect(ds.datasources[0]).toMatchObject({ url: 'http://influxdb:8086', jsonData: { version: 'InfluxQL', dbName: services.influxdb!.environment!.DOCKER_INFLUXDB_INIT_BUCKET } });
    const prom = parse(readFileSync('deploy/grafana/provisioning/datasources/prometheus.yml', 'utf8')) as { datasources: Array<{ uid: string; url: string }> };
    const uids: Record<string, string> = { 'fleet.json': ds.datasources[0]!.uid, 'pipeline.json': prom.datasources[0]!.uid };
    for (const [file, uid] of Object.entries(uids)) {
      const dash = JSON.parse(readFileSync(`deploy/grafana/dashboards/${file}`, 'utf8')) as { panels: Array<{ datasource: { uid: string }; targets: Array<{ query?: string }> }> };
      for (const p of dash.panels) {
        expect(p.datasource.uid).toBe(uid);
        // InfluxQL only (no Flux), and no database named in a query: it comes from the data source.
        for (const t of p.targets) expect(t.query ?? '').not.toMatch(/from\(bucket|FROM "[^"]+"\."/);
      }
    }
  });
});

describe('deploy/influxdb/telematics-tokens.sh (the influxdb-tokens job), against a stand-in influx CLI', () => {
  const BUCKET_ID = '0a1b2c3d4e5f6789';
  const stubs = join(scratch, 'stubs');
  mkdirSync(stubs);
  const stub = (name: string, body: string) => {
    writeFileSync(join(stubs, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(stubs, name), 0o755);
  };
  // The CLI as influx 2.7 answers: `bucket list --hide-headers` tab-separated, `auth create --json` tab-indented.
  stub('influx', `echo "influx [$INFLUX_HOST $INFLUX_TOKEN] $*" >>"$STUB_LOG"
case "$1" in
  ping) exit 0 ;;
  bucket) printf '${BUCKET_ID}\\ttelematics\\tinfinite\\t168h0m0s\\t0f1e2d3c4b5a6978\\timplicit\\n' ;;
  auth) n=$(( $(cat "$STUB_DIR/count" 2>/dev/null || echo 0) + 1 )); echo $n >"$STUB_DIR/count"
    printf '{\\n\\t"id": "0c0c0c0c0c0c0c0%s",\\n\\t"description": "d",\\n\\t"token": "tok%s-AbC_xyz==",\\n\\t"status": "active",\\n\\t"permissions": [\\n\\t\\t"read:orgs/0f1e2d3c4b5a6978/buckets/${BUCKET_ID}"\\n\\t]\\n}\\n' $n $n ;;
  *) echo "unexpected influx $*" >&2; exit 2 ;;
esac`);
  stub('curl', 'echo "curl $*" >>"$STUB_LOG"; printf %s "${STUB_CURL_CODE:-200}"');
  stub('chown', 'echo "chown $*" >>"$STUB_LOG"');

  const tokens = join(scratch, 'tokens');
  const log = join(scratch, 'stub.log');
  const workerFile = join(tokens, 'worker', 'influx.env');
  const grafanaFile = join(tokens, 'grafana', 'token');
  /** The job as compose runs it: its environment from the rendered file, its volumes under `tokens`. */
  function runJob(curlCode = '200'): { status: number | null; stderr: string; log: string[] } {
    writeFileSync(log, '');
    const jobEnv = rendered(allSecrets()).services['influxdb-tokens']!.environment!;
    const r = spawnSync('sh', ['deploy/influxdb/telematics-tokens.sh'], {
      env: { ...jobEnv, TOKENS_DIR: tokens, PATH: `${stubs}:${process.env.PATH}`, STUB_LOG: log, STUB_DIR: scratch, STUB_CURL_CODE: curlCode },
      encoding: 'utf8',
    });
    return { status: r.status, stderr: r.stderr, log: readFileSync(log, 'utf8').trim().split('\n') };
  }
  const creates = (lines: string[]) => lines.filter((l) => / auth create /.test(l));

  it('makes a read/write token for the workers and a read-only one for Grafana, on the bucket alone, as the admin', () => {
    const r = runJob();
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    for (const l of r.log.filter((x) => x.startsWith('influx '))) expect(l).toContain(`[http://influxdb:8086 ${sentinel('INFLUX_ADMIN_TOKEN')}]`);
    const [worker, grafana, ...more] = creates(r.log);
    expect(more).toEqual([]);
    expect(worker).toMatch(new RegExp(`--org fleet --user admin .*worker.* --read-bucket ${BUCKET_ID} --write-bucket ${BUCKET_ID} --json$`));
    expect(grafana).toMatch(new RegExp(`--org fleet --user admin .*grafana.* --read-bucket ${BUCKET_ID} --json$`));
    for (const l of [worker!, grafana!]) expect(l).not.toMatch(/--all-access|--operator|--(read|write)-(?!bucket )/);
    expect(grafana).not.toContain('--write');
    expect(readFileSync(workerFile, 'utf8')).toBe('INFLUX_TOKEN=tok1-AbC_xyz==\n');
    expect(readFileSync(grafanaFile, 'utf8')).toBe('tok2-AbC_xyz==\n');
    for (const f of [workerFile, grafanaFile]) expect(statSync(f).mode & 0o777).toBe(0o400);
    // Owned by its one reader: the image's node user (1000), Grafana (472).
    expect(r.log.filter((l) => l.startsWith('chown '))).toEqual([`chown 1000 ${workerFile}.new`, `chown 472 ${grafanaFile}.new`]);
    // The worker's entry point loads the token as the service's INFLUX_TOKEN.
    const seen = execFileSync(process.execPath, [`--env-file=${workerFile}`, '-p', 'process.env.INFLUX_TOKEN'], { encoding: 'utf8' }).trim();
    expect(seen).toBe('tok1-AbC_xyz==');
  });

  it('keeps the tokens InfluxDB still takes, makes again those it refuses, and stops on any other answer', () => {
    const before = [readFileSync(workerFile, 'utf8'), readFileSync(grafanaFile, 'utf8')];
    const kept = runJob('200');
    expect(kept.status).toBe(0);
    expect(creates(kept.log)).toEqual([]);
    // Each held token is checked with itself.
    expect(kept.log.filter((l) => l.startsWith('curl '))).toEqual([
      expect.stringContaining('Authorization: Token tok1-AbC_xyz== '),
      expect.stringContaining('Authorization: Token tok2-AbC_xyz== '),
    ]);
    expect([readFileSync(workerFile, 'utf8'), readFileSync(grafanaFile, 'utf8')]).toEqual(before);

    const failed = runJob('503');
    expect(failed.status).not.toBe(0);
    expect(failed.stderr).toContain('503');
    expect(creates(failed.log)).toEqual([]);
    expect([readFileSync(workerFile, 'utf8'), readFileSync(grafanaFile, 'utf8')]).toEqual(before);

    // A new InfluxDB volume behind old token volumes: both refused (401), both made again.
    const remade = runJob('401');
    expect(remade.status).toBe(0);
    expect(creates(remade.log)).toHaveLength(2);
    expect(readFileSync(workerFile, 'utf8')).toBe('INFLUX_TOKEN=tok3-AbC_xyz==\n');
    expect(readFileSync(grafanaFile, 'utf8')).toBe('tok4-AbC_xyz==\n');
  });
});

describe('deploy/Dockerfile', () => {
  it('copies only files that exist and starts the service entry point', () => {
    const text = readFileSync('deploy/Dockerfile', 'utf8');
    for (const m of text.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const f of m[1]!.split(/\s+/)) expect(existsSync(f), f).toBe(true);
    }
    expect(text).toContain('ENTRYPOINT ["node", "dist/cmd/ingest.js"]');
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string> };
    expect(Object.values(pkg.bin)).toContain('dist/cmd/ingest.js');
  });

  it('installs dependencies without running their install scripts, none of which the image needs', () => {
    // The instructions, comments aside.
    const text = readFileSync('deploy/Dockerfile', 'utf8').split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');
    const npm = [...text.matchAll(/\bnpm (?:ci|install|i|add|prune|rebuild|update)\b[^&;\n]*/g)].map((m) => m[0]);
    expect(npm.some((c) => c.startsWith('npm ci '))).toBe(true);
    for (const c of npm) expect(c, c).toMatch(/\s--ignore-scripts\b/);
    // The packages with install scripts are those package.json's allowScripts turns off for every npm ci
    // here too (esbuild's binary check, a dev tool's; msgpackr-extract's native build, whose prebuilt binary
    // is a package of its own): the image installs what a developer's npm ci installs.
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { allowScripts?: Record<string, boolean>; scripts: Record<string, string> };
    const withScripts = Object.entries(lock.packages).filter(([path, p]) => path !== '' && p.hasInstallScript).map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts.length).toBeGreaterThan(0);
    for (const name of withScripts) expect(pkg.allowScripts?.[name], name).toBe(false);
    // Nor has the project an install-time script of its own that --ignore-scripts would skip.
    for (const s of ['preinstall', 'install', 'postinstall', 'prepare']) expect(pkg.scripts[s], s).toBeUndefined();
  });
});

describe('deploy/kubernetes (a kustomize base, rendered by kubectl kustomize)', () => {
  type Container = {
    args: string[];
    env?: Array<{ name: string }>;
    ports: Array<{ name: string; containerPort: number }>;
    startupProbe?: { httpGet: { path: string } };
    readinessProbe: { httpGet: { path: string } };
    livenessProbe: { httpGet: { path: string } };
    lifecycle?: { preStop?: { exec?: { command: string[] } } };
    resources: { requests: { cpu: string; memory: string }; limits: { memory: string } };
    securityContext: { allowPrivilegeEscalation: boolean; readOnlyRootFilesystem: boolean; capabilities: { drop: string[] } };
  };
  type Doc = {
    kind: string;
    metadata: { name: string; annotations?: Record<string, string> };
    data?: Record<string, string>;
    spec?: {
      selector?: { matchLabels: Record<string, string> };
      scaleTargetRef?: { name: string; kind?: string };
      template?: { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: { terminationGracePeriodSeconds: number; securityContext: { runAsNonRoot: boolean; seccompProfile: { type: string } }; containers: Container[] } };
      triggers?: Array<{ type: string; metadata: Record<string, string> }>;
      metrics?: Array<{ resource: { name: string } }>;
    };
  };
  const rendered = execFileSync('kubectl', ['kustomize', 'deploy/kubernetes'], { encoding: 'utf8' });
  const docs = parseAllDocuments(rendered).map((d) => d.toJS() as Doc);
  const config = docs.find((d) => d.kind === 'ConfigMap')!.data!;
  const deployments = docs.filter((d) => d.kind === 'Deployment');
  const named = (kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name)!;
  const container = (name: string) => named('Deployment', name).spec!.template!.spec.containers[0]!;

  it('keeps Services inside the cluster, and pods off the host network and the Kubernetes API', () => {
    type Loose = { kind: string; metadata: { name: string }; spec?: { type?: string; template?: { spec: { automountServiceAccountToken?: boolean; hostNetwork?: boolean; hostPID?: boolean; hostIPC?: boolean; containers: Array<{ ports?: Array<{ hostPort?: number }> }> } } } };
    const all = docs as unknown as Loose[];
    const svcs = all.filter((d) => d.kind === 'Service');
    expect(svcs.length).toBeGreaterThan(0);
    for (const s of svcs) expect(s.spec!.type ?? 'ClusterIP', s.metadata.name).toBe('ClusterIP');
    const pods = all.filter((d) => d.spec?.template);
    expect(pods.length).toBe(deployments.length);
    for (const d of pods) {
      const pod = d.spec!.template!.spec;
      expect(pod.automountServiceAccountToken, d.metadata.name).toBe(false);
      expect([pod.hostNetwork, pod.hostPID, pod.hostIPC].filter(Boolean)).toEqual([]);
      for (const c of pod.containers) for (const p of c.ports ?? []) expect(p.hostPort, d.metadata.name).toBeUndefined();
    }
  });

  it('configures only settings the service knows', () => {
    for (const key of Object.keys(config)) expect(CONFIG_KEYS).toContain(key);
    for (const d of deployments) for (const e of d.spec!.template!.spec.containers[0]!.env ?? []) expect(CONFIG_KEYS).toContain(e.name);
  });

  it('runs receivers and workers locked down, probed, with more grace than a preStop pause and SHUTDOWN_GRACE, and scraped on the admin port', () => {
    expect(deployments.map((d) => d.spec!.template!.spec.containers[0]!.args).sort()).toEqual([['receiver'], ['worker']]);
    const grace = loadConfig({ PUSH_AUTH: 'none', SHUTDOWN_GRACE: config.SHUTDOWN_GRACE }).SHUTDOWN_GRACE;
    for (const d of deployments) {
      const pod = d.spec!.template!.spec;
      const c = pod.containers[0]!;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      expect(c.startupProbe?.httpGet.path).toBe('/healthz');
      expect(c.livenessProbe.httpGet.path).toBe('/healthz');
      expect(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory).toBeTruthy();
      const preStop = Number(c.lifecycle?.preStop?.exec?.command[1] ?? 0) * 1000;
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(grace + preStop);
      const admin = c.ports.find((p) => p.name === 'admin')!;
      expect(String(admin.containerPort)).toBe(config.ADMIN_PORT);
      expect(d.spec!.template!.metadata.annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': config.ADMIN_PORT, 'prometheus.io/path': '/metrics' });
    }
    // A receiver stays in its Service while Redis is down, so senders get its 503 with Retry-After.
    expect(container('telematics-receiver').readinessProbe.httpGet.path).toBe('/healthz');
    expect(container('telematics-receiver').lifecycle?.preStop?.exec?.command[0]).toBe('sleep');
    expect(container('telematics-worker').readinessProbe.httpGet.path).toBe('/readyz');
  });

  it('scales workers with KEDA on the queue the service uses and on the lag, receivers on CPU, and budgets disruptions', () => {
    const scaled = named('ScaledObject', 'telematics-worker');
    expect(scaled.spec!.scaleTargetRef!.name).toBe('telematics-worker');
    const redis = scaled.spec!.triggers!.find((t) => t.type === 'redis')!;
    expect(redis.metadata.listName).toBe(bullKey(config.QUEUE_NAME!, 'wait'));
    expect(`redis://${redis.metadata.address}`).toBe(config.REDIS_URL);
    expect(scaled.spec!.triggers!.find((t) => t.type === 'prometheus')!.metadata.query).toBe('max(telematics_queue_oldest_waiting_age_seconds)');
    const hpa = named('HorizontalPodAutoscaler', 'telematics-receiver');
    expect(hpa.spec!.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'telematics-receiver' });
    expect(hpa.spec!.metrics![0]!.resource.name).toBe('cpu');
    for (const d of deployments) {
      const pdb = docs.find((x) => x.kind === 'PodDisruptionBudget' && JSON.stringify(x.spec!.selector!.matchLabels) === JSON.stringify(d.spec!.selector!.matchLabels));
      expect(pdb, `a PodDisruptionBudget for ${d.metadata.name}`).toBeDefined();
    }
  });
});

describe('.env.example', () => {
  const lines = readFileSync('.env.example', 'utf8').split('\n').filter((l) => /^[A-Z_]+=/.test(l));
  const example = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

  it('lists every setting', () => {
    expect(Object.keys(example).sort()).toEqual([...CONFIG_KEYS].sort());
  });

  it('shows no secret: each is empty', () => {
    for (const key of SECRET_SETTINGS) expect(example[key], key).toBe('');
  });

  it('shows the defaults the service really uses', () => {
    const fromExample = loadConfig({ ...example, PUSH_AUTH: 'none' });
    const defaults = loadConfig({ PUSH_AUTH: 'none' });
    expect(fromExample).toEqual(defaults);
  });
});
