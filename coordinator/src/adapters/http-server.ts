/**
 * The coordinator's HTTP endpoint (`--http host:port`, off by default): a
 * small router over node:http that moves bytes. It decides nothing: each
 * route's answer comes from operations.ts.
 *
 * Every response says `X-Content-Type-Options: nosniff` and is never
 * cached; HTML answers carry a Content-Security-Policy that allows only
 * the page's own script, style and data (no inline script, no other
 * origin), a second line of defence behind a page that sets names as text.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { checkSetting, type HostPort } from '@tokenlease/shared/command-line';
import { HTTP } from '../core/command-lines.js';
import { CoordinatorError } from '../errors.js';

/** HttpAnswer — a status, a content type and a body. */
export interface HttpAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/** Route — answers a GET of one path. */
export type Route = () => Promise<HttpAnswer> | HttpAnswer;

export interface HttpEndpoint {
  /** url — `http://host:port` as bound (the port the system chose for port 0). */
  readonly url: string;
  close(): Promise<void>;
}

/** CSP — what the status page may load: itself only. */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * parseListen — `host:port` of `--http` (`[::1]:9464` for IPv6), by the
 * setting's form; throws CoordinatorError('config-invalid') for anything else.
 */
export function parseListen(text: string): HostPort {
  const checked = checkSetting(HTTP, '--http', text);
  if (!checked.ok) throw new CoordinatorError('config-invalid', checked.message);
  return checked.value;
}

/** startHttpEndpoint — serves `routes` (path → answer) on `host:port`; rejects when it cannot listen. */
export async function startHttpEndpoint(host: string, port: number, routes: ReadonlyMap<string, Route>): Promise<HttpEndpoint> {
  const server: Server = createServer((req, res) => void answer(routes, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(routes: ReadonlyMap<string, Route>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const route = routes.get(path);
  let result: HttpAnswer;
  if (req.method !== 'GET' && req.method !== 'HEAD') result = text(405, 'only GET\n');
  else if (route === undefined) result = text(404, 'not found\n');
  else {
    try {
      result = await route();
    } catch (error) {
      result = text(500, `internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
  const headers: Record<string, string> = {
    'Content-Type': result.contentType,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  };
  if (result.contentType.startsWith('text/html')) {
    headers['Content-Security-Policy'] = CSP;
    headers['X-Frame-Options'] = 'DENY';
  }
  if (req.method === 'GET' && result.status === 405) headers['Allow'] = 'GET, HEAD';
  res.writeHead(result.status, headers);
  res.end(req.method === 'HEAD' ? undefined : result.body);
}

/** text — a plain-text answer. */
export function text(status: number, body: string): HttpAnswer {
  return { status, contentType: 'text/plain; charset=utf-8', body };
}

/** json — a JSON answer. */
export function json(status: number, value: unknown): HttpAnswer {
  return { status, contentType: 'application/json; charset=utf-8', body: `${JSON.stringify(value)}\n` };
}
