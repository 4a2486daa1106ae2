/**
 * A Dockerfile read as data, for tests that check one without a Docker
 * engine: stages (`FROM image AS name`) and their instructions, each with
 * its keyword, its argument text, and the exec form (`["node", …]`) parsed
 * where there is one (for HEALTHCHECK, the command after its CMD).
 * Line continuations and comments are handled; nothing else of the syntax
 * (heredocs, parser directives) is.
 */

export interface Instruction {
  readonly keyword: string;
  readonly args: string;
  /** The exec form of the command, or null for the shell form. */
  readonly json: readonly string[] | null;
}

export interface Stage {
  readonly name: string;
  readonly image: string;
  readonly instructions: readonly Instruction[];
}

function execForm(text: string): string[] | null {
  if (!text.startsWith('[')) return null;
  const value: unknown = JSON.parse(text);
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new Error(`not an exec form: ${text}`);
  return value;
}

/** parseDockerfile — the stages of a Dockerfile's text; throws on an instruction before the first FROM. */
export function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(pending + line);
    pending = '';
  }
  const stages: { name: string; image: string; instructions: Instruction[] }[] = [];
  for (const line of logical) {
    const [keyword = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (keyword.toUpperCase() === 'FROM') {
      const match = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (match === null) throw new Error(`bad FROM: ${line}`);
      stages.push({ image: match[1] as string, name: match[2] ?? String(stages.length), instructions: [] });
      continue;
    }
    const current = stages[stages.length - 1];
    if (current === undefined) throw new Error(`${keyword} before any FROM`);
    const upper = keyword.toUpperCase();
    const command = upper === 'HEALTHCHECK' ? args.slice(args.indexOf('CMD ') + 4) : args;
    current.instructions.push({ keyword: upper, args, json: execForm(command) });
  }
  return stages;
}
