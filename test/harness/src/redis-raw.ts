/**
 * Raw reads of Redis for tests, beside the store rather than through it:
 * one command over a fresh connection, plain or TLS (a tiny RESP2 client; `ioredis` is
 * imported by the store's adapter alone, tools/lint.mjs), and the commands
 * of a private server's append-only file in the order Redis applied them.
 *
 * Why the append-only file: a fenced write that Redis refuses changes
 * nothing, so it is not in the file; a write Redis accepts is, in order,
 * with the claims and the lapses (store-history.ts replays them). It needs
 * a private Redis 7 (`startPrivateRedis`, `appendonly yes`) whose file was
 * not rewritten during the test.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';

export type Resp = string | number | null | Resp[];

/** REPLY_TIMEOUT_MS — how long redisCommand waits for a reply, ms. */
const REPLY_TIMEOUT_MS = 2000;

/** parseResp — one RESP2 value of `buf` from `at` (an error reply anywhere in it as the Error), or null when `buf` ends first. */
function parseResp(buf: Buffer, at: number): { value: Resp | Error; next: number } | null {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[at] ?? 0);
  const line = buf.toString('utf8', at + 1, eol);
  if (type === '+') return { value: line, next: eol + 2 };
  if (type === '-') return { value: new Error(line), next: eol + 2 };
  if (type === ':') return { value: Number(line), next: eol + 2 };
  const n = Number(line);
  if (type === '$') {
    if (n < 0) return { value: null, next: eol + 2 };
    if (buf.length < eol + 4 + n) return null;
    return { value: buf.toString('utf8', eol + 2, eol + 2 + n), next: eol + 4 + n };
  }
  if (type === '*') {
    if (n < 0) return { value: null, next: eol + 2 };
    const items: Resp[] = [];
    let next = eol + 2;
    for (let i = 0; i < n; i += 1) {
      const item = parseResp(buf, next);
      if (item === null || item.value instanceof Error) return item;
      items.push(item.value);
      next = item.next;
    }
    return { value: items, next };
  }
  throw new Error(`not RESP at byte ${at}: ${JSON.stringify(buf.toString('latin1', at, at + 40))}`);
}

/** RedisTlsFiles — the CA that signed a TLS Redis's certificate, and the client certificate it asks for. */
export interface RedisTlsFiles {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
}

/**
 * redisCommand — sends one command to the Redis at `url` on a fresh
 * connection (AUTH and SELECT first when the URL names them) and resolves
 * with the reply; rejects on an error reply, or after REPLY_TIMEOUT_MS.
 */
export function redisCommand(url: string, ...command: (string | number)[]): Promise<Resp> {
  return sendCommand(url, null, command);
}

/** redisTlsCommand — redisCommand over TLS: the server's certificate checked against `tls.caFile`, ours presented. */
export function redisTlsCommand(url: string, tls: RedisTlsFiles, ...command: (string | number)[]): Promise<Resp> {
  return sendCommand(url, tls, command);
}

function sendCommand(url: string, tls: RedisTlsFiles | null, command: readonly (string | number)[]): Promise<Resp> {
  const parsed = new URL(url);
  const commands: string[][] = [];
  if (parsed.password !== '') {
    const password = decodeURIComponent(parsed.password);
    commands.push(parsed.username === '' ? ['AUTH', password] : ['AUTH', decodeURIComponent(parsed.username), password]);
  }
  if (parsed.pathname.length > 1) commands.push(['SELECT', parsed.pathname.slice(1)]);
  commands.push(command.map(String));
  const payload = commands.map((c) => `*${c.length}\r\n${c.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join('')}`).join('');
  return new Promise((resolve, reject) => {
    const address = { host: parsed.hostname, port: Number(parsed.port === '' ? 6379 : parsed.port) };
    const socket: Socket =
      tls === null
        ? createConnection(address)
        : tlsConnect({ ...address, ca: readFileSync(tls.caFile), cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) });
    let buf = Buffer.alloc(0);
    socket.setTimeout(REPLY_TIMEOUT_MS, () => socket.destroy(new Error(`Redis at ${parsed.host} did not answer ${command[0]}`)));
    socket.once('error', reject);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      let at = 0;
      for (let i = 0; i < commands.length; i += 1) {
        const reply = parseResp(buf, at);
        if (reply === null) return;
        if (reply.value instanceof Error || i === commands.length - 1) {
          socket.destroy();
          return reply.value instanceof Error ? reject(reply.value) : resolve(reply.value);
        }
        at = reply.next;
      }
    });
    socket.write(payload);
  });
}

async function configGet(url: string, name: string): Promise<string> {
  const reply = await redisCommand(url, 'CONFIG', 'GET', name);
  const value = Array.isArray(reply) ? reply[1] : undefined;
  if (typeof value !== 'string') throw new Error(`CONFIG GET ${name}: unexpected reply ${JSON.stringify(reply)}`);
  return value;
}

/**
 * readAppendOnlyCommands — every command in the append-only file of the
 * (private, Redis 7) server at `url`, in the order Redis applied them.
 * Throws unless the file holds the whole history (no rewrite happened).
 */
export async function readAppendOnlyCommands(url: string): Promise<string[][]> {
  const dir = join(await configGet(url, 'dir'), await configGet(url, 'appenddirname'));
  const manifestPath = join(dir, `${await configGet(url, 'appendfilename')}.manifest`);
  if (!existsSync(manifestPath)) throw new Error(`no append-only manifest at ${manifestPath}: is appendonly on (Redis 7)?`);
  const files = readFileSync(manifestPath, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [, name, , seq, , type] = line.trim().split(/\s+/);
      return { name: name ?? '', seq: Number(seq), type: type ?? '' };
    });
  if (files.some((f) => f.type === 'b' && f.seq !== 1))
    throw new Error(`the append-only file was rewritten (${manifestPath}): the write history is incomplete`);
  const commands: string[][] = [];
  for (const file of files.filter((f) => f.type === 'i')) {
    const buf = readFileSync(join(dir, file.name));
    let at = 0;
    while (at < buf.length) {
      const item = parseResp(buf, at);
      if (item === null) throw new Error(`${file.name}: truncated at byte ${at}`);
      if (!Array.isArray(item.value)) throw new Error(`${file.name}: a command that is not an array at byte ${at}`);
      commands.push(item.value.map(String));
      at = item.next;
    }
  }
  return commands;
}
