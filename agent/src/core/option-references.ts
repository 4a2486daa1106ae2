/**
 * The agent's option reference pages, generated from their schemas by `npm
 * run docs:reference`: the agent's and the keeper's (agent-options.ts,
 * keeper-options.ts; docs/reference/agent-options.md) and the HTTP middleware's
 * (http-options.ts, docs/reference/http-options.md). A test fails when a
 * checked-in page differs.
 */
import { fieldTable, generatedNote, tidySchema, type JsonSchema } from '@tokenlease/shared/reference';
import { z } from 'zod';
import { AGENT_OPTIONS } from './agent-options.js';
import { HTTP_LIMIT_OPTIONS, POOL_RULE } from './http-options.js';
import { DEFAULT_KEEPER_OPTIONS, KEEPER_OPTIONS } from './keeper-options.js';

/** jsonSchemaOf — an options schema's JSON Schema (as written), tidied for the reference. */
function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return tidySchema(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })) as JsonSchema;
}

/** keeperOptionsReference — docs/reference/agent-options.md: the agent's own options, then the keeper's. */
export function keeperOptionsReference(): string {
  const keeper = jsonSchemaOf(KEEPER_OPTIONS);
  const properties = keeper['properties'] as Record<string, JsonSchema>;
  // Every keeper option has a default (DEFAULT_KEEPER_OPTIONS): shown as the reference's default, none is required.
  for (const [field, node] of Object.entries(properties)) {
    node['x-default'] = JSON.stringify(DEFAULT_KEEPER_OPTIONS[field as keyof typeof DEFAULT_KEEPER_OPTIONS]);
  }
  const forms = new Map([
    ['expectedLimits', '`{ capacityTokens, maxLeaseTokens, refillTokens, refillPeriodMs, allowanceTokens? }` or `null`'],
  ]);
  return [
    generatedNote('agent/src/core/agent-options.ts and keeper-options.ts'),
    '',
    '# Agent options reference',
    '',
    '`Agent.connect({ … })` takes the agent’s own options (the first table), the lease keeper’s under `keeper` (the',
    'second; per pool also `agent.limiter(pool, { fallbackPerSecond, fallbackBurstTokens, expectedLimits, shadow })`)',
    'and how to reach NATS (`natsUrl`, `nats`, `connection`, `bus`, `inboxPrefix`, `env`, `connectInBackground`: their',
    'values are the [NATS settings](command-line.md), whose flags and variables they mirror). The agent’s own options are',
    'checked as the first table says before anything is opened; the keeper’s as the second says, then `backoffMsMax`',
    'against `backoffMsMin` and `expectedLimits` as a whole, when the agent is made (closing a connection it opened).',
    'A bad value, or a name that is no keeper option, is refused with `AgentError` `invalid-argument` and one line',
    'naming the option (a subject prefix breaking the protocol’s rule: its `TokenleaseError`). What each is for:',
    '[the agent](../agent.md#using-it), [the lease keeper](../agent.md#the-lease-keeper); every signature:',
    '[the API reference](../api/README.md).',
    '',
    '## The agent',
    '',
    fieldTable(jsonSchemaOf(AGENT_OPTIONS)),
    '',
    '## The lease keeper (`keeper`)',
    '',
    fieldTable({ ...keeper, required: [] }, new Set(), forms),
    '',
  ].join('\n');
}

/** httpOptionsReference — docs/reference/http-options.md. */
export function httpOptionsReference(): string {
  return [
    generatedNote('agent/src/core/http-options.ts'),
    '',
    '# HTTP middleware options reference',
    '',
    'The options of `createHttpLimit` (`@tokenlease/agent/http`: Express, node:http) and `fastifyRateLimit`',
    '(`@tokenlease/agent/fastify`, which also takes `global` and a route’s `config.rateLimit`). Each is checked alone as',
    'this table says, then together: a rule with a `key` needs `keySecret`, and a pool name with its key’s hash must be',
    'at most 128 characters. A bad option is refused with `AgentError` `invalid-argument` and one line naming it. What',
    'each is for, with examples: [http.md](../http.md#options).',
    '',
    fieldTable(jsonSchemaOf(HTTP_LIMIT_OPTIONS)),
    '',
    '## A pool rule (an entry of `pools`)',
    '',
    fieldTable(jsonSchemaOf(POOL_RULE)),
    '',
  ].join('\n');
}
