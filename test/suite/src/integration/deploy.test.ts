/**
 * The compose stack, checked without a Docker engine: docker-compose.yml,
 * the Prometheus configuration and rules, and the Grafana provisioning and
 * dashboard parse and refer to files, services, ports and datasources that
 * exist; every metric they name is one a coordinator (durable mode, so its
 * store metrics are there too), the relay (on the stack's own pools and
 * relay configuration) or the agent collector really exports; and
 * the Dockerfile's commands work when run directly: the coordinator stage
 * is rebuilt in a scratch folder (its COPY lines from this checkout, its
 * RUN lines as written, with a scratch npm cache) and its ENTRYPOINT, CMD
 * and HEALTHCHECK run against NATS; the demo stage's entry point runs a
 * compose agent's command.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentMetrics } from '@tokenlease/agent';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { AgentProcessConfig } from '@tokenlease/harness/agent-process';
import { scratchDir, startAgentProcess, startCoordinator, startRelay, writeConfig } from '@tokenlease/harness/fleet';
import { waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats } from '@tokenlease/harness/nats';
import { REPO_ROOT } from '@tokenlease/harness/paths';
import { freePort } from '@tokenlease/harness/ports';
import { spawnProcess, stop } from '@tokenlease/harness/processes';
import { provideRedis } from '@tokenlease/harness/redis';
import { scrape, waitForStatus } from '@tokenlease/harness/scrape';
import { parseDockerfile, type Stage } from '@tokenlease/harness/dockerfile';
import { serverForSuite } from '../servers.js';

const read = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');
const yamlOf = (path: string): Record<string, unknown> => parseYaml(read(path)) as Record<string, unknown>;

interface Service {
  readonly image?: string;
  readonly build?: { context: string; dockerfile: string; target: string };
  readonly command?: readonly string[];
  readonly entrypoint?: readonly string[];
  readonly volumes?: readonly string[];
  readonly depends_on?: readonly string[];
  readonly environment?: Readonly<Record<string, string>>;
  readonly ports?: readonly string[];
  readonly profiles?: readonly string[];
}

const compose = yamlOf('docker-compose.yml') as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = compose.services;
const dockerfile = parseDockerfile(read('deploy/coordinator/Dockerfile'));
const stage = (name: string): Stage => {
  const found = dockerfile.find((s) => s.name === name);
  if (found === undefined) throw new Error(`no stage ${name}`);
  return found;
};

/** metricNamesIn — the tokenlease_ metric names a PromQL expression reads (recording rules' names have colons and are not metrics). */
function metricNamesIn(expr: string): string[] {
  return [...expr.matchAll(/\btokenlease_[a-z0-9_]+\b/g)].map((m) => m[0]);
}

/** exposedNames — the series names of exposition text: each # TYPE line's name, with a histogram's _bucket, _sum and _count. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name as string);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name as string}${suffix}`);
  }
  return names;
}

describe('the compose stack, without Docker', () => {
  const nats = serverForSuite(provideNats);
  const redis = serverForSuite(provideRedis);

  it('sends the image build nothing installed or built here, and publishes no host port the sample apps of README.md and docs/ use', () => {
    const ignored = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    for (const pattern of ['**/node_modules', '**/dist', '.git']) expect(ignored).toContain(pattern);
    const hostPorts = Object.values(services).flatMap((service) => (service.ports ?? []).map((mapping) => mapping.split(':').at(-2)));
    // The sample apps live in docs/quickstart.md since the README became an entry point; read every page.
    const pages = [
      'README.md',
      ...readdirSync(join(REPO_ROOT, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .map((name) => join('docs', name)),
    ];
    const docs = pages.map((page) => readFileSync(join(REPO_ROOT, page), 'utf8')).join('\n');
    const samplePorts = [...docs.matchAll(/listen\((?:\{ port: )?(\d+)/g)].map((m) => m[1]);
    expect(samplePorts.length).toBeGreaterThan(0);
    for (const port of samplePorts) expect(hostPorts, `host port ${port ?? ''}`).not.toContain(port);
  });

  it('runs NATS, Redis append-only with fsync always, two durable coordinators, the demo agents, Prometheus and Grafana', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'agent-checkout',
        'agent-reports',
        'agent-search',
        'coordinator-1',
        'coordinator-2',
        'grafana',
        'nats',
        'nats-2',
        'nats-3',
        'prometheus',
        'redis',
        'relay',
      ].sort(),
    );
    // `docker compose up -d` starts the servers alone, as before; the profile "stack" adds the rest.
    for (const [name, service] of Object.entries(services))
      expect(service.profiles ?? [], name).toEqual(['nats', 'redis'].includes(name) ? [] : ['stack']);
    // NATS: three servers routed to each other in one cluster, and the coordinators, the relay and the agents spread over them.
    const natsServers = ['nats', 'nats-2', 'nats-3'];
    for (const name of natsServers) {
      const args = services[name]?.command ?? [];
      expect(args[args.indexOf('--cluster_name') + 1], name).toBe('tokenlease');
      expect(args[args.indexOf('--cluster') + 1], name).toBe('nats://0.0.0.0:6222');
      expect((args[args.indexOf('--routes') + 1] ?? '').split(',').sort(), name).toEqual(natsServers.map((n) => `nats://${n}:6222`).sort());
    }
    const serverOf = (service: Service): string | undefined => {
      const args = service.command ?? [];
      const url = args.includes('--nats') ? args[args.indexOf('--nats') + 1] : /"natsUrl":"([^"]+)"/.exec(args.join(' '))?.[1];
      return /^nats:\/\/([a-z0-9-]+):4222$/.exec(url ?? '')?.[1];
    };
    const clients = Object.entries(services).filter(([name]) => /^(coordinator|agent|relay)/.test(name));
    for (const [name, service] of clients) expect(natsServers, `${name} connects to a server of the cluster`).toContain(serverOf(service));
    expect(new Set(clients.map(([, service]) => serverOf(service))).size).toBe(natsServers.length);
    expect(serverOf(services['coordinator-1'] as Service)).not.toBe(serverOf(services['coordinator-2'] as Service));
    const redisCommand = services['redis']?.command?.join(' ') ?? '';
    expect(redisCommand).toMatch(/--appendonly yes/);
    expect(redisCommand).toMatch(/--appendfsync always/);
    const members = ['coordinator-1', 'coordinator-2'].map((name) => {
      const args = services[name]?.command ?? [];
      expect(args).toContain('--redis');
      expect(args[args.indexOf('--http') + 1]).toBe('0.0.0.0:9464');
      return args[args.indexOf('--member') + 1];
    });
    expect(new Set(members).size).toBe(2);
    for (const [name, service] of Object.entries(services)) {
      for (const dep of service.depends_on ?? []) expect(Object.keys(services), `${name} depends on ${dep}`).toContain(dep);
      for (const volume of service.volumes ?? []) {
        const [source] = volume.split(':');
        if (source?.startsWith('./')) expect(existsSync(join(REPO_ROOT, source)), `${name} mounts ${source}`).toBe(true);
        else expect(Object.keys(compose.volumes), `${name} mounts the volume ${source}`).toContain(source);
      }
      if (service.build !== undefined) {
        expect(existsSync(join(REPO_ROOT, service.build.context, service.build.dockerfile))).toBe(true);
        expect(dockerfile.map((s) => s.name)).toContain(service.build.target);
      }
    }
    // The relay runs the coordinator image with the relay's script, which that stage copies.
    const relay = services['relay'];
    expect(relay?.build?.target).toBe('coordinator');
    expect(existsSync(join(REPO_ROOT, relay?.entrypoint?.[1] ?? ''))).toBe(true);
    expect(stage('coordinator').instructions.some((i) => i.keyword === 'COPY' && i.args === 'coordinator/bin coordinator/bin')).toBe(true);
    expect(relay?.command?.[relay.command.indexOf('--http') + 1]).toBe('0.0.0.0:9464');
    const reports = JSON.parse(services['agent-reports']?.command?.[0] ?? '{}') as AgentProcessConfig;
    expect(reports.subjectPrefix).toBe((yamlOf('deploy/relay.yaml') as { subjectPrefix: string }).subjectPrefix);
    const home = services['grafana']?.environment?.['GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH'];
    expect(home).toBe('/var/lib/grafana/dashboards/tokenlease.json');
  });

  it('has Prometheus scrape every coordinator and agent on the port it serves, and Grafana read that Prometheus', () => {
    const prometheus = yamlOf('deploy/prometheus/prometheus.yml') as {
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    const targets = prometheus.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets));
    const agentPort = (name: string): number => (JSON.parse(services[name]?.command?.[0] ?? '{}') as { metricsPort: number }).metricsPort;
    expect(targets.sort()).toEqual(
      [
        'coordinator-1:9464',
        'coordinator-2:9464',
        'relay:9464',
        ...['agent-checkout', 'agent-search', 'agent-reports'].map((name) => `${name}:${agentPort(name)}`),
      ].sort(),
    );
    const mounted = services['prometheus']?.volumes?.map((v) => v.split(':')[1]) ?? [];
    for (const file of prometheus.rule_files) expect(mounted).toContain(file);
    const datasource = (yamlOf('deploy/grafana/provisioning/datasources/prometheus.yml') as { datasources: { uid: string; url: string }[] })
      .datasources[0];
    expect(datasource?.url).toBe('http://prometheus:9090');
    const provider = (yamlOf('deploy/grafana/provisioning/dashboards/tokenlease.yml') as { providers: { options: { path: string } }[] })
      .providers[0];
    expect(services['grafana']?.volumes).toContain(`./deploy/grafana/dashboards:${provider?.options.path}:ro`);
    const dashboard = JSON.parse(read('deploy/grafana/dashboards/tokenlease.json')) as {
      uid: string;
      panels: { datasource: { uid: string }; targets: { expr: string }[] }[];
    };
    expect(dashboard.panels.length).toBeGreaterThan(5);
    for (const panel of dashboard.panels) expect(panel.datasource.uid).toBe(datasource?.uid);
  });

  it('names only metrics the coordinator, the relay and the agent collector really export', async () => {
    const port = await freePort();
    const dir = scratchDir();
    // The stack's own pools and relay, on prefixes of this run's.
    const prefix = `tldeploy${process.pid}`;
    const configPath = writeConfig(dir, { ...yamlOf('deploy/pools.yaml'), subjectPrefix: prefix });
    const relayPath = join(dir, 'relay.json');
    writeFileSync(relayPath, JSON.stringify({ ...yamlOf('deploy/relay.yaml'), upstreamPrefix: prefix, subjectPrefix: `${prefix}-edge` }));
    const coordinator = await startCoordinator(nats().url, configPath, {
      redisUrl: redis().url,
      member: 'deploy-names',
      ownershipTtlMs: 1000,
      redisPrefix: `tldeploy${process.pid}-${Date.now()}`,
      http: `127.0.0.1:${port}`,
    });
    await waitForEvent(coordinator, { event: 'pool-owned', pool: 'api' }, 10_000);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const relayPort = await freePort();
    const relay = await startRelay(nats().url, relayPath, 'deploy-edge', { logLevel: 'info', http: `127.0.0.1:${relayPort}` });
    await waitForEvent(relay, { event: 'upstream-lease', pool: 'api' }, 10_000);
    const relayText = await (await fetch(`http://127.0.0.1:${relayPort}/metrics`)).text();
    expect(relayText).toMatch(/^tokenlease_relay_upstream_tokens\{pool="api"\} [1-9]/m);
    const registry = new Registry();
    new AgentMetrics(registry);
    const exported = new Set([...exposedNames(text), ...exposedNames(relayText), ...exposedNames(await registry.metrics())]);
    expect(exported).toContain('tokenlease_store_write_seconds_bucket');
    expect(exported).toContain('tokenlease_agent_round_trip_seconds_bucket');
    const rules = (yamlOf('deploy/prometheus/rules.yml') as { groups: { rules: { expr: string }[] }[] }).groups.flatMap((g) => g.rules);
    const dashboard = JSON.parse(read('deploy/grafana/dashboards/tokenlease.json')) as { panels: { targets: { expr: string }[] }[] };
    const exprs = [...rules.map((r) => r.expr), ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr))];
    const named = new Set(exprs.flatMap(metricNamesIn));
    expect(named.size).toBeGreaterThan(20);
    expect([...named].filter((name) => !exported.has(name))).toEqual([]);
    for (const expr of dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr))) expect(expr).toMatch(/tokenlease_|\bup\b/);
    await stop(relay);
    await stop(coordinator);
  });

  it('runs the coordinator stage of the Dockerfile: its commands, its entry point and its health check', async () => {
    const coordinatorStage = stage('coordinator');
    expect(coordinatorStage.instructions.some((i) => i.keyword === 'USER' && i.args === 'node')).toBe(true);
    const image = scratchDir();
    let workdir = image;
    const env: Record<string, string> = {};
    const cache = scratchDir();
    for (const { keyword, args } of coordinatorStage.instructions) {
      if (keyword === 'WORKDIR') workdir = join(image, args);
      else if (keyword === 'ENV') for (const [, k, v] of args.matchAll(/(\w+)=(\S+)/g)) env[k as string] = v as string;
      else if (keyword === 'COPY') {
        const from = /^--from=(\S+) /.exec(args);
        const words = (from === null ? args : args.slice(from[0].length)).split(/\s+/);
        const dest = words.pop() as string;
        for (const source of words) {
          // The build stage's /src is this checkout, built by npm test.
          const path = from === null ? join(REPO_ROOT, source) : join(REPO_ROOT, source.replace(/^\/src\//, ''));
          expect(existsSync(path), `COPY ${args}`).toBe(true);
          const target = dest.endsWith('/') ? join(workdir, dest, source.split('/').pop() as string) : join(workdir, dest);
          mkdirSync(join(target, '..'), { recursive: true });
          cpSync(path, target, { recursive: true });
        }
      } else if (keyword === 'RUN') {
        mkdirSync(workdir, { recursive: true });
        execFileSync('bash', ['-c', args], { cwd: workdir, env: { ...process.env, ...env, npm_config_cache: cache }, stdio: 'pipe' });
      }
    }
    expect(existsSync(join(image, 'app', 'node_modules', 'prom-client'))).toBe(true);
    expect(existsSync(join(image, 'app', 'node_modules', 'vitest'))).toBe(false);
    const entry = coordinatorStage.instructions.find((i) => i.keyword === 'ENTRYPOINT')?.json ?? [];
    const cmd = coordinatorStage.instructions.find((i) => i.keyword === 'CMD')?.json ?? [];
    const port = await freePort();
    const args = [
      ...cmd.map((a) =>
        a === '/etc/tokenlease/pools.yaml' ? join(REPO_ROOT, 'deploy', 'pools.yaml') : a === '0.0.0.0:9464' ? `127.0.0.1:${port}` : a,
      ),
    ];
    // The entry point's script is relative to the WORKDIR.
    const script = join(workdir, entry[1] as string);
    const child = spawnProcess(
      'docker-coordinator',
      entry[0] as string,
      [script, ...entry.slice(2), ...args, '--nats', nats().url, '--memory'],
      env,
    );
    await waitForStatus(`http://127.0.0.1:${port}/healthz`, 200, 15_000);
    const check = coordinatorStage.instructions.find((i) => i.keyword === 'HEALTHCHECK')?.json ?? [];
    const healthcheck = (): number => {
      try {
        execFileSync(
          check[0] as string,
          check.slice(1).map((a) => a.replace(':9464/', `:${port}/`)),
          { stdio: 'pipe' },
        );
        return 0;
      } catch {
        return 1;
      }
    };
    await waitForStatus(`http://127.0.0.1:${port}/readyz`, 200, 15_000);
    expect(healthcheck()).toBe(0);
    expect((await scrape(`http://127.0.0.1:${port}/metrics`)).some((s) => s.name === 'tokenlease_pool_capacity_tokens')).toBe(true);
    await stop(child);
    expect(healthcheck()).toBe(1);
  }, 240_000);

  it('runs the demo stage’s entry point with a compose agent’s command', async () => {
    const demo = stage('demo');
    const entry = demo.instructions.find((i) => i.keyword === 'ENTRYPOINT')?.json ?? [];
    expect(existsSync(join(REPO_ROOT, entry[1] as string))).toBe(true);
    const port = await freePort();
    const config = JSON.parse(services['agent-checkout']?.command?.[0] ?? '{}') as AgentProcessConfig;
    expect(config.metricsHost).toBe('0.0.0.0');
    const agent = await startAgentProcess({
      ...config,
      natsUrl: nats().url,
      subjectPrefix: `tldeploydemo${process.pid}`,
      durationMs: 1000,
      metricsPort: port,
    });
    const metrics = await scrape(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.some((s) => s.name === 'tokenlease_agent_limiters')).toBe(true);
    await agent.exited;
  });
});
