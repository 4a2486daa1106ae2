import { describe, expect, it } from 'vitest';
import { TokenleaseError } from '@tokenlease/shared';
import { thrown } from '@tokenlease/shared/testing';
import { natsFlagsIntoEnv } from './nats-env.js';

describe('natsFlagsIntoEnv', () => {
  it('writes each NATS flag given into its variable, over what was there', () => {
    const env: NodeJS.ProcessEnv = { NATS_URL: 'nats://old:4222', NATS_CA: '/old/ca.pem', PATH: '/bin' };
    natsFlagsIntoEnv({ nats: 'nats://new:4222', 'nats-ca': '/new/ca.pem', duration: '5' }, env);
    expect(env).toEqual({ NATS_URL: 'nats://new:4222', NATS_CA: '/new/ca.pem', PATH: '/bin' });
  });

  it("replaces the environment's login whole when the flags name one", () => {
    const env: NodeJS.ProcessEnv = { NATS_USER: 'alice', NATS_PASSWORD: 'pw', NATS_CREDS: '' };
    natsFlagsIntoEnv({ 'nats-token': 't0k' }, env);
    expect(env).toEqual({ NATS_TOKEN: 't0k' });
    const fromUrl: NodeJS.ProcessEnv = { NATS_TOKEN: 'old' };
    natsFlagsIntoEnv({ nats: 'nats://bob:pw@h:4222' }, fromUrl);
    expect(fromUrl).toEqual({ NATS_URL: 'nats://bob:pw@h:4222' });
  });

  it('keeps the environment when no flag is given', () => {
    const env: NodeJS.ProcessEnv = { NATS_USER: 'alice', NATS_PASSWORD: 'pw' };
    natsFlagsIntoEnv({}, env);
    expect(env).toEqual({ NATS_USER: 'alice', NATS_PASSWORD: 'pw' });
  });

  it('refuses bad settings before anything starts, naming the flag', () => {
    const error = thrown(TokenleaseError, () => natsFlagsIntoEnv({ 'nats-cert': '/c.pem' }, {}));
    expect(error.code).toBe('invalid-nats-options');
    expect(error.message).toContain('--nats-key');
  });
});
