/** replyInboxProblem: with bindIdentity, a reply goes only to the requester's own inbox prefix `_INBOX_<identity>.`. */
import { describe, expect, it } from 'vitest';
import { parseCoordinatorConfig } from './config.js';
import { identityToken, replyInboxProblem } from './reply-inbox.js';

const config = (bindIdentity: boolean, subjectPrefix = 'tokenlease') =>
  parseCoordinatorConfig('reply-inbox.yaml', { bindIdentity, subjectPrefix, pools: { api: { capacity: 10, refill: '10/s' } } });

describe('replyInboxProblem', () => {
  it.each<[string, boolean, string, string | null, string | null]>([
    ['its own mux inbox', true, 'tokenlease.v2.acquire.api.checkout', '_INBOX_checkout.Ab12.7', null],
    ['its own plain inbox', true, 'tokenlease.v2.pools._.operator', '_INBOX_operator.Xy9', null],
    ['no reply wanted (a report)', true, 'tokenlease.v2.report.api.checkout', null, null],
    ['another identity’s inbox', true, 'tokenlease.v2.acquire.api.checkout', '_INBOX_search.x', 'is not under identity "checkout"'],
    ['an inbox prefix that only starts like its own', true, 'tokenlease.v2.acquire.api.checkout', '_INBOX_checkoutx.1', 'is not under'],
    ['the bare prefix', true, 'tokenlease.v2.acquire.api.checkout', '_INBOX_checkout.', 'is not under'],
    ['the default _INBOX of a client without an identity', true, 'tokenlease.v2.acquire.api.checkout', '_INBOX.abc', 'is not under'],
    ['any subject at all', true, 'tokenlease.v2.acquire.api.checkout', 'tokenlease.v2.acquire.api.search', 'is not under'],
    ['a subject without an identity token', true, 'tokenlease.v1.acquire', '_INBOX_anon.1', 'names no identity token'],
    ['another identity’s inbox, identities unbound', false, 'tokenlease.v2.acquire.api.checkout', '_INBOX_search.x', null],
  ])('%s', (_name, bind, subject, replySubject, fragment) => {
    const problem = replyInboxProblem(config(bind), subject, replySubject);
    if (fragment === null) expect(problem).toBeNull();
    else expect(problem).toContain(fragment);
  });

  it('finds the identity token under a prefix of several tokens, and of a v1 subject of the same shape', () => {
    expect(identityToken('org.team', 'org.team.v2.acquire.api.checkout')).toBe('checkout');
    expect(identityToken('tokenlease', 'tokenlease.v1.acquire.api.checkout')).toBe('checkout');
    expect(identityToken('tokenlease', 'tokenlease.v2.acquire.api')).toBeNull();
    expect(identityToken('tokenlease', 'other.v2.acquire.api.checkout')).toBeNull();
    expect(replyInboxProblem(config(true, 'org.team'), 'org.team.v2.status.api.ops', '_INBOX_ops.1')).toBeNull();
  });

  it('quotes a long reply subject cut short', () => {
    const problem = replyInboxProblem(config(true), 'tokenlease.v2.acquire.api.checkout', `_INBOX_search.${'x'.repeat(5000)}`);
    expect(problem?.length).toBeLessThan(400);
  });
});
