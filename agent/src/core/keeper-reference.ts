/**
 * The keeper options' reference page (docs/reference/agent-options.md),
 * generated from their schema (keeper-options.ts) by `npm run
 * docs:reference`; a test fails when the checked-in page differs.
 */
import { fieldTable, generatedNote, tidySchema, type JsonSchema } from '@tokenlease/shared/reference';
import { z } from 'zod';
import { DEFAULT_KEEPER_OPTIONS, KEEPER_OPTIONS } from './keeper-options.js';

/** keeperOptionsReference — docs/reference/agent-options.md. */
export function keeperOptionsReference(): string {
  const schema = tidySchema(z.toJSONSchema(KEEPER_OPTIONS, { io: 'input', unrepresentable: 'any' })) as JsonSchema;
  const properties = schema['properties'] as Record<string, JsonSchema>;
  // Every option has a default (DEFAULT_KEEPER_OPTIONS): shown as the reference's default, none is required.
  for (const [field, node] of Object.entries(properties)) {
    node['x-default'] = JSON.stringify(DEFAULT_KEEPER_OPTIONS[field as keyof typeof DEFAULT_KEEPER_OPTIONS]);
  }
  const forms = new Map([
    ['expectedLimits', '`{ capacityTokens, maxLeaseTokens, refillTokens, refillPeriodMs, allowanceTokens? }` or `null`'],
  ]);
  return [
    generatedNote('agent/src/core/keeper-options.ts'),
    '',
    '# Agent options reference: the lease keeper',
    '',
    'The options of the lease keeper, `Agent.connect({ keeper: { … } })`, and per pool `agent.limiter(pool, { … })`:',
    'each checked alone as this table says, then `backoffMsMax` against `backoffMsMin` and `expectedLimits` as a whole.',
    'A bad value, or a name that is no option, is refused with `AgentError` `invalid-argument` and one line naming the',
    'option. What each is for: [the lease keeper](../agent.md#the-lease-keeper); every other option of the agent and of',
    'the HTTP middleware: [the API reference](../api/README.md) and [http.md](../http.md#options).',
    '',
    fieldTable({ ...schema, required: [] }, new Set(), forms),
    '',
  ].join('\n');
}
