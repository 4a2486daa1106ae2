/**
 * The demo's NATS: `$NATS_URL` if given (main.ts puts `--nats` there; it must answer);
 * otherwise nats://127.0.0.1:4222 if something listens there; otherwise a
 * private nats-server on a free port if the binary is installed (stopped at
 * exit); otherwise an error that says how to get one.
 */
import { redactUrlList } from '@tokenlease/shared';
import { findNatsServerBinary, startPrivateNats, type NatsHandle } from '@tokenlease/harness/nats';
import { isListening } from '@tokenlease/harness/ports';

const DEFAULT_URL = 'nats://127.0.0.1:4222';

function hostPort(url: string): { host: string; port: number } {
  const first = url.split(',')[0]?.trim() ?? url;
  const parsed = new URL(first.includes('://') ? first : `nats://${first}`);
  return { host: parsed.hostname, port: parsed.port === '' ? 4222 : Number(parsed.port) };
}

/** findNats — the server the demo uses: the URL keeps any credentials inside it, for the processes it starts. */
export async function findNats(): Promise<NatsHandle> {
  const given = process.env['NATS_URL'];
  const explicit = given === '' ? undefined : given;
  const url = explicit ?? DEFAULT_URL;
  const { host, port } = hostPort(url);
  if (await isListening(host, port, 1000)) return { url, source: 'env', stop: async () => {} };
  if (explicit !== undefined) throw new Error(`nothing answers at ${redactUrlList(url)} (from --nats or NATS_URL)`);
  if (findNatsServerBinary() !== null) {
    console.log(`nothing listens at ${DEFAULT_URL}: starting a private nats-server for this demo`);
    return startPrivateNats();
  }
  throw new Error(
    `no NATS server: nothing listens at ${DEFAULT_URL} and no nats-server binary is on PATH.\n` +
      '  Install one (Debian/Ubuntu: apt-get install nats-server; macOS: brew install nats-server),\n' +
      '  or run one with Docker (docker compose up -d nats, from this repository),\n' +
      '  or point the demo at a server: NATS_URL=nats://host:4222 npm start',
  );
}
