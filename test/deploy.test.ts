import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_KEYS, loadConfig } from '../src/config/index.js';

/** No Docker engine runs here; these keep docker-compose.yml, deploy/ and .env.example true by reading them. */

type Service = { command?: string[]; environment?: Record<string, string>; build?: { context: string; dockerfile: string }; image?: string; volumes?: string[]; deploy?: { replicas?: number } };
const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;

describe('docker-compose.yml', () => {
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

  it('provisions Grafana with the InfluxDB data source and the fleet dashboard', () => {
    const ds = parse(readFileSync('deploy/grafana/provisioning/datasources/influxdb.yml', 'utf8')) as {
      datasources: Array<{ uid: string; url: string; jsonData: { organization: string; defaultBucket: string } }>;
    };
    expect(ds.datasources[0]).toMatchObject({
      url: 'http://influxdb:8086',
      jsonData: { organization: 'fleet', defaultBucket: 'telematics' },
    });
    const dash = JSON.parse(readFileSync('deploy/grafana/dashboards/fleet.json', 'utf8')) as { panels: Array<{ datasource: { uid: string } }> };
    for (const p of dash.panels) expect(p.datasource.uid).toBe(ds.datasources[0]!.uid);
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
});

describe('deploy/kubernetes', () => {
  type Doc = { kind: string; data?: Record<string, string>; spec?: { template?: { spec: { terminationGracePeriodSeconds: number; containers: Array<{ args: string[]; env?: Array<{ name: string }>; readinessProbe: { httpGet: { path: string } }; livenessProbe: { httpGet: { path: string } } }> } } } };
  const docs = ['config.yaml', 'receiver.yaml', 'worker.yaml'].flatMap((f) =>
    parseAllDocuments(readFileSync(`deploy/kubernetes/${f}`, 'utf8')).map((d) => d.toJS() as Doc),
  );
  const config = docs.find((d) => d.kind === 'ConfigMap')!.data!;
  const deployments = docs.filter((d) => d.kind === 'Deployment');

  it('configures only settings the service knows', () => {
    for (const key of Object.keys(config)) expect(CONFIG_KEYS).toContain(key);
    for (const d of deployments) for (const e of d.spec!.template!.spec.containers[0]!.env ?? []) expect(CONFIG_KEYS).toContain(e.name);
  });

  it('runs one receiver and one worker deployment, probed on /readyz and /healthz, with more grace than SHUTDOWN_GRACE', () => {
    expect(deployments.map((d) => d.spec!.template!.spec.containers[0]!.args)).toEqual([['receiver'], ['worker']]);
    const grace = loadConfig({ PUSH_AUTH: 'none', SHUTDOWN_GRACE: config.SHUTDOWN_GRACE }).SHUTDOWN_GRACE;
    for (const d of deployments) {
      const pod = d.spec!.template!.spec;
      expect(pod.containers[0]!.readinessProbe.httpGet.path).toBe('/readyz');
      expect(pod.containers[0]!.livenessProbe.httpGet.path).toBe('/healthz');
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(grace);
    }
  });
});

describe('.env.example', () => {
  const lines = readFileSync('.env.example', 'utf8').split('\n').filter((l) => /^[A-Z_]+=/.test(l));
  const example = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

  it('lists every setting', () => {
    expect(Object.keys(example).sort()).toEqual([...CONFIG_KEYS].sort());
  });

  it('shows the defaults the service really uses', () => {
    const fromExample = loadConfig({ ...example, PUSH_AUTH: 'none' });
    const defaults = loadConfig({ PUSH_AUTH: 'none' });
    expect(fromExample).toEqual(defaults);
  });
});
