/**
 * NATS logins for tests, minted on the spot: NKey users (nkeys.js, the
 * library nats.js signs with) and decentralized JWT auth (nats-jwt): an
 * operator, an account and its users, written as creds files, with the
 * server configuration lines that trust them (`resolver: MEMORY`).
 * Seeds and creds go to files in the test's scratch folder, as a user's
 * would; nothing is kept.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeAccount, encodeOperator, encodeUser, fmtCreds } from 'nats-jwt';
import { createAccount, createOperator, createUser, type KeyPair } from 'nkeys.js';

export interface NkeyUser {
  /** The public key (`U…`) a server configuration names. */
  readonly publicKey: string;
  /** A file holding the seed (`SU…`), as NATS_NKEY or --nats-nkey take it. */
  readonly seedFile: string;
}

/** makeNkeyUser — a new user NKey, its seed written to `<dir>/<name>.nk`. */
export function makeNkeyUser(dir: string, name: string): NkeyUser {
  const user = createUser();
  const seedFile = join(dir, `${name}.nk`);
  writeFileSync(seedFile, `${new TextDecoder().decode(user.getSeed())}\n`, { mode: 0o600 });
  return { publicKey: user.getPublicKey(), seedFile };
}

/** UserPermissions — a JWT user's subjects (absent: everything). */
export interface UserPermissions {
  readonly pub?: readonly string[];
  readonly sub?: readonly string[];
}

export interface JwtTrust {
  /** The lines of a nats-server configuration that trust the operator and preload its account. */
  readonly serverConfig: string;
  /** creds — a creds file for a new user `name` of the account, with `permissions`. */
  creds(name: string, permissions?: UserPermissions): Promise<string>;
}

/** Account limits: none (the JWT library's defaults allow no connection at all). */
const UNLIMITED = { conn: -1, subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, leaf: -1 };

async function credsFor(dir: string, name: string, account: KeyPair, permissions: UserPermissions): Promise<string> {
  const user = createUser();
  const jwt = await encodeUser(name, user, account, {
    ...(permissions.pub === undefined ? {} : { pub: { allow: [...permissions.pub], deny: [] } }),
    ...(permissions.sub === undefined ? {} : { sub: { allow: [...permissions.sub], deny: [] } }),
  });
  const file = join(dir, `${name}.creds`);
  writeFileSync(file, fmtCreds(jwt, user), { mode: 0o600 });
  return file;
}

/** makeJwtTrust — an operator and one account, and a way to mint users of it. */
export async function makeJwtTrust(dir: string): Promise<JwtTrust> {
  const operator = createOperator();
  const account = createAccount();
  const operatorJwt = await encodeOperator('tokenlease-test', operator);
  const accountJwt = await encodeAccount('tokenlease', account, { limits: UNLIMITED }, { signer: operator });
  return {
    serverConfig: `operator: ${operatorJwt}\nresolver: MEMORY\nresolver_preload: {\n  ${account.getPublicKey()}: ${accountJwt}\n}\n`,
    creds: (name, permissions = {}) => credsFor(dir, name, account, permissions),
  };
}

/** strangerCreds — a creds file of a user of an account no server here trusts. */
export async function strangerCreds(dir: string, name: string): Promise<string> {
  return credsFor(dir, name, createAccount(), {});
}
