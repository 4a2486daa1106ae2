/**
 * nameHash32 — a 32-bit hash of a name, the same in every process: FNV-1a
 * over its UTF-16 code units, then MurmurHash3's 32-bit finalizer (fmix32)
 * so names that differ only in their last characters spread over every
 * bit. Not a secret's hash: it places things (the coordinator's rendezvous
 * ownership, the agent's sampled recordings), and both sides of a
 * placement must compute it alike.
 */
export function nameHash32(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i += 1) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
