/**
 * How a coordinator's or relay's process sets up V8's heap, first thing in
 * its command's main (cli.ts, relay-cli.ts), and in the bench's processes
 * that time the core in process, so that they time the heap the commands
 * run on.
 *
 * Allocation-site pretenuring off. V8 watches what share of the objects
 * each literal in the code makes survives the young generation, and once
 * most of them have, makes every later one directly in the old generation.
 * A coordinator opening many leases at once (a start, a takeover, a fleet
 * reconnecting) keeps most of what it makes then, so it may be judged that
 * way by V8 while the same code, renewing, makes objects that die at once.
 * From then on each of those went to the old generation and kept what they
 * pointed at alive past the next scavenge. In the bench's probe of a chunk
 * pool with 100k live leases (docs/tools.md), 4 processes of 21 collected
 * 0.57–0.87 µs a renewal instead of 0.11–0.19 and renewed 141k–188k times
 * a CPU second; the others 175k–259k. With pretenuring off, 16 of 16
 * collected 0.09–0.12 µs and renewed 243k–324k times (1k leases: 362k–416k,
 * against 319k–390k with it on). The cost is copying each lease's objects
 * out of the young generation once, when it opens.
 *
 * A service that embeds the core in its own process keeps its own flags:
 * one that holds many leases may start node with
 * `--no-allocation-site-pretenuring` itself.
 */
import { setFlagsFromString } from 'node:v8';

/** COORDINATOR_V8_FLAGS — the V8 flags a coordinator's or relay's process sets at its start. */
const COORDINATOR_V8_FLAGS = '--no-allocation-site-pretenuring';

/** setCoordinatorHeapFlags — sets COORDINATOR_V8_FLAGS; call before the process builds its core. */
export function setCoordinatorHeapFlags(): void {
  setFlagsFromString(COORDINATOR_V8_FLAGS);
}
