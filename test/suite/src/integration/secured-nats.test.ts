/**
 * Every way into a secured NATS, on private nats-servers configured for
 * each: user and password, token, NKey, creds (operator JWT, resolver
 * MEMORY), TLS, mutual TLS. Certificates come from openssl, NKeys and JWTs
 * from nkeys.js and nats-jwt, all made here. For each, the coordinator CLI
 * (a child process, logged in through flags or the environment) serves and
 * an agent (logged in through Agent.connect's options or its URL) is
 * granted tokens; and a wrong credential fails fast: the CLI with one line
 * and status 1, the agent with its error code, well within 10 s, and no
 * secret (password, token, seed, key) anywhere in what either printed.
 * Nor the path of a credential file: every CLI (coordinator, relay,
 * operator) and the agent name the setting, never what it was given, even
 * when that is the seed itself or a file that cannot be read.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, AgentError, type AgentErrorCode, type AgentOptions } from '@tokenlease/agent';
import { openNatsConnection, resolveNatsOptions, NATS_ENV } from '@tokenlease/shared/nats';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { freePort } from '@tokenlease/harness/ports';
import { startConfiguredNats, type ConfiguredNats } from '@tokenlease/harness/nats-config';
import { makeJwtTrust, makeNkeyUser, strangerCreds } from '@tokenlease/harness/nats-logins';
import { coordinatorCliScript, operatorCliScript, relayCliScript } from '@tokenlease/harness/paths';
import { makePki, type Pki } from '@tokenlease/harness/pki';
import { spawnNode, stop, stopAll } from '@tokenlease/harness/processes';

/** Fails fast: well within this, ms. */
const FAIL_WITHIN_MS = 10_000;
const POOL = 'api';

/** Every NATS_* variable set empty (unset, to the CLI and the agent), so the parent's settings never leak in. */
const NO_NATS_ENV: NodeJS.ProcessEnv = Object.fromEntries(Object.values(NATS_ENV).map((name) => [name, '']));

interface Login {
  /** Flags and environment for the coordinator CLI, and its NATS_URL made from the server's (default: as it is). */
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly url?: (url: string) => string;
  /** Agent.connect options (the URL is the server's unless given). */
  readonly agent: (url: string) => AgentOptions;
}

interface Mechanism {
  readonly config: string;
  readonly good: Login;
  readonly wrong: Login & {
    /** What must appear nowhere in the output. */
    readonly secrets: readonly string[];
    readonly reason: RegExp;
    readonly agentCode: AgentErrorCode;
  };
}

const hex = (): string => randomBytes(8).toString('hex');
/** The seed line of a creds file, or the body of a PEM key: what would be the leak. */
const secretLine = (file: string, marker: RegExp): string =>
  readFileSync(file, 'utf8')
    .split('\n')
    .find((line) => marker.test(line)) ?? '';

async function mechanisms(dir: string, pki: Pki): Promise<Map<string, Mechanism>> {
  const password = `pw-${hex()}`;
  const wrongPassword = `nope-${hex()}`;
  const token = `tok-${hex()}`;
  const wrongToken = `badtok-${hex()}`;
  const nkey = makeNkeyUser(dir, 'nkey-user');
  const otherNkey = makeNkeyUser(dir, 'nkey-stranger');
  const trust = await makeJwtTrust(dir);
  const [coordinatorCreds, agentCreds, otherCreds] = await Promise.all([
    trust.creds('coordinator'),
    trust.creds('agent'),
    strangerCreds(dir, 'stranger'),
  ]);
  const tlsServer = `tls { cert_file: "${pki.serverCertFile}", key_file: "${pki.serverKeyFile}", timeout: 2 }\n`;
  const mtlsServer = `tls { cert_file: "${pki.serverCertFile}", key_file: "${pki.serverKeyFile}", ca_file: "${pki.caFile}", verify: true, timeout: 2 }\n`;
  const seedOf = (file: string): string => readFileSync(file, 'utf8').trim();
  return new Map<string, Mechanism>([
    [
      'user and password',
      {
        config: `authorization { users = [ { user: alice, password: "${password}" } ] }\n`,
        good: {
          args: ['--nats-user', 'alice', '--nats-password', password],
          env: {},
          agent: (url) => ({ natsUrl: url.replace('nats://', `nats://alice:${password}@`) }),
        },
        wrong: {
          // The issue's own example: the password inside NATS_URL.
          args: [],
          env: {},
          url: (url) => url.replace('nats://', `nats://alice:${wrongPassword}@`),
          agent: () => ({ nats: { user: 'alice', password: wrongPassword } }),
          secrets: [wrongPassword, password],
          reason: /authorization violation: the server refused the login/,
          agentCode: 'auth-failed',
        },
      },
    ],
    [
      'token',
      {
        config: `authorization { token: "${token}" }\n`,
        good: { args: [], env: { NATS_TOKEN: token }, agent: (url) => ({ natsUrl: url.replace('nats://', `nats://${token}@`) }) },
        wrong: {
          args: ['--nats-token', wrongToken],
          env: {},
          agent: (url) => ({ natsUrl: url.replace('nats://', `nats://${wrongToken}@`) }),
          secrets: [wrongToken, token],
          reason: /authorization violation/,
          agentCode: 'auth-failed',
        },
      },
    ],
    [
      'NKey',
      {
        config: `authorization { users = [ { nkey: ${nkey.publicKey} } ] }\n`,
        good: { args: ['--nats-nkey', nkey.seedFile], env: {}, agent: () => ({ nats: { nkeyFile: nkey.seedFile } }) },
        wrong: {
          args: [],
          env: { NATS_NKEY: otherNkey.seedFile },
          agent: () => ({ nats: { nkeyFile: otherNkey.seedFile } }),
          // The seed file's path is named by its setting only: it says where a secret lives.
          secrets: [seedOf(otherNkey.seedFile), seedOf(nkey.seedFile), otherNkey.seedFile],
          reason: /authorization violation/,
          agentCode: 'auth-failed',
        },
      },
    ],
    [
      'creds (JWT)',
      {
        config: trust.serverConfig,
        good: { args: [], env: { NATS_CREDS: coordinatorCreds }, agent: () => ({ nats: { credsFile: agentCreds } }) },
        wrong: {
          args: ['--nats-creds', otherCreds],
          env: {},
          agent: () => ({ nats: { credsFile: otherCreds } }),
          secrets: [secretLine(otherCreds, /^SU/), secretLine(coordinatorCreds, /^SU/), otherCreds],
          reason: /authorization violation/,
          agentCode: 'auth-failed',
        },
      },
    ],
    [
      'TLS',
      {
        config: tlsServer,
        good: {
          args: [],
          env: { NATS_CA: pki.caFile },
          agent: (url) => ({ natsUrl: url.replace('nats://', 'tls://'), nats: { caFile: pki.caFile } }),
        },
        wrong: {
          args: ['--nats-ca', pki.otherCaFile],
          env: {},
          agent: () => ({ nats: { caFile: pki.otherCaFile } }),
          secrets: [pki.otherCaFile],
          reason: /certificate problem: the server's certificate is not trusted/,
          agentCode: 'tls-failed',
        },
      },
    ],
    [
      'mutual TLS',
      {
        config: mtlsServer,
        good: {
          args: ['--nats-ca', pki.caFile, '--nats-cert', pki.clientCertFile, '--nats-key', pki.clientKeyFile],
          env: {},
          agent: () => ({ nats: { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile } }),
        },
        wrong: {
          // A certificate from a CA the server does not trust. With TLS 1.3 the server's refusal
          // comes after the client's side of the handshake, and nats.js then waits out its
          // connect timeout instead of reporting it: the line says so.
          args: [],
          env: { NATS_CA: pki.caFile, NATS_CERT: pki.strangerCertFile, NATS_KEY: pki.strangerKeyFile },
          agent: () => ({ nats: { caFile: pki.caFile, certFile: pki.strangerCertFile, keyFile: pki.strangerKeyFile } }),
          secrets: [
            secretLine(pki.strangerKeyFile, /^[A-Za-z0-9+/]{40,}/),
            secretLine(pki.clientKeyFile, /^[A-Za-z0-9+/]{40,}/),
            pki.strangerCertFile,
            pki.strangerKeyFile,
          ],
          reason: /timeout: no completed login within 5000 ms \(a server that refuses the client certificate ends this way\)$/,
          agentCode: 'unreachable',
        },
      },
    ],
  ]);
}

const NAMES = ['user and password', 'token', 'NKey', 'creds (JWT)', 'TLS', 'mutual TLS'];

/** runCli — the coordinator CLI with `args` and `env` (no NATS_* of the parent's); its status, stderr, stdout and run time. */
async function runCli(
  name: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stderr: string; stdout: string; elapsedMs: number }> {
  const startedMs = Date.now();
  const cli = spawnNode(`cli:${name}`, coordinatorCliScript(), args, { ...NO_NATS_ENV, ...env });
  const { code } = await cli.exited;
  return { code, stderr: cli.stderr().trim(), stdout: cli.lines.join('\n'), elapsedMs: Date.now() - startedMs };
}

describe('secured NATS: every login and TLS mechanism', () => {
  const dir = scratchDir();
  const servers = new Map<string, ConfiguredNats>();
  let all: Map<string, Mechanism>;
  let pki: Pki;

  beforeAll(async () => {
    pki = makePki(dir);
    all = await mechanisms(dir, pki);
    for (const [name, mechanism] of all) {
      servers.set(name, await startConfiguredNats(dir, name.replace(/\W+/g, '-'), { text: mechanism.config }));
    }
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await Promise.all([...servers.values()].map((server) => server.stop()));
  });

  const get = (name: string): { mechanism: Mechanism; url: string } => {
    const mechanism = all.get(name);
    const server = servers.get(name);
    if (mechanism === undefined || server === undefined) throw new Error(`no mechanism ${name}`);
    return { mechanism, url: server.url };
  };

  it.each(NAMES)('%s: the coordinator CLI serves and an agent is granted', async (name) => {
    const { mechanism, url } = get(name);
    const prefix = `tlsec${name.replace(/\W+/g, '')}`;
    const configPath = writeConfig(dir, { subjectPrefix: prefix, pools: { [POOL]: { capacity: 50, refill: '50/s', leaseTtlMs: 1000 } } });
    const env = { ...NO_NATS_ENV, NATS_URL: mechanism.good.url?.(url) ?? url, ...mechanism.good.env };
    const coordinator = await startCoordinator(url, configPath, { args: mechanism.good.args, env });
    const agent = await Agent.connect({ natsUrl: url, subjectPrefix: prefix, env: {}, ...mechanism.good.agent(url) });
    try {
      await expect(agent.limiter(POOL).take(1, { timeoutMs: 5000 })).resolves.toBe(true);
    } finally {
      await agent.close({ timeoutMs: 500 });
      await stop(coordinator);
    }
  });

  it.each(NAMES)('%s: a wrong credential fails fast, on one line, with status 1 and no secret', async (name) => {
    const { mechanism, url } = get(name);
    const { wrong } = mechanism;
    const configPath = writeConfig(dir, { pools: { [POOL]: { capacity: 10, refill: '10/s' } } });
    const { code, stderr, stdout, elapsedMs } = await runCli(name, ['--config', configPath, '--memory', ...wrong.args], {
      NATS_URL: wrong.url?.(url) ?? url,
      ...wrong.env,
    });
    expect(code, stderr).toBe(1);
    expect(elapsedMs).toBeLessThan(FAIL_WITHIN_MS);
    expect(stderr.split('\n'), stderr).toHaveLength(1);
    expect(stderr).toMatch(/^tokenlease-coordinator: cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+ \(/);
    expect(stderr).toMatch(wrong.reason);
    for (const secret of wrong.secrets) expect(`${stderr}\n${stdout}`.includes(secret), `${secret} printed`).toBe(false);

    const agentStartedMs = Date.now();
    const error: unknown = await Agent.connect({ natsUrl: url, env: {}, ...wrong.agent(url) }).then(
      async (agent) => {
        await agent.close();
        return new Error('connected');
      },
      (e: unknown) => e,
    );
    expect(Date.now() - agentStartedMs).toBeLessThan(FAIL_WITHIN_MS);
    expect(error).toBeInstanceOf(AgentError);
    expect((error as AgentError).code, (error as Error).message).toBe(wrong.agentCode);
    for (const secret of wrong.secrets) expect((error as Error).message.includes(secret)).toBe(false);
  });

  it('says within the connect timeout, on one line, that a mutual-TLS server got no client certificate (it used to hang)', async () => {
    const { url } = get('mutual TLS');
    const configPath = writeConfig(dir, { pools: { [POOL]: { capacity: 10, refill: '10/s' } } });
    const { code, stderr, elapsedMs } = await runCli(
      'mtls-no-cert',
      ['--config', configPath, '--memory', '--nats-connect-timeout-ms', '2000'],
      {
        NATS_URL: url,
        NATS_CA: pki.caFile,
      },
    );
    expect(code, stderr).toBe(1);
    // The connect timeout plus the process's start and exit: a hang (what this guards against) never ends;
    // a node process on a busy 2-core machine can take several seconds to start.
    expect(elapsedMs).toBeLessThan(2000 + 8000);
    expect(stderr.split('\n'), stderr).toHaveLength(1);
    expect(stderr).toMatch(
      /timeout: no completed login within 2000 ms \(a server that requires a client certificate and gets none ends this way: NATS_CERT or --nats-cert, NATS_KEY or --nats-key\)$/,
    );
  });

  it('says TLS was asked of a server without it, at once', async () => {
    const { url } = get('token');
    const error: unknown = await Agent.connect({ natsUrl: url, env: {}, nats: { caFile: pki.caFile } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentError);
    expect((error as AgentError).code).toBe('tls-failed');
    expect((error as AgentError).message).toMatch(/TLS handshake failure: TLS was asked for .* but the server does not offer it$/);
  });

  it("shows an unreachable server's URL without the password inside it (the issue's example)", async () => {
    const port = await freePort();
    const configPath = writeConfig(dir, { pools: { [POOL]: { capacity: 10, refill: '10/s' } } });
    const { code, stderr, stdout } = await runCli('unreachable', ['--config', configPath, '--memory'], {
      NATS_URL: `nats://alice:s3cret@127.0.0.1:${port}`,
    });
    expect(code, stderr).toBe(1);
    expect(stderr).toBe(
      `tokenlease-coordinator: cannot connect to NATS at nats://127.0.0.1:${port} (user "alice" with a password): connection refused`,
    );
    expect(`${stderr}${stdout}`).not.toContain('s3cret');
  });

  it('runs an agent on a nats.js connection its caller made, and leaves that connection open at close', async () => {
    const { mechanism, url } = get('user and password');
    const prefix = 'tlsecconn';
    const configPath = writeConfig(dir, { subjectPrefix: prefix, pools: { [POOL]: { capacity: 50, refill: '50/s', leaseTtlMs: 1000 } } });
    const coordinator = await startCoordinator(url, configPath, { args: mechanism.good.args, env: { ...NO_NATS_ENV, NATS_URL: url } });
    const login = mechanism.good.agent(url).natsUrl ?? url;
    const nc = await openNatsConnection(resolveNatsOptions([{ settings: { url: login }, names: NATS_ENV }]), { name: 'caller' });
    try {
      const agent = await Agent.connect({ connection: nc, subjectPrefix: prefix });
      await expect(agent.limiter(POOL).take(1, { timeoutMs: 5000 })).resolves.toBe(true);
      await agent.close({ timeoutMs: 500 });
      expect(nc.isClosed()).toBe(false);
    } finally {
      await nc.close();
      await stop(coordinator);
    }
  });
});

// Each case is a process of its own that exits at once: they run side by side.
describe.concurrent('what a credential setting was given is never printed', () => {
  const dir = scratchDir();
  /** Shaped like a user NKey seed (S, U, base32); no key of anyone's. */
  const SEED = 'SUAKYRHVIOREXV7EUZTBUXHZIFNDAVJJJR3FGFXZJ6GHUFMOU5DMWEWUYU';
  const marker = `secret-dir-${hex()}`;
  /** A path that cannot be read, holding a marker that must not be printed. */
  const missing = (name: string): string => join(dir, marker, name);
  const configPath = writeConfig(dir, { pools: { [POOL]: { capacity: 10, refill: '10/s' } } });
  const relayConfigPath = join(dir, 'relay.json');
  writeFileSync(
    relayConfigPath,
    JSON.stringify({ upstreamPrefix: 'tokenlease', subjectPrefix: 'tokenlease-edge', pools: { [POOL]: { capacity: 10, refill: '10/s' } } }),
  );
  const clis: ReadonlyArray<readonly [string, string, readonly string[]]> = [
    ['tokenlease-coordinator', coordinatorCliScript(), ['--config', configPath, '--memory']],
    ['tokenlease-relay', relayCliScript(), ['--config', relayConfigPath]],
    ['tokenlease', operatorCliScript(), ['pools']],
  ];
  const cases: ReadonlyArray<readonly [string, readonly string[], NodeJS.ProcessEnv, string, string]> = [
    ['the seed itself as --nats-nkey', ['--nats-nkey', SEED], {}, SEED, '--nats-nkey holds a secret itself'],
    ['the seed itself as NATS_NKEY', [], { NATS_NKEY: SEED }, SEED, 'NATS_NKEY holds a secret itself'],
    ['an unreadable --nats-nkey', ['--nats-nkey', missing('user.nk')], {}, marker, 'cannot read the file of --nats-nkey (ENOENT)'],
    ['an unreadable NATS_CREDS', [], { NATS_CREDS: missing('user.creds') }, marker, 'cannot read the file of NATS_CREDS (ENOENT)'],
    ['an unreadable --nats-ca', ['--nats-ca', missing('ca.pem')], {}, marker, 'cannot read the file of --nats-ca (ENOENT)'],
    [
      'an unreadable client certificate',
      ['--nats-cert', missing('c.pem'), '--nats-key', missing('c.key')],
      {},
      marker,
      'cannot read the file of --nats-cert (ENOENT)',
    ],
  ];

  afterAll(stopAll);

  it.each(clis.flatMap(([bin, script, base]) => cases.map((c) => [bin, c[0], script, base, c] as const)))(
    '%s: %s fails with status 2, naming the setting, not its value',
    async (bin, _name, script, base, [, args, env, secret, says]) => {
      const cli = spawnNode(`echo:${bin}`, script, [...base, ...args], { ...NO_NATS_ENV, NATS_URL: 'nats://127.0.0.1:1', ...env });
      const { code } = await cli.exited;
      const printed = `${cli.stderr()}\n${cli.lines.join('\n')}`;
      expect(code, printed).toBe(2);
      expect(printed).toContain(`${bin}: ${says}`);
      expect(printed.includes(secret), printed).toBe(false);
    },
  );

  it('tokenlease-coordinator: an unreadable Redis TLS file is named by its setting, not its path', async () => {
    const cli = spawnNode(
      'echo:redis',
      coordinatorCliScript(),
      ['--config', configPath, '--redis', 'rediss://127.0.0.1:1', '--redis-ca', missing('redis-ca.pem')],
      {
        ...NO_NATS_ENV,
        REDIS_URL: '',
      },
    );
    const { code } = await cli.exited;
    const printed = `${cli.stderr()}\n${cli.lines.join('\n')}`;
    expect(code, printed).toBe(2);
    expect(printed).toContain('cannot read the file of --redis-ca or REDIS_CA (ENOENT)');
    expect(printed.includes(marker), printed).toBe(false);
  });

  it.each<[string, AgentOptions, string]>([
    ['the seed itself as nats.nkeyFile', { nats: { nkeyFile: SEED } }, SEED],
    ['the seed itself as NATS_NKEY', { env: { NATS_NKEY: SEED } }, SEED],
    ['an unreadable nats.credsFile', { nats: { credsFile: missing('agent.creds') } }, marker],
    ['an unreadable nats.caFile', { nats: { caFile: missing('agent-ca.pem') } }, marker],
  ])('Agent.connect: %s is refused as invalid-argument without it, in the message or any cause', async (_name, options, secret) => {
    const error: unknown = await Agent.connect({ natsUrl: 'nats://127.0.0.1:1', env: {}, ...options }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentError);
    expect((error as AgentError).code).toBe('invalid-argument');
    for (let e: unknown = error; e instanceof Error; e = e.cause) expect(e.message.includes(secret), e.message).toBe(false);
  });
});
