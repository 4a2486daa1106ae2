import { describe, expect, it } from 'vitest';
import { PoolTasks } from './pool-tasks.js';

describe('PoolTasks', () => {
  it("runs a pool's tasks one after another, each once the one before said done; other pools do not wait", () => {
    const failures: unknown[] = [];
    const tasks = new PoolTasks(
      () => false,
      (_pool, error) => failures.push(error),
    );
    const log: string[] = [];
    let finishFirst = (): void => undefined;
    tasks.enqueue('p', (done) => {
      log.push('p1 start');
      finishFirst = done;
    });
    tasks.enqueue(
      'p',
      (done) => {
        log.push('p2');
        done();
      },
      () => log.push('p2 after'),
    );
    tasks.enqueue('q', (done) => {
      log.push('q1');
      done();
    });
    expect(log).toEqual(['p1 start', 'q1']);
    expect(tasks.busy('p')).toBe(true);
    finishFirst();
    finishFirst(); // a second call changes nothing
    expect(log).toEqual(['p1 start', 'q1', 'p2', 'p2 after']);
    expect(tasks.busy('p')).toBe(false);
    expect(failures).toEqual([]);
  });

  it('counts a task that throws as it starts as done, and says what it threw', () => {
    const failures: Array<[string, unknown]> = [];
    const tasks = new PoolTasks(
      () => true,
      (pool, error) => failures.push([pool, error]),
    );
    const ran: string[] = [];
    tasks.enqueue('p', () => {
      throw new Error('boom');
    });
    tasks.enqueue('p', (done) => {
      ran.push('next');
      done();
    });
    expect(ran).toEqual(['next']);
    expect(failures.map(([pool, e]) => [pool, (e as Error).message])).toEqual([['p', 'boom']]);
  });

  it('keeps the requests that wait for a claim together: the first asks for the claim, the claim ends them all', () => {
    const tasks = new PoolTasks(
      () => false,
      () => undefined,
    );
    const ran: number[] = [];
    expect(tasks.awaitClaim('t', () => ran.push(1))).toBe(true);
    expect(tasks.awaitClaim('t', () => ran.push(2))).toBe(false);
    for (const run of tasks.claimEnded('t')) run();
    expect(ran).toEqual([1, 2]);
    expect(tasks.claimEnded('t')).toEqual([]);
    expect(tasks.awaitClaim('t', () => ran.push(3))).toBe(true);
  });
});
