/** What the HTTP middleware suites ask with: fetch against a server of their own on 127.0.0.1. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Reply — a response's status, fields and body text. */
export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

/** get — `base` + `path` with `headers`, read whole. */
export async function get(base: string, path = '/', headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(`${base}${path}`, { headers });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** listen — `server` on a free port of 127.0.0.1; its base URL. */
export function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}
