/**
 * Value forms: the zod schemas a command-line setting's value is checked
 * and typed with (command-line.ts), from the text of its flag or variable
 * (or, for the NATS settings an options object gives, a number).
 *
 * Rules:
 * - Every refusal of a form is one message, a predicate that follows the
 *   setting's name: `must be an integer in [0, 16]`, `is empty`. zod's
 *   schema-level `error` states it for the type and for every check, so
 *   no zod wording ever reaches a user.
 * - Each form carries, as zod metadata, the placeholder it reads as in
 *   `--help` (`<ms>`) and, unless its JSON Schema says it already (an
 *   integer's range, an enum's values), what it is in words
 *   (`description`): the reference pages are written from those.
 * - Integers are decimal digits only (no sign, exponent, hex or spaces)
 *   and safe integers.
 */
import { z } from 'zod';
import { poolNameProblem } from '../protocol/subjects.js';

/** ValueMeta — the metadata a value form carries: its `--help` placeholder and, where its JSON Schema does not say, what it is. */
export interface ValueMeta {
  readonly placeholder: string;
  readonly description?: string;
}

/** ValueForm — a setting's value form: any text (or number) in, the setting's value out. */
export type ValueForm<T> = z.ZodType<T, unknown>;

/** valueMeta — the placeholder and description of `form` (placeholder `value` when it carries none). */
export function valueMeta(form: z.ZodType): ValueMeta {
  const meta = form.meta();
  const placeholder = typeof meta?.['placeholder'] === 'string' ? meta['placeholder'] : 'value';
  return typeof meta?.description === 'string' ? { placeholder, description: meta.description } : { placeholder };
}

/**
 * integerIn — an integer in [min, max], from decimal digits or a number;
 * `unit` (e.g. `ms`) is its placeholder and is named in the refusal
 * (`must be an integer of ms in [100, 600000]`).
 */
export function integerIn(min: number, max: number, unit?: string): ValueForm<number> {
  const error = `must be an integer${unit === undefined ? '' : ` of ${unit}`} in [${min}, ${max}]`;
  return z
    .union(
      [
        z.number(),
        z
          .string()
          .regex(/^[0-9]{1,16}$/)
          .transform(Number),
      ],
      { error },
    )
    .pipe(z.int({ error }).min(min).max(max))
    .meta({ placeholder: unit ?? 'n' });
}

/** oneOf — one of `values`, as written. */
export function oneOf<const V extends readonly [string, ...string[]]>(values: V, placeholder: string): ValueForm<V[number]> {
  return z.enum(values, { error: `must be one of ${values.join(', ')}` }).meta({ placeholder });
}

/** text — any text, the empty one too (what it may be is checked elsewhere, or not at all); `description` says what it is. */
export function text(placeholder: string, description: string): ValueForm<string> {
  return z.string().meta({ placeholder, description });
}

/** nonEmptyText — any text but the empty one. */
export function nonEmptyText(placeholder: string, description: string): ValueForm<string> {
  return z.string({ error: 'is empty' }).min(1).meta({ placeholder, description });
}

/** An NKey seed (`SU…`, `SA…`, `SO…`: S, a role letter, base32) or a creds file's text, given where a path belongs. */
const SECRET_NOT_PATH = /(^|\s)S[A-Z][A-Z2-7]{40,}(\s|$)|-----BEGIN|eyJ[A-Za-z0-9_-]{20,}/;

/**
 * filePath — the path of a file (not empty). With `holdsSecret`, a value
 * that is the secret itself (an NKey seed, a creds file's text) rather
 * than its path is refused, as such.
 */
export function filePath(description: string, holdsSecret = false): ValueForm<string> {
  const path = z.string({ error: 'is empty' }).min(1);
  const checked = holdsSecret
    ? path.refine((value) => !SECRET_NOT_PATH.test(value), {
        error: 'holds a secret itself (an NKey seed or creds), not the path of a file holding it; give the path',
      })
    : path;
  return checked.meta({ placeholder: 'file', description });
}

/** matching — text that `pattern` matches whole; `error` is the predicate of a refusal. */
export function matching(pattern: RegExp, error: string, placeholder: string, description: string): ValueForm<string> {
  return z.string({ error }).regex(pattern).meta({ placeholder, description });
}

/** subjectToken — one NATS subject token (a pool name's rules: printable ASCII, no space, '.', '*' or '>'). */
export function subjectToken(placeholder: string, description: string): ValueForm<string> {
  return z
    .string()
    .superRefine((value, ctx) => {
      const problem = poolNameProblem(value);
      if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta({ placeholder, description });
}

/** subjectTokens — subject tokens joined by dots (a subject prefix, an inbox prefix). */
export function subjectTokens(placeholder: string, description: string): ValueForm<string> {
  return z
    .string({ error: "must be dot-joined subject tokens (printable ASCII, no '*' or '>')" })
    .refine((value) => value.split('.').every((token) => poolNameProblem(token) === null))
    .meta({ placeholder, description });
}

/** HostPort — where to listen: a host (brackets taken off an IPv6 address) and a port. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/** hostPort — `host:port` (`[::1]:9464` for IPv6), the port at most 65535. */
export function hostPort(): ValueForm<HostPort> {
  return z
    .string({ error: 'must be host:port (e.g. 127.0.0.1:9464)' })
    .regex(HOST_PORT)
    .refine((value) => Number(HOST_PORT.exec(value)?.[2]) <= 65535)
    .transform((value) => {
      const match = HOST_PORT.exec(value) as RegExpExecArray;
      return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port: Number(match[2]) };
    })
    .meta({ placeholder: 'host:port', description: '`host:port`; `[::1]:port` for IPv6' });
}
