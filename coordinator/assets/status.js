// The status page's script: it reads /api/status every second and draws
// the pools, their credit, leases and the calls their agents reported, the
// grants, refusals and denied calls of the last minutes, the per-key pools
// with the most denied calls, and ownership (durable mode). Every name is set as text with
// textContent, never as markup, so a pool or agent name cannot inject
// anything; the server's Content-Security-Policy allows this one script only.
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
const REFRESH_MS = 1000;

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}

function drawChart(series) {
  const chart = document.getElementById('chart');
  chart.replaceChildren();
  const width = 600;
  const height = 160;
  const top = Math.max(1, ...series.map((s) => Math.max(s.grants, s.refusals, s.deniedCalls ?? 0)));
  for (const f of [0, 0.5, 1]) {
    const y = height - 15 - f * (height - 30);
    chart.append(svg('line', { x1: 30, x2: width, y1: y, y2: y, class: 'grid' }));
    const label = svg('text', { x: 2, y: y + 3 });
    label.textContent = String(Math.round(f * top));
    chart.append(label);
  }
  for (const [x, text, anchor] of [
    [30, '−5 min', 'start'],
    [width, 'now', 'end'],
  ]) {
    const label = svg('text', { x, y: height - 2, 'text-anchor': anchor });
    label.textContent = text;
    chart.append(label);
  }
  const n = series.length;
  const line = (field, className) => {
    const points = series.map((s, i) => {
      const x = 30 + (i / Math.max(1, n - 1)) * (width - 30);
      const y = height - 15 - ((s[field] ?? 0) / top) * (height - 30);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    });
    chart.append(svg('polyline', { points: points.join(' '), class: className }));
  };
  line('grants', 'grants');
  line('refusals', 'refusals');
  line('deniedCalls', 'denied');
}

function callsText(calls) {
  if (calls === undefined || calls === null) return null;
  const shadow = calls.shadowDenied > 0 ? ` · would-be denied ${calls.shadowDenied} (shadow)` : '';
  return `calls admitted ${calls.admitted} · denied ${calls.denied}${shadow} (by agents, as reported)`;
}

function drawTopDenied(top) {
  const section = document.getElementById('top-denied');
  section.hidden = top === undefined || top.length === 0;
  if (section.hidden) return;
  const table = el('table');
  const head = el('tr');
  for (const h of ['pool (keyed hash)', 'template', 'denied calls', 'admitted calls']) head.append(el('th', h));
  table.append(head);
  for (const pool of top) {
    const row = el('tr');
    row.dataset.pool = pool.name;
    row.append(el('td', pool.name), el('td', pool.template ?? '-'), el('td', pool.calls.denied), el('td', pool.calls.admitted));
    table.append(row);
  }
  document.getElementById('denied').replaceChildren(table);
}

function bar(pool) {
  const total = Math.max(1, pool.capacityTokens + pool.allowanceTokens, pool.levelTokens + pool.leasedTokens);
  const node = el('div', null, 'bar');
  const level = el('div', null, 'level');
  level.style.width = `${(100 * pool.levelTokens) / total}%`;
  const leased = el('div', null, 'leased');
  leased.style.width = `${(100 * pool.leasedTokens) / total}%`;
  node.append(level, leased);
  node.title = `level ${pool.levelTokens} + leased ${pool.leasedTokens} of ${pool.capacityTokens} + ${pool.allowanceTokens}`;
  return node;
}

function leaseTable(pool) {
  const table = el('table');
  const head = el('tr');
  for (const h of ['agent', 'class', 'lease', 'bound (tokens)', 'time left (ms)']) head.append(el('th', h));
  table.append(head);
  for (const lease of pool.leases) {
    const row = el('tr');
    row.append(
      el('td', lease.agentId),
      el('td', lease.agentClass ?? '-'),
      el('td', lease.leaseId + (lease.rate ? ' (rate)' : '')),
      el('td', lease.boundTokens),
      el('td', lease.expiresInMs),
    );
    table.append(row);
  }
  return table;
}

function drawPool(pool) {
  const card = el('div', null, 'pool');
  card.dataset.pool = pool.name;
  const title = el('h3', pool.name);
  const kind = pool.kind === 'template' ? `template ${pool.template}` : pool.kind;
  title.append(
    el('span', ` — ${kind}, ${pool.leaseMode} leases${pool.shadow ? ', shadow mode (agents admit what they would deny)' : ''}`, 'kind'),
  );
  card.append(title);
  card.append(bar(pool));
  const refill = Number.isInteger(pool.refillPerSecond) ? pool.refillPerSecond : pool.refillPerSecond.toFixed(3);
  const window = pool.windowMs === null || pool.windowMs === undefined ? null : pool.windowMs;
  const holdMs = pool.holdMs === null || pool.holdMs === undefined ? null : pool.holdMs;
  // A concurrency pool's tokens are slots: free, leased, held back until their requests are past the hold bound.
  const facts =
    holdMs !== null
      ? [
          `at most ${pool.capacityTokens} in flight, each held at most ${holdMs} ms`,
          `slots: ${pool.leasedTokens} leased in ${pool.leaseCount} lease(s), ${pool.levelTokens} free, ${pool.coolingTokens} held back`,
          `waiting ${pool.waiting}`,
          `TTL ${pool.leaseTtlMs} ms`,
        ]
      : [
          `level ${pool.levelTokens}`,
          `leased ${pool.leasedTokens} in ${pool.leaseCount} lease(s)`,
          ...(window === null ? [] : [`cooling ${pool.coolingTokens}`]),
          `waiting ${pool.waiting}`,
          window === null
            ? `capacity ${pool.capacityTokens}` + (pool.allowanceTokens > 0 ? ` + allowance ${pool.allowanceTokens}` : '')
            : `at most ${pool.capacityTokens} per ${window} ms window`,
          ...(window === null ? [`refill ${refill}/s`] : []),
          `TTL ${pool.leaseTtlMs} ms`,
        ];
  if (pool.quietMs > 0) facts.push(`quiet for ${pool.quietMs} ms`);
  card.append(el('p', facts.join(' · '), 'facts'));
  const calls = callsText(pool.calls);
  if (calls !== null) card.append(el('p', calls, 'facts calls'));
  if (pool.leases.length > 0) card.append(leaseTable(pool));
  if (pool.leaseCount > pool.leases.length) card.append(el('p', `and ${pool.leaseCount - pool.leases.length} more lease(s)`, 'muted'));
  return card;
}

function drawOwnership(ownership) {
  const section = document.getElementById('ownership');
  if (ownership === null) {
    section.hidden = true;
    return;
  }
  section.hidden = false;
  const box = document.getElementById('owned');
  box.replaceChildren();
  box.append(el('p', `member ${ownership.member}; Redis ${ownership.storeUp ? 'answers' : 'does not answer'}`));
  box.append(el('p', `live members: ${ownership.members.join(', ') || '(none seen)'}`));
  const table = el('table');
  const head = el('tr');
  head.append(el('th', 'owned unit'), el('th', 'epoch'));
  table.append(head);
  for (const unit of ownership.owned) {
    const row = el('tr');
    row.append(el('td', unit.unit === '*' ? '* (template pools and unknown names)' : unit.unit), el('td', unit.epoch));
    table.append(row);
  }
  box.append(table);
}

function draw(status) {
  document.getElementById('coordinator').textContent =
    status.mode === 'relay' ? `relay ${status.coordinator}` : `coordinator ${status.coordinator} (${status.mode} mode)`;
  const grantsPerS = status.history.slice(-10).reduce((sum, s) => sum + s.grants, 0) / 10;
  document.getElementById('summary').textContent =
    `${status.pools.length + status.poolsNotShown} pool(s); ${grantsPerS.toFixed(1)} grants/s over the last 10 s; ` +
    `NATS ${status.natsConnected ? 'connected' : 'disconnected'}`;
  document.getElementById('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
  drawChart(status.history);
  drawOwnership(status.ownership);
  drawTopDenied(status.topDenied);
  const pools = document.getElementById('pools');
  pools.replaceChildren(...status.pools.map(drawPool));
  if (status.poolsNotShown > 0) pools.append(el('p', `and ${status.poolsNotShown} more pool(s)`, 'muted'));
  document.body.dataset.updates = String(Number(document.body.dataset.updates ?? '0') + 1);
}

async function refresh() {
  try {
    const response = await fetch('/api/status', { cache: 'no-store' });
    if (!response.ok) throw new Error(`status ${response.status}`);
    draw(await response.json());
  } catch (error) {
    document.getElementById('updated').textContent = `cannot reach the coordinator: ${error.message}`;
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

refresh();
