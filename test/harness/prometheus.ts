import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnServer, stopProcess, waitFor, which } from '../../src/devstack/process.js';

/** A private Prometheus (Debian's `prometheus`) scraping `targets` every second, and its HTTP API. */
export interface LocalPrometheus {
  url: string;
  /** An instant query's vector, as [labels, value] pairs. */
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: number }>>;
  stop(): Promise<void>;
}

export async function startPrometheus(targets: readonly string[], opts: { ruleFiles?: readonly string[] } = {}): Promise<LocalPrometheus> {
  const bin = which('prometheus');
  if (!bin) throw new Error('prometheus not found: apt-get install -y prometheus');
  const dir = mkdtempSync(join(tmpdir(), 'telematics-prometheus-'));
  const port = await freePort();
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      ...(opts.ruleFiles?.length ? ['rule_files:', ...opts.ruleFiles.map((f) => `  - ${JSON.stringify(f)}`)] : []),
      'scrape_configs:',
      '  - job_name: telematics',
      `    static_configs: [{ targets: [${targets.map((t) => JSON.stringify(t)).join(', ')}] }]`,
    ].join('\n'),
  );
  const child = spawnServer(bin, [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`]);
  const url = `http://127.0.0.1:${port}`;
  await waitFor('prometheus', async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200, 30_000, child);
  return {
    url,
    async query(promql) {
      const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: promql })}`);
      const body = (await res.json()) as { status: string; error?: string; data: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
      if (body.status !== 'success') throw new Error(`PromQL ${promql}: ${body.error}`);
      return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    stop: () => stopProcess(child),
  };
}
