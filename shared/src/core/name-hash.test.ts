/** nameHash32: FNV-1a's published vectors, then MurmurHash3's fmix32, computed here apart. */
import { describe, expect, it } from 'vitest';
import { nameHash32 } from './name-hash.js';

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

describe('nameHash32', () => {
  it('is FNV-1a (published vectors: "" 0x811c9dc5, "a" 0xe40c292c, "foobar" 0xbf9cf968) mixed by fmix32', () => {
    expect(nameHash32('')).toBe(fmix32(0x811c9dc5));
    expect(nameHash32('a')).toBe(fmix32(0xe40c292c));
    expect(nameHash32('foobar')).toBe(fmix32(0xbf9cf968));
  });
});
