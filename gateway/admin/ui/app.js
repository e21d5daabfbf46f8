// SPDX-License-Identifier: Apache-2.0
// The dashboard's script (docs/operating.md "Dashboard"). Plain browser JavaScript, no
// dependencies, no build step. Everything shown comes from the admin API on this origin; the
// token lives in sessionStorage only (this tab, until it closes) and travels as
// `Authorization: Bearer`. Data is rendered with textContent and DOM calls, never as HTML:
// route names and user labels are data.
'use strict';

(() => {
  const TOKEN_KEY = 'sluice.admin.token';
  const POLL_MS = 2000;
  const MAX_EVENTS = 50;
  const TOP_USERS = 5;
  const SPARK_SPAN_MS = 5 * 60 * 1000;  // the sparkline shows the last five minutes
  const RETRY_MIN_MS = 1000;
  const RETRY_MAX_MS = 15000;

  class Unauthorized extends Error {}
  class HttpError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY) || '',
    needsToken: false,
    scrape: null,          // {at, counts: {policy: {result: value}}} of the previous /metrics
    grpcScrape: null,      // {at, counts: {route: {grpc_status: value}}}, likewise
    sparks: new Map(),     // backend -> [{at, p}]
    historyLoaded: false,  // /admin/insight/breakers was read once
    events: [],            // newest first, at most MAX_EVENTS
    lastEventId: 0,
    stream: null,          // AbortController of the open /admin/events request
    streamRetryMs: RETRY_MIN_MS,
    renders: 0,
  };

  const $ = (id) => document.getElementById(id);

  // --- DOM helpers: elements with text, never markup. ----------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null) {
        continue;
      }
      if (name === 'text') {
        node.textContent = String(value);
      } else if (name === 'className') {
        node.className = value;
      } else {
        node.setAttribute(name, String(value));
      }
    }
    for (const child of children) {
      if (child !== null && child !== undefined) {
        node.append(child);  // strings become text nodes
      }
    }
    return node;
  }

  function panel(name) {
    return document.querySelector(`section[data-panel="${name}"]`);
  }

  /// Marks a panel ok, empty, error, auth or loading, with a message ("" hides it).
  function setPanel(name, kind, message) {
    const section = panel(name);
    section.dataset.state = kind;
    const line = section.querySelector('[data-role="message"]');
    line.textContent = message || '';
    line.hidden = !message;
  }

  function describe(error) {
    if (error instanceof HttpError) {
      if (error.status === 404) {
        return `not available on this gateway (HTTP 404${error.message ? ': ' + error.message : ''})`;
      }
      return `HTTP ${error.status}${error.message ? ': ' + error.message : ''}`;
    }
    return `admin API unreachable (${error.message || error})`;
  }

  function rate(value) {
    if (value === null || value === undefined) {
      return '…';
    }
    return value >= 10 ? `${value.toFixed(0)}/s` : `${value.toFixed(2)}/s`;
  }

  function plural(n, noun) {
    return `${n} ${noun}${n === 1 ? '' : 's'}`;
  }

  function percent(p) {
    return `${(p * 100).toFixed(1)}%`;
  }

  // --- The admin API. ------------------------------------------------------------------------

  function authHeaders() {
    return state.token ? {Authorization: `Bearer ${state.token}`} : {};
  }

  async function request(path, extraHeaders, signal) {
    const res = await fetch(path, {
      headers: {...authHeaders(), ...(extraHeaders || {})},
      cache: 'no-store',
      credentials: 'omit',
      signal,
    });
    if (res.status === 401) {
      throw new Unauthorized('unauthorized');
    }
    if (!res.ok) {
      let message = '';
      try {
        const body = await res.json();
        message = typeof body.error === 'string' ? body.error : '';
      } catch (ignored) {
        // not JSON: the status says enough
      }
      throw new HttpError(res.status, message);
    }
    return res;
  }

  async function getJson(path) {
    return (await request(path)).json();
  }

  // --- Prometheus text: the limiter's decision counters. -------------------------------------

  const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
  const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

  function unescapeLabel(value) {
    return value.replace(/\\(.)/g, (m, c) => (c === 'n' ? '\n' : c));
  }

  /// A counter family with two labels as {outer: {inner: value}}.
  function counterFamily(text, metric, outer, inner) {
    const counts = {};
    for (const line of text.split('\n')) {
      if (!line.startsWith(metric)) {
        continue;
      }
      const m = SAMPLE.exec(line);
      if (!m || m[1] !== metric) {
        continue;
      }
      const labels = {};
      for (const l of (m[2] || '').matchAll(LABEL)) {
        labels[l[1]] = unescapeLabel(l[2]);
      }
      const value = Number(m[3]);
      if (labels[outer] === undefined || labels[inner] === undefined || Number.isNaN(value)) {
        continue;
      }
      (counts[labels[outer]] = counts[labels[outer]] || {})[labels[inner]] = value;
    }
    return counts;
  }

  /// sluice_ratelimit_requests_total{policy, result} as {policy: {result: value}}.
  function decisionCounts(text) {
    return counterFamily(text, 'sluice_ratelimit_requests_total', 'policy', 'result');
  }

  /// Per-second rates between the previous scrape (state[key]) and this one (null on the first).
  function decisionRates(now, key = 'scrape') {
    const previous = state[key];
    state[key] = now;
    if (!previous) {
      return null;
    }
    const seconds = (now.at - previous.at) / 1000;
    const rates = {};
    for (const [policy, results] of Object.entries(now.counts)) {
      rates[policy] = {};
      for (const [result, value] of Object.entries(results)) {
        const before = (previous.counts[policy] || {})[result];
        // A counter that went down restarted (a new process): count from zero.
        const delta = before === undefined || value < before ? value : value - before;
        rates[policy][result] = seconds > 0 ? delta / seconds : 0;
      }
    }
    return rates;
  }

  // --- Panels. -------------------------------------------------------------------------------

  function routeMatch(route) {
    let match = `${route.host ? route.host + ' ' : ''}${route.prefix}`;
    if (Array.isArray(route.methods) && route.methods.length > 0) {
      match += ` (${route.methods.join(', ')})`;
    }
    return match;
  }

  async function refreshRoutes() {
    const body = await getJson('/admin/routes');
    const rows = (body.routes || []).map((r) => el('tr', {'data-route': r.name},
        el('td', {'data-field': 'name', text: r.name}),
        el('td', {'data-field': 'match', text: routeMatch(r)}),
        el('td', {'data-field': 'backend', text: r.backend}),
        el('td', {'data-field': 'limit', text: r.limit || 'none'})));
    $('routes-body').replaceChildren(...rows);
    setPanel('routes', rows.length ? 'ok' : 'empty', rows.length ? '' : 'no routes configured');
  }

  /// The fleet (docs/fleet.md): hidden when the fleet is off (404); the header names the
  /// replica this page talks to.
  async function refreshFleet() {
    let body;
    try {
      body = await getJson('/admin/fleet');
    } catch (error) {
      if (error instanceof HttpError && error.status === 404) {
        $('fleet-panel').hidden = true;
        $('replica').textContent = '';
        return;
      }
      throw error;
    }
    $('fleet-panel').hidden = false;
    $('replica').textContent = `replica ${body.replica} of fleet ${body.name}`;
    $('fleet-summary').textContent = `fleet version ${body.version}` +
        (body.connected ? '' : ' (Redis unreachable: changes answer 503 until it is back)');
    const replicas = (body.replicas || []).slice().sort((a, b) => a.replica.localeCompare(b.replica));
    const rows = replicas.map((r) => el('tr', {'data-replica': r.replica, 'data-state': r.state},
        el('td', {'data-field': 'replica',
                  text: r.replica === body.replica ? `${r.replica} (this one)` : r.replica}),
        el('td', {'data-field': 'address', text: r.address || ''}),
        el('td', {'data-field': 'version', text: String(r.version)}),
        el('td', {'data-field': 'state', text: r.state}),
        el('td', {'data-field': 'last-seen', text: `${(r.last_seen_ms / 1000).toFixed(1)} s ago`})));
    $('fleet-body').replaceChildren(...rows);
    setPanel('fleet', rows.length ? 'ok' : 'empty', rows.length ? '' : 'no heartbeat yet');
  }

  async function topUsers(policy) {
    try {
      const body = await getJson(`/admin/limits/${encodeURIComponent(policy)}/top?n=${TOP_USERS}`);
      const users = body.users || [];
      if (users.length === 0) {
        return el('p', {className: 'note', 'data-field': 'top-users-empty',
                        text: 'no users in the current window'});
      }
      const note = body.error_bound !== undefined
          ? el('p', {className: 'note', text: `counts may be over by at most ${body.error_bound}`})
          : null;
      const list = el('ol', {className: 'top-users', 'data-field': 'top-users'},
          ...users.map((u) => el('li', {'data-user': u.user},
              el('code', {text: u.user}),
              ` ${plural(u.count, 'request')}, ${u.limited} limited`)));
      return el('div', {}, list, note);
    } catch (error) {
      if (error instanceof Unauthorized) {
        throw error;
      }
      return el('p', {className: 'note error', 'data-field': 'top-users-error',
                      text: `top users: ${describe(error)}`});
    }
  }

  async function refreshPolicies() {
    const [limits, metricsText] = await Promise.all([
      getJson('/admin/limits'),
      request('/metrics').then((res) => res.text()).catch((error) => {
        if (error instanceof Unauthorized) {
          throw error;
        }
        return null;  // the rates show "…"; the policies still render
      }),
    ]);
    const rates = metricsText === null
        ? null : decisionRates({at: performance.now(), counts: decisionCounts(metricsText)});
    const names = Object.keys(limits).sort();
    const tops = await Promise.all(names.map(topUsers));
    const cards = names.map((name, i) => {
      const p = limits[name];
      const r = (rates && rates[name]) || null;
      const card = el('article', {className: 'card', 'data-policy': name, 'data-mode': p.mode},
          el('h3', {text: name}),
          el('p', {className: 'spec',
                   text: `${p.requests} requests / ${p.window_ms / 1000} s (${p.buckets} buckets, ${p.mode})`}),
          el('p', {className: 'rates'},
              el('span', {className: 'allowed', 'data-field': 'allowed-rate',
                          text: `allowed ${rate(r ? (r.allowed || 0) : null)}`}),
              ' ',
              el('span', {className: 'limited', 'data-field': 'limited-rate',
                          text: `limited ${rate(r ? (r.limited || 0) : null)}`}),
              r && r.shadow_limited
                  ? el('span', {className: 'shadow', 'data-field': 'shadow-rate',
                                text: ` shadow-limited ${rate(r.shadow_limited)}`})
                  : null),
          el('h4', {text: 'top users'}),
          tops[i]);
      return card;
    });
    $('policies-list').replaceChildren(...cards);
    const message = cards.length === 0 ? 'no limit policies configured'
        : metricsText === null ? 'rates unavailable: /metrics did not answer' : '';
    setPanel('policies', cards.length ? 'ok' : 'empty', message);
    renderGrpc(metricsText);
  }

  /// gRPC status names (the gRPC project's statuscodes.md), by code.
  const GRPC_STATUS = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED',
    'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED',
    'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE',
    'DATA_LOSS', 'UNAUTHENTICATED'];

  /// The gRPC panel (shown once a gRPC call was counted): each route's calls per second by the
  /// status they ended with, from sluice_grpc_requests_total between two scrapes.
  function renderGrpc(metricsText) {
    const section = panel('grpc');
    if (metricsText === null) {
      if (!section.hidden) {
        setPanel('grpc', 'error', 'rates unavailable: /metrics did not answer');
      }
      return;
    }
    const counts = counterFamily(metricsText, 'sluice_grpc_requests_total', 'route', 'grpc_status');
    const rates = decisionRates({at: performance.now(), counts}, 'grpcScrape');
    const routes = Object.keys(counts).sort();
    section.hidden = routes.length === 0;
    const rows = routes.map((route) => {
      const r = (rates && rates[route]) || null;
      const codes = Object.keys(counts[route]).map(Number).sort((a, b) => a - b);
      const total = r ? Object.values(r).reduce((a, b) => a + b, 0) : null;
      const failed = codes.filter((c) => c !== 0 && (!r || r[c] > 0));
      return el('tr', {'data-route': route},
          el('td', {text: route}),
          el('td', {'data-field': 'calls-rate', text: rate(total)}),
          el('td', {'data-field': 'ok-rate', text: rate(r ? (r[0] || 0) : null)}),
          el('td', {'data-field': 'statuses',
                    text: failed.map((c) => `${GRPC_STATUS[c] || c} ${rate(r ? r[c] : null)}`)
                        .join(', ') || '—'}));
    });
    $('grpc-body').replaceChildren(...rows);
    setPanel('grpc', rows.length ? 'ok' : 'empty', '');
  }

  async function loadBreakerHistory() {
    if (state.historyLoaded) {
      return;
    }
    try {
      const body = await getJson('/admin/insight/breakers');
      const step = Number(body.interval_ms) || 5000;
      const now = Date.now();
      for (const [backend, samples] of Object.entries(body.backends || {})) {
        const list = samples.map((p, i) => ({at: now - (samples.length - 1 - i) * step, p}));
        state.sparks.set(backend, list);
      }
    } catch (error) {
      if (error instanceof Unauthorized) {
        throw error;
      }
      // No history (an older gateway): the sparkline grows from the polls alone.
    }
    state.historyLoaded = true;
  }

  function sparkline(samples) {
    const box = el('div', {className: 'spark', 'data-field': 'sparkline',
                           'data-points': samples.length,
                           title: 'drop probability, last 5 minutes'});
    const now = Date.now();
    for (const s of samples) {
      const bar = el('span', {});
      bar.style.left = `${Math.max(0, 100 - ((now - s.at) / SPARK_SPAN_MS) * 100)}%`;
      bar.style.height = `${Math.max(s.p > 0 ? 4 : 1, Math.min(100, s.p * 100))}%`;
      if (s.p > 0) {
        bar.className = 'hot';
      }
      box.append(bar);
    }
    return box;
  }

  function breakerState(backend) {
    if (!backend.breaker || backend.breaker.enabled === false) {
      return 'disabled';
    }
    if (backend.breaker.mode === 'shadow') {
      return 'shadow';  // computes p, drops nothing (docs/latency-protection.md)
    }
    return backend.window && backend.window.drop_probability > 0 ? 'open' : 'closed';
  }

  /// The backend's adaptive concurrency limit, when it has one: limit, in flight, refusals.
  function concurrencyLine(backend) {
    const c = backend.concurrency;
    if (!c || c.limit === undefined) {
      return null;
    }
    const limit = c.config && c.config.enabled === false ? 'off' : String(c.limit);
    return el('p', {className: 'note', 'data-field': 'concurrency'},
        'concurrency limit ', el('strong', {'data-field': 'concurrency-limit', text: limit}),
        ', in flight ', el('strong', {'data-field': 'in-flight', text: String(c.in_flight)}),
        `, ${plural(c.rejections, 'request')} refused` + (c.probing ? ' (probing)' : ''));
  }

  async function refreshBreakers(backends) {
    await loadBreakerHistory();
    const now = Date.now();
    const names = Object.keys(backends).sort();
    const cards = names.map((name) => {
      const b = backends[name];
      const w = b.window || {requests: 0, accepts: 0, drop_probability: 0};
      const samples = (state.sparks.get(name) || []).filter((s) => now - s.at <= SPARK_SPAN_MS);
      samples.push({at: now, p: w.drop_probability});
      state.sparks.set(name, samples);
      const st = breakerState(b);
      return el('article', {className: 'card', 'data-backend': name, 'data-breaker-state': st,
                            'data-drop-probability': w.drop_probability},
          el('h3', {text: name}),
          el('p', {},
              el('span', {className: `badge ${st}`, 'data-field': 'breaker-state', text: st}),
              ' drop probability ',
              el('strong', {'data-field': 'drop-probability', text: percent(w.drop_probability)})),
          el('p', {className: 'note',
                   text: `window: ${plural(w.requests, 'request')}, ${w.accepts} accepted` +
                         (st === 'shadow' ? `; would have dropped ${w.shadow_drops || 0}` : '')}),
          ...[concurrencyLine(b)].filter(Boolean),
          sparkline(samples));
    });
    for (const name of [...state.sparks.keys()]) {
      if (!(name in backends)) {
        state.sparks.delete(name);  // a backend that is gone
      }
    }
    $('breakers-list').replaceChildren(...cards);
    setPanel('breakers', cards.length ? 'ok' : 'empty', cards.length ? '' : 'no backends configured');
  }

  async function refreshEndpoints(backends) {
    const names = Object.keys(backends).sort();
    const failures = [];
    const lists = await Promise.all(names.map(async (name) => {
      try {
        const body = await getJson(`/admin/backends/${encodeURIComponent(name)}/endpoints`);
        return body.endpoints || [];
      } catch (error) {
        if (error instanceof Unauthorized) {
          throw error;
        }
        failures.push(`${name}: ${describe(error)}`);
        return [];
      }
    }));
    const rows = [];
    names.forEach((name, i) => {
      for (const e of lists[i]) {
        rows.push(el('tr', {'data-backend': name, 'data-endpoint': e.endpoint, 'data-state': e.state},
            el('td', {text: name}),
            el('td', {'data-field': 'endpoint', text: e.endpoint}),
            el('td', {'data-field': 'state'}, el('span', {className: `badge ${e.state}`, text: e.state})),
            el('td', {text: e.active_requests ?? ''}),
            el('td', {text: e.consecutive_failures ?? ''}),
            el('td', {text: e.ejections ?? ''})));
      }
    });
    $('endpoints-body').replaceChildren(...rows);
    if (failures.length > 0) {
      setPanel('endpoints', rows.length ? 'ok' : 'error', failures.join('; '));
    } else {
      setPanel('endpoints', rows.length ? 'ok' : 'empty', rows.length ? '' : 'no endpoints');
    }
  }

  // The breakers and endpoints panels share one /admin/backends read.
  async function refreshBackends() {
    let backends;
    try {
      backends = await getJson('/admin/backends');
    } catch (error) {
      const auth = error instanceof Unauthorized;
      for (const name of ['breakers', 'endpoints']) {
        setPanel(name, auth ? 'auth' : 'error', auth ? 'waiting for the admin token' : describe(error));
      }
      throw error;
    }
    await Promise.all([
      guarded('breakers', () => refreshBreakers(backends)),
      guarded('endpoints', () => refreshEndpoints(backends)),
    ]);
  }

  /// Runs a panel's refresh: a failure shows in that panel only; a 401 goes up to ask for the
  /// token.
  async function guarded(name, refresh) {
    try {
      await refresh();
    } catch (error) {
      if (name) {
        const auth = error instanceof Unauthorized;
        setPanel(name, auth ? 'auth' : 'error', auth ? 'waiting for the admin token' : describe(error));
      }
      throw error;
    }
  }

  // --- The token. ----------------------------------------------------------------------------

  function askForToken(rejected) {
    state.needsToken = true;
    $('token-form').hidden = false;
    $('token-message').textContent = rejected ? 'the token was refused; try again' : '';
    $('forget-token').hidden = !state.token;
    setStatus('auth', 'the admin API needs a token');
    $('token-input').focus();
  }

  function useToken(token) {
    state.token = token;
    if (token) {
      sessionStorage.setItem(TOKEN_KEY, token);
    } else {
      sessionStorage.removeItem(TOKEN_KEY);
    }
    state.needsToken = false;
    $('token-form').hidden = true;
    $('forget-token').hidden = !token;
    restartEvents();
    tick(true);
  }

  function setStatus(kind, text) {
    const status = $('status');
    status.dataset.state = kind;
    status.textContent = text;
  }

  // --- Polling. ------------------------------------------------------------------------------

  let ticking = false;
  let tickAgain = false;

  /// One poll of every panel. The timer's ticks skip while one is out; `queue` (a new token)
  /// runs one more as soon as the one out ends, so it polls with the new token.
  async function tick(queue = false) {
    if (ticking) {
      tickAgain = tickAgain || queue;
      return;
    }
    ticking = true;
    tickAgain = false;
    const token = state.token;  // what this tick's requests carry
    try {
      const results = await Promise.allSettled([
        guarded('routes', refreshRoutes),
        guarded('policies', refreshPolicies),
        guarded(null, refreshBackends),
        guarded('fleet', refreshFleet),
      ]);
      const errors = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
      if (errors.some((e) => e instanceof Unauthorized)) {
        // A 401 to requests sent before the token was typed says nothing about that token:
        // the tick queued by useToken() asks again with it.
        if (state.token === token) {
          askForToken(Boolean(token));
        }
      } else if (errors.length === results.length) {
        setStatus('error', describe(errors[0]));
      } else {
        setStatus(errors.length ? 'partial' : 'ok',
                  `updated ${new Date().toLocaleTimeString()}${errors.length ? ' (some panels failed)' : ''}`);
      }
    } finally {
      ticking = false;
      state.renders += 1;
      document.body.dataset.renders = String(state.renders);
      if (tickAgain && !state.needsToken) {
        tick();
      }
    }
  }

  // --- Live events: fetch() and a stream reader (EventSource cannot send a header). ---------

  function showValue(value) {
    if (typeof value === 'number' && !Number.isInteger(value)) {
      return String(Number(value.toFixed(3)));  // 0.206, not 0.20588235294117646
    }
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  }

  function eventSummary(data) {
    if (typeof data !== 'object' || data === null) {
      return String(data);
    }
    return Object.entries(data)
        .filter(([key]) => key !== 'ts')
        .map(([key, value]) => `${key}=${showValue(value)}`)
        .join(' ');
  }

  function renderEvents() {
    const items = state.events.map((e) => el('li', {'data-event-type': e.type, 'data-event-id': e.id},
        el('time', {text: e.ts || ''}),
        el('span', {className: `type ${e.type}`, 'data-field': 'type', text: e.type}),
        el('span', {className: 'summary', text: eventSummary(e.data)})));
    $('events-list').replaceChildren(...items);
  }

  function addEvent(message) {
    let data = message.data;
    try {
      data = JSON.parse(message.data);
    } catch (ignored) {
      // shown as sent
    }
    // The next reconnect asks for what came after this one (Last-Event-ID). Not compared with
    // the previous id: a restarted gateway counts from 1 again.
    const id = Number(message.id);
    if (Number.isInteger(id) && id > 0) {
      state.lastEventId = id;
    }
    state.events.unshift({id: message.id, type: message.event || 'message', data,
                          ts: data && typeof data === 'object' ? data.ts : ''});
    state.events.length = Math.min(state.events.length, MAX_EVENTS);
    renderEvents();
    setPanel('events', 'ok', '');
  }

  function setStream(kind, text) {
    $('events-stream').dataset.state = kind;
    $('events-stream').textContent = text;
  }

  /// The text/event-stream format (the HTML standard's "Server-sent events"): lines end with
  /// CR, LF or CRLF; a blank line dispatches; ":" starts a comment; "field: value".
  class SseParser {
    constructor(onEvent, onComment, onRetry) {
      this.buffer = '';
      this.reset();
      this.onEvent = onEvent;
      this.onComment = onComment;
      this.onRetry = onRetry;
    }

    reset() {
      this.data = [];
      this.event = '';
      this.id = undefined;
    }

    push(text) {
      this.buffer += text;
      for (;;) {
        const m = /\r\n|\r|\n/.exec(this.buffer);
        // A lone CR at the end may be the first half of CRLF: wait for the next chunk.
        if (!m || (m[0] === '\r' && m.index === this.buffer.length - 1)) {
          return;
        }
        const line = this.buffer.slice(0, m.index);
        this.buffer = this.buffer.slice(m.index + m[0].length);
        this.line(line);
      }
    }

    line(line) {
      if (line === '') {
        if (this.data.length > 0) {
          this.onEvent({event: this.event, data: this.data.join('\n'), id: this.id});
        }
        this.reset();
        return;
      }
      if (line.startsWith(':')) {
        this.onComment(line.slice(1).trim());
        return;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) {
        value = value.slice(1);
      }
      if (field === 'data') {
        this.data.push(value);
      } else if (field === 'event') {
        this.event = value;
      } else if (field === 'id' && !value.includes('\0')) {
        this.id = value;
      } else if (field === 'retry' && /^\d+$/.test(value)) {
        this.onRetry(Number(value));
      }
    }
  }

  async function followEvents(controller) {
    // Last-Event-ID replays what the gateway kept after that id: everything it kept (0) on the
    // first connection, so the panel starts with the recent past; what was missed on a reconnect.
    const headers = {Accept: 'text/event-stream', 'Last-Event-ID': String(state.lastEventId)};
    const res = await request('/admin/events', headers, controller.signal);
    setStream('live', 'live');
    if (state.events.length === 0) {
      setPanel('events', 'empty', 'no events yet: they appear here as they happen');
    }
    state.streamRetryMs = RETRY_MIN_MS;
    const parser = new SseParser(
        addEvent,
        () => setStream('live', `live (heartbeat ${new Date().toLocaleTimeString()})`),
        (ms) => { state.streamRetryMs = Math.min(Math.max(ms, RETRY_MIN_MS), RETRY_MAX_MS); });
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const {value, done} = await reader.read();
      if (done) {
        return;
      }
      parser.push(value);
    }
  }

  async function runEvents(controller) {
    while (!controller.signal.aborted) {
      try {
        await followEvents(controller);
        setStream('reconnecting', 'reconnecting');
      } catch (error) {
        if (controller.signal.aborted) {
          return;
        }
        if (error instanceof Unauthorized) {
          setStream('auth', 'waiting for token');
          setPanel('events', 'auth', 'waiting for the admin token');
          askForToken(Boolean(state.token));
          return;  // useToken() starts a new stream
        }
        setStream('reconnecting', 'reconnecting');
        if (state.events.length === 0 || error instanceof HttpError) {
          setPanel('events', 'error', `live events: ${describe(error)}; retrying`);
        }
        state.streamRetryMs = Math.min(state.streamRetryMs * 2, RETRY_MAX_MS);
      }
      await new Promise((resolve) => setTimeout(resolve, state.streamRetryMs));
    }
  }

  function restartEvents() {
    if (state.stream) {
      state.stream.abort();
    }
    state.stream = new AbortController();
    runEvents(state.stream);
  }

  // --- Start. --------------------------------------------------------------------------------

  function start() {
    $('token-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const token = $('token-input').value.trim();
      $('token-input').value = '';
      if (token) {
        useToken(token);
      }
    });
    $('forget-token').addEventListener('click', () => {
      useToken('');
      askForToken(false);
    });
    $('forget-token').hidden = !state.token;
    restartEvents();
    tick();
    setInterval(() => {
      if (!state.needsToken) {
        tick();
      }
    }, POLL_MS);
  }

  start();
})();
