/**
 * Owned surfaces: each product package's entry exports its public API and
 * none of the cores the project's tools drive; those are the package's
 * `/internal` entry. And shared's entry passes on no adapter: the clock is
 * `@tokenlease/shared/clock`, the bus `@tokenlease/shared/nats`.
 */
import { describe, expect, it } from 'vitest';
import * as agent from '@tokenlease/agent';
import * as agentInternal from '@tokenlease/agent/internal';
import * as coordinator from '@tokenlease/coordinator';
import * as coordinatorInternal from '@tokenlease/coordinator/internal';
import * as shared from '@tokenlease/shared';
import * as clock from '@tokenlease/shared/clock';

const INTERNAL = {
  coordinator: ['CoordinatorCore', 'Pool', 'LeaseTable', 'OwnershipDriver', 'RelayDriver', 'RelayCore', 'Uplink', 'WriteLane', 'waterFill'],
  agent: ['LeaseKeeper', 'AgentDriver', 'TakeQueue', 'DemandMeter', 'keeperOptions', 'takeAllAt'],
};

describe('package entries', () => {
  it.each([
    [
      '@tokenlease/coordinator',
      coordinator,
      coordinatorInternal,
      INTERNAL.coordinator,
      ['startCoordinatorService', 'startDurableService', 'loadConfigFile'],
    ],
    ['@tokenlease/agent', agent, agentInternal, INTERNAL.agent, ['Agent', 'Limiter', 'AgentError', 'AgentMetrics']],
  ] as const)('%s exports its API and no core; /internal has both', (_name, entry, internal, cores, api) => {
    const exported = Object.keys(entry);
    for (const name of api) expect(exported).toContain(name);
    for (const name of cores) expect(exported).not.toContain(name);
    const internals = Object.keys(internal);
    for (const name of [...api, ...cores]) expect(internals).toContain(name);
  });

  it("shared's entry passes on no clock; its own entry does", () => {
    expect(Object.keys(shared)).not.toContain('hostMonoNowUs');
    expect(typeof clock.hostMonoNowUs()).toBe('number');
  });
});
