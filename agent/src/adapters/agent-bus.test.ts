import { describe, expect, it } from 'vitest';
import { ANONYMOUS_IDENTITY } from '@tokenlease/shared';
import { AgentError } from '../errors.js';
import { Agent } from './agent.js';
import { defaultInboxPrefix } from './agent-bus.js';

const SECRET = 'Sup3r-Secret';

async function refusal(connecting: Promise<unknown>): Promise<AgentError> {
  const error: unknown = await connecting.then(
    () => new Error('connected'),
    (e: unknown) => e,
  );
  if (!(error instanceof AgentError)) throw new Error(`expected an AgentError, got ${String(error)}`);
  return error;
}

describe('Agent.connect settings', () => {
  it.each<[string, Parameters<typeof Agent.connect>[0], RegExp]>([
    ['a user without a password', { nats: { user: 'alice' }, env: {} }, /nats\.password/],
    ['a password without a user, from the environment', { env: { NATS_PASSWORD: SECRET } }, /NATS_USER/],
    ['two logins among the options', { nats: { token: SECRET, credsFile: '/c' }, env: {} }, /more than one way to log in/],
    ['a certificate without its key', { nats: { certFile: '/c.pem' }, env: {} }, /nats\.keyFile/],
    ['a wildcard inbox prefix', { inboxPrefix: '_INBOX.>', env: {} }, /inboxPrefix/],
    ['a bad URL with a password inside', { natsUrl: `ws://a:${SECRET}@h`, env: {} }, /natsUrl/],
  ])('refuses %s before connecting, without the secret', async (_name, options, message) => {
    const error = await refusal(Agent.connect(options));
    expect(error.code).toBe('invalid-argument');
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain(SECRET);
  });
});

describe('defaultInboxPrefix', () => {
  it('gives an agent with an identity the inbox its user may read, and leaves an anonymous one the default', () => {
    expect(defaultInboxPrefix('checkout')).toBe('_INBOX_checkout');
    expect(defaultInboxPrefix(ANONYMOUS_IDENTITY)).toBeUndefined();
  });
});
