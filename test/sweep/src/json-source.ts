/**
 * The source text of a value in a JSON line. JSON.parse keeps a number as a
 * double, which past 2^43 ms (the year 2248) or 2^33 s no longer holds every
 * µs; a time that large is read again from its digits in the line.
 *
 * Guarantees: for a text JSON.parse has accepted, `memberText` returns the
 * exact text of the value at `names` (own members of nested objects; of a
 * name given twice, the last, as JSON.parse keeps it), or undefined when
 * there is none. It copies no more than that value's text.
 */

/** SPACE — JSON's whitespace between tokens. */
const SPACE = ' \t\n\r';

function skipSpace(text: string, at: number): number {
  let i = at;
  while (i < text.length && SPACE.includes(text[i] ?? '')) i += 1;
  return i;
}

/** stringEnd — the index just past the string that starts (with its quote) at `at`. */
function stringEnd(text: string, at: number): number {
  let i = at + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

/** valueEnd — the index just past the value that starts at `at`. */
function valueEnd(text: string, at: number): number {
  const first = text[at];
  if (first === '"') return stringEnd(text, at);
  let i = at;
  if (first === '{' || first === '[') {
    let depth = 0;
    while (i < text.length) {
      const c = text[i];
      if (c === '"') {
        i = stringEnd(text, i);
        continue;
      }
      if (c === '{' || c === '[') depth += 1;
      if (c === '}' || c === ']') depth -= 1;
      i += 1;
      if (depth === 0) return i;
    }
    return i;
  }
  while (i < text.length && !`,}]${SPACE}`.includes(text[i] ?? '')) i += 1;
  return i;
}

/** member — the text of the last member `name` of the object whose text is `text`, or undefined. */
function member(text: string, name: string): string | undefined {
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return undefined;
  i = skipSpace(text, i + 1);
  let found: string | undefined;
  while (text[i] === '"') {
    const keyEnd = stringEnd(text, i);
    const raw = text.slice(i + 1, keyEnd - 1);
    const key = raw.includes('\\') ? (JSON.parse(text.slice(i, keyEnd)) as string) : raw;
    const valueAt = skipSpace(text, skipSpace(text, keyEnd) + 1);
    const end = valueEnd(text, valueAt);
    if (key === name) found = text.slice(valueAt, end);
    i = skipSpace(text, end);
    if (text[i] === ',') i = skipSpace(text, i + 1);
  }
  return found;
}

/** memberText — the source text of the value at the path `names` in the JSON object `json` (which JSON.parse accepted), or undefined. */
export function memberText(json: string, names: readonly string[]): string | undefined {
  let text: string | undefined = json;
  for (const name of names) text = text === undefined ? undefined : member(text, name);
  return text;
}
