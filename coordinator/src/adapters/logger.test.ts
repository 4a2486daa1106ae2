import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';

const SECRET = 'Sup3r-Secret';

function capture(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, stream };
}

describe('createLogger', () => {
  it.each<[string, object]>([
    ['a password field', { password: SECRET }],
    ['a nested token', { connection: { token: SECRET } }],
    ['a seed two levels down', { nats: { auth: { seed: SECRET } } }],
    [
      'the arguments of a failed Redis AUTH',
      { err: Object.assign(new Error('WRONGPASS'), { command: { name: 'auth', args: ['app', SECRET] } }) },
    ],
    ['a lease secret', { request: { secret: SECRET } }],
  ])('redacts %s', (_name, fields) => {
    const { lines, stream } = capture();
    createLogger('info', stream).warn(fields, 'something happened');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(SECRET);
    expect(lines[0]).toContain('***');
  });

  it('leaves the rest of the line alone', () => {
    const { lines, stream } = capture();
    createLogger('info', stream).info({ event: 'serving', pools: [{ name: 'api' }] }, 'coordinator serving');
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ event: 'serving', pools: [{ name: 'api' }], msg: 'coordinator serving' });
  });
});
