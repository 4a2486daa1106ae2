import { describe, expect, it } from 'vitest';
import { thrown } from '../testing/thrown.js';
import { TokenleaseError } from '../errors.js';
import { natsFlagLayer } from './nats-flags.js';
import {
  DEFAULT_NATS_URL,
  describeNatsLogin,
  NATS_CONNECT_TIMEOUT_MS_DEFAULT,
  natsEnvLayer,
  natsOptionsLayer,
  resolveNatsOptions,
  type NatsLayer,
  type NatsSettings,
} from './nats-options.js';

const SECRET = 'Sup3r-Secret';
/** Shaped like a user NKey seed (S, U, base32); no key of anyone's. */
const SEED = 'SUAKYRHVIOREXV7EUZTBUXHZIFNDAVJJJR3FGFXZJ6GHUFMOU5DMWEWUYU';
const CREDS_TEXT = `-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${SEED}\n------END USER NKEY SEED------\n`;
const env = (vars: Record<string, string>): NatsLayer => natsEnvLayer(vars);
const flags = (values: Record<string, string | boolean>): NatsLayer => natsFlagLayer(values);
const options = (settings: NatsSettings): NatsLayer => natsOptionsLayer(settings);

describe('resolveNatsOptions', () => {
  it('defaults to the local server, no login, no TLS, the client inbox and the default timeout', () => {
    expect(resolveNatsOptions([env({})])).toEqual({
      servers: [DEFAULT_NATS_URL],
      auth: { kind: 'none' },
      tls: null,
      inboxPrefix: null,
      connectTimeoutMs: NATS_CONNECT_TIMEOUT_MS_DEFAULT,
      sources: {},
    });
  });

  it.each<[string, NatsLayer[], object]>([
    [
      'user and password from the environment',
      [env({ NATS_USER: 'alice', NATS_PASSWORD: SECRET })],
      { kind: 'user-password', user: 'alice', password: SECRET },
    ],
    [
      'user and password inside the URL',
      [env({ NATS_URL: `nats://alice:${SECRET}@h:4222` })],
      { kind: 'user-password', user: 'alice', password: SECRET },
    ],
    [
      'a percent-encoded password',
      [env({ NATS_URL: 'nats://alice:p%40ss%2Fw@h' })],
      { kind: 'user-password', user: 'alice', password: 'p@ss/w' },
    ],
    ['a token inside the URL', [env({ NATS_URL: `nats://${SECRET}@h` })], { kind: 'token', token: SECRET }],
    ['a token from the environment', [env({ NATS_TOKEN: SECRET })], { kind: 'token', token: SECRET }],
    ['an NKey seed file from a flag', [flags({ 'nats-nkey': '/k/seed' }), env({})], { kind: 'nkey', seedFile: '/k/seed' }],
    ['a creds file from the environment', [env({ NATS_CREDS: '/k/u.creds' })], { kind: 'creds', credsFile: '/k/u.creds' }],
    [
      'flags win whole over the environment',
      [flags({ 'nats-token': 't' }), env({ NATS_USER: 'a', NATS_PASSWORD: 'b' })],
      { kind: 'token', token: 't' },
    ],
    [
      'credentials in the flag URL win over the environment',
      [flags({ nats: 'nats://t@h' }), env({ NATS_CREDS: '/c' })],
      { kind: 'token', token: 't' },
    ],
    ['an unused NATS_URL brings no credentials', [flags({ nats: 'nats://h' }), env({ NATS_URL: 'nats://x:y@h' })], { kind: 'none' }],
    ['empty variables are unset', [env({ NATS_USER: '', NATS_PASSWORD: '', NATS_TOKEN: '' })], { kind: 'none' }],
    ['agent options over the environment', [options({ token: 't' }), env({ NATS_CREDS: '/c' })], { kind: 'token', token: 't' }],
  ])('login: %s', (_name, layers, auth) => {
    expect(resolveNatsOptions(layers).auth).toEqual(auth);
  });

  it('strips credentials from the servers, keeps schemes and fills default ports', () => {
    const resolved = resolveNatsOptions([env({ NATS_URL: ` nats://a:${SECRET}@h1:4333 , tls://a:${SECRET}@h2,h3 ,[::1]:5` })]);
    expect(resolved.servers).toEqual(['nats://h1:4333', 'tls://h2:4222', 'nats://h3:4222', 'nats://[::1]:5']);
    expect(resolved.tls).toEqual({ caFile: null, certFile: null, keyFile: null });
    expect(JSON.stringify(resolved.servers)).not.toContain(SECRET);
  });

  it('takes TLS files field by field, a flag over its variable', () => {
    const resolved = resolveNatsOptions([
      flags({ 'nats-cert': '/f/c.pem', 'nats-key': '/f/c.key' }),
      env({ NATS_CA: '/e/ca.pem', NATS_CERT: '/e/c.pem', NATS_KEY: '/e/c.key' }),
    ]);
    expect(resolved.tls).toEqual({ caFile: '/e/ca.pem', certFile: '/f/c.pem', keyFile: '/f/c.key' });
    expect(resolved.sources).toMatchObject({ caFile: 'NATS_CA', certFile: '--nats-cert', keyFile: '--nats-key' });
  });

  it('takes an inbox prefix and a connect timeout, else the defaults given', () => {
    expect(resolveNatsOptions([env({ NATS_INBOX_PREFIX: '_INBOX_alice', NATS_CONNECT_TIMEOUT_MS: '750' })])).toMatchObject({
      inboxPrefix: '_INBOX_alice',
      connectTimeoutMs: 750,
    });
    expect(resolveNatsOptions([env({})], { inboxPrefix: '_INBOX_bob', url: 'nats://x:1' })).toMatchObject({
      inboxPrefix: '_INBOX_bob',
      servers: ['nats://x:1'],
    });
  });

  it.each<[string, NatsLayer[], string]>([
    ['a user without a password', [env({ NATS_USER: 'alice' })], 'NATS_PASSWORD'],
    ['a password without a user', [env({ NATS_PASSWORD: SECRET })], 'NATS_USER'],
    ['two mechanisms in one layer', [env({ NATS_TOKEN: SECRET, NATS_CREDS: '/c' })], 'NATS_CREDS'],
    [
      'URL credentials and a user in one layer',
      [env({ NATS_URL: `nats://${SECRET}@h`, NATS_USER: 'a', NATS_PASSWORD: SECRET })],
      'NATS_URL',
    ],
    ['servers with different credentials', [env({ NATS_URL: `nats://a:${SECRET}@h1,nats://b:${SECRET}@h2` })], 'NATS_URL'],
    ['a password without a user in the URL', [env({ NATS_URL: `nats://:${SECRET}@h` })], 'NATS_URL'],
    ['a bad percent-encoding', [env({ NATS_URL: `nats://a:${SECRET}%zz@h` })], 'NATS_URL'],
    ['a websocket URL', [flags({ nats: `ws://a:${SECRET}@h:80` })], '--nats'],
    ['a URL with a path', [env({ NATS_URL: 'nats://h:4222/x' })], 'NATS_URL'],
    ['an unparseable URL', [env({ NATS_URL: `nats://a:${SECRET}@h:99999` })], 'NATS_URL'],
    ['no server at all', [env({ NATS_URL: ' , ' })], 'NATS_URL'],
    ['a certificate without its key', [flags({ 'nats-cert': '/c.pem' })], '--nats-key'],
    ['a key without its certificate', [env({ NATS_KEY: '/c.key' })], 'NATS_CERT'],
    ['an empty token flag', [flags({ 'nats-token': '' })], '--nats-token'],
    ['an empty creds flag', [flags({ 'nats-creds': '' })], '--nats-creds'],
    ['a wildcard inbox prefix', [env({ NATS_INBOX_PREFIX: '_INBOX.*' })], 'NATS_INBOX_PREFIX'],
    ['an empty inbox token', [env({ NATS_INBOX_PREFIX: 'a..b' })], 'NATS_INBOX_PREFIX'],
    ['a fractional timeout', [env({ NATS_CONNECT_TIMEOUT_MS: '1.5' })], 'NATS_CONNECT_TIMEOUT_MS'],
    ['a timeout too short', [flags({ 'nats-connect-timeout-ms': '5' })], '--nats-connect-timeout-ms'],
    ['a timeout from options out of range', [options({ connectTimeoutMs: 10 ** 9 })], 'nats.connectTimeoutMs'],
    ['an NKey seed given as --nats-nkey itself', [flags({ 'nats-nkey': SEED })], '--nats-nkey'],
    ['an NKey seed given as NATS_NKEY itself', [env({ NATS_NKEY: SEED })], 'NATS_NKEY'],
    ['an NKey seed given as nats.nkeyFile itself', [options({ nkeyFile: `${SEED}\n` })], 'nats.nkeyFile'],
    ["a creds file's text given as --nats-creds", [flags({ 'nats-creds': CREDS_TEXT })], '--nats-creds'],
  ])('refuses %s, naming the setting and no secret', (_name, layers, field) => {
    const error = thrown(TokenleaseError, () => resolveNatsOptions(layers));
    expect(error.code).toBe('invalid-nats-options');
    expect(error.field).toBe(field);
    expect(error.message).toContain(field);
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain(SEED);
    expect(error.message).not.toContain('BEGIN');
  });
});

describe('describeNatsLogin', () => {
  it.each<[NatsLayer[], string]>([
    [[env({})], 'no credentials'],
    [[env({ NATS_USER: 'alice', NATS_PASSWORD: SECRET })], 'user "alice" with a password'],
    [[env({ NATS_TOKEN: SECRET })], 'a token'],
    [[env({ NATS_NKEY: '/secret/s.nk' })], 'the NKey seed file of NATS_NKEY'],
    [[flags({ 'nats-nkey': '/secret/s.nk' })], 'the NKey seed file of --nats-nkey'],
    [[env({ NATS_CREDS: '/secret/u.creds', NATS_CA: '/secret/ca.pem' })], 'the creds file of NATS_CREDS, TLS trusting the CA of NATS_CA'],
    [
      [options({ caFile: '/secret/ca.pem' }), env({ NATS_URL: 'tls://h', NATS_CERT: '/secret/c.pem', NATS_KEY: '/secret/c.key' })],
      'no credentials, TLS trusting the CA of nats.caFile, the client certificate of NATS_CERT',
    ],
  ])('%#: %s', (layers, text) => {
    const described = describeNatsLogin(resolveNatsOptions(layers));
    expect(described).toBe(text);
    expect(described).not.toContain(SECRET);
    // Files are named by their setting: a path says where a secret lives, and may be the secret given by mistake.
    expect(described).not.toContain('/secret/');
  });
});

describe('sources', () => {
  it('names where the login in use came from, and only that', () => {
    const resolved = resolveNatsOptions([options({ nkeyFile: '/s.nk' }), env({ NATS_TOKEN: SECRET, NATS_CA: '/ca' })]);
    expect(resolved.sources).toEqual({ nkeyFile: 'nats.nkeyFile', caFile: 'NATS_CA' });
  });
});
