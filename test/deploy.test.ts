import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_KEYS, loadConfig } from '../src/config/index.js';
import { bullKey } from '../src/ingest/queue/keys.js';

/** No Docker engine runs here; these keep docker-compose.yml, deploy/ and .env.example true by reading them. */

type Service = { healthcheck?: unknown; command?: string[]; environment?: Record<string, string>; build?: { context: string; dockerfile: string }; image?: string; volumes?: string[]; deploy?: { replicas?: number } };
const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;

describe('docker-compose.yml', () => {
  it('is valid compose, as docker-compose itself reads it', () => {
    const out = execFileSync('docker-compose', ['-f', 'docker-compose.yml', 'config', '-q'], { env: { ...process.env, PUSH_TOKENS: 'x', INFLUX_TOKEN: 'y' }, encoding: 'utf8' });
    expect(out).toBe('');
  });

  it('pins every image, checks every service’s health, bounds Redis memory, and has Prometheus load the alert rules', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.image, `${name} image`).toMatch(/:\d+\.\d+(\.\d+)?(-[a-z]+)?$|:v\d+\.\d+\.\d+$/);
      expect(s.healthcheck, `${name} healthcheck`).toBeDefined();
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

  it('shows the defaults the service really uses', () => {
    const fromExample = loadConfig({ ...example, PUSH_AUTH: 'none' });
    const defaults = loadConfig({ PUSH_AUTH: 'none' });
    expect(fromExample).toEqual(defaults);
  });
});
