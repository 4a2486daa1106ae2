/**
 * The coordinator CLI: one clear line and a distinct exit status for each
 * way it can fail to start, and a clean exit on SIGTERM.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { hasEvent } from '@tokenlease/harness/log-events';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { readFileSync } from 'node:fs';
import { coordinatorCliScript, operatorCliScript, relayCliScript, REPO_ROOT } from '@tokenlease/harness/paths';
import { freePort } from '@tokenlease/harness/ports';
import { spawnNode, stopAll } from '@tokenlease/harness/processes';

async function run(args: string[], script = coordinatorCliScript()): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawnNode('cli', script, args);
  const { code } = await child.exited;
  return { code, stderr: child.stderr().trim(), stdout: child.lines.join('\n') };
}

describe('the three bins of @tokenlease/coordinator', () => {
  const version = (JSON.parse(readFileSync(`${REPO_ROOT}/coordinator/package.json`, 'utf8')) as { version: string }).version;
  it.each([
    ['tokenlease-coordinator', coordinatorCliScript()],
    ['tokenlease-relay', relayCliScript()],
    ['tokenlease', operatorCliScript()],
  ])('%s: --version and -V print the package version; --help shows usage, examples and where the docs are', async (bin, script) => {
    for (const flag of ['--version', '-V']) expect(await run([flag], script)).toEqual({ code: 0, stderr: '', stdout: `${bin} ${version}` });
    const help = await run(['--help'], script);
    expect(help.code).toBe(0);
    expect(help.stderr).toBe('');
    expect(help.stdout).toMatch(/^usage: /);
    expect(help.stdout).toMatch(new RegExp(`examples:\\n  (\\S+=\\S+ )?${bin} `));
    expect(help.stdout).toMatch(/^docs: /m);
  });
});

describe('tokenlease-coordinator CLI', () => {
  let nats: NatsHandle;
  const dir = scratchDir();
  beforeAll(async () => {
    nats = await provideNats();
  });
  afterAll(async () => {
    await stopAll();
    await nats.stop();
  });

  it('refuses a missing --config with usage, status 2', async () => {
    const { code, stderr } = await run([]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/--config is required/);
  });

  it('names the file, pool and field of a bad configuration, on one line, status 2', async () => {
    const path = writeConfig(dir, { pools: { api: { capacity: 10, refill: 'fast' } } });
    const { code, stderr } = await run(['--config', path]);
    expect(code).toBe(2);
    expect(stderr.split('\n')).toHaveLength(1);
    expect(stderr).toContain(path);
    expect(stderr).toContain('pool "api"');
    expect(stderr).toContain('field "refill"');
  });

  it('reports an unreadable file and invalid YAML on one line', async () => {
    const missing = await run(['--config', join(dir, 'nope.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read the configuration file \(ENOENT\)/);
    const yamlPath = join(dir, 'broken.yaml');
    writeFileSync(yamlPath, 'pools: [unclosed\n');
    const broken = await run(['--config', yamlPath]);
    expect(broken.code).toBe(2);
    expect(broken.stderr.split('\n')).toHaveLength(1);
    expect(broken.stderr).toMatch(/not valid YAML/);
  });

  it('refuses a grant signing key that is not one, status 2, naming neither its path nor its text', async () => {
    const config = writeConfig(dir, { pools: { api: { capacity: 10, refill: '1/s' } } });
    const textPath = join(dir, 'secret-key-name.pem');
    writeFileSync(textPath, 'my-secret-passphrase\n');
    for (const [path, why] of [
      [textPath, /--grant-signing-key: the file does not hold a private key in PEM/],
      [join(dir, 'secret-missing-name.pem'), /--grant-signing-key: the grant signing key file could not be read/],
    ] as const) {
      const { code, stderr } = await run(['--config', config, '--memory', '--grant-signing-key', path]);
      expect(code).toBe(2);
      expect(stderr).toMatch(why);
      expect(stderr.split('\n')).toHaveLength(1);
      expect(stderr).not.toMatch(/secret-key-name|secret-missing-name|my-secret/);
    }
  });

  it('says it cannot reach NATS, status 1, without a stack trace', async () => {
    const path = writeConfig(dir, { pools: { api: { capacity: 10, refill: '10/s' } } });
    const port = await freePort();
    const { code, stderr } = await run(['--config', path, '--nats', `nats://127.0.0.1:${port}`]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+ \(no credentials\): connection refused$/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('reads YAML and shuts down cleanly on SIGTERM', async () => {
    const yamlPath = join(dir, 'pools.yaml');
    writeFileSync(yamlPath, 'subjectPrefix: tlcli\npools:\n  api:\n    capacity: 10\n    refill: 10/s\n');
    const coordinator = await startCoordinator(nats.url, yamlPath);
    coordinator.proc.kill('SIGTERM');
    const { code, signal } = await coordinator.exited;
    expect({ code, signal, stderr: coordinator.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
    expect(hasEvent(coordinator, { event: 'stopped' })).toBe(true);
  });
});
