/**
 * Number and text formatting shared by the sweep's table and HTML report.
 *
 * Guarantees: output does not depend on the locale or time zone (no
 * toLocaleString, no Intl); non-finite numbers print as `n/a` rather than
 * `NaN`; `escapeHtml` makes any string safe as HTML text or as a quoted
 * attribute value.
 */

const NOT_A_NUMBER = 'n/a';

/** formatCount — a count rounded to a whole number with `,` between thousands: 59873.4 → `59,873`. */
export function formatCount(value: number): string {
  if (!Number.isFinite(value)) return NOT_A_NUMBER;
  const digits = String(Math.abs(Math.round(value)));
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return Math.round(value) < 0 ? `-${grouped}` : grouped;
}

/**
 * formatFixed — `value` with `decimals` digits after the point and `,`
 * between thousands: (1234.56, 1) → `1,234.6`; -0 prints as `0`.
 */
export function formatFixed(value: number, decimals: number): string {
  if (!Number.isFinite(value)) return NOT_A_NUMBER;
  const fixed = Math.abs(value).toFixed(decimals);
  const [whole = '0', fraction] = fixed.split('.');
  const sign = value < 0 && Number(fixed) !== 0 ? '-' : '';
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return fraction === undefined ? `${sign}${grouped}` : `${sign}${grouped}.${fraction}`;
}

/** formatPercent — a fraction as a percentage number with one decimal, no sign: 0.9987 → `99.9`. */
export function formatPercent(fraction: number): string {
  return formatFixed(fraction * 100, 1);
}

/** escapeHtml — replaces `& < > " '` with entities, so the text can never open a tag or end an attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ENTITIES[ch] ?? ch);
}

/**
 * wrapText — the words of `text` in lines of at most `width` characters
 * (a longer word gets a line of its own), each line starting with `indent`.
 */
export function wrapText(text: string, indent: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  lines.push(indent + line);
  return lines;
}

/** textTable — rows of text cells as aligned lines: the first column left-aligned, the others right-aligned, two spaces between. */
export function textTable(rows: readonly (readonly string[])[]): string[] {
  const columns = Math.max(0, ...rows.map((row) => row.length));
  const widths = Array.from({ length: columns }, (_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  return rows.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  '));
}

/** TableColumn — a column of `columnTable`: its header, and its cell for each row. */
export interface TableColumn<R> {
  readonly header: string;
  readonly cell: (row: R) => string;
}

/** columnTable — the headers, a rule of dashes under each, then a line per row, aligned as `textTable` does. */
export function columnTable<R>(columns: readonly TableColumn<R>[], rows: readonly R[]): string[] {
  const headers = columns.map((c) => c.header);
  const body = rows.map((row) => columns.map((c) => c.cell(row)));
  const widths = columns.map((_, i) => Math.max(headers[i]?.length ?? 0, ...body.map((cells) => (cells[i] ?? '').length)));
  return textTable([headers, widths.map((w) => '-'.repeat(w)), ...body]);
}

const ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
