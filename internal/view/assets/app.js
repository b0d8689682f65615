// spade view: the app's only script. Plain DOM, no libraries; every text from the lake goes into the
// page as text nodes (never as HTML). Every page sets body[data-ready] to its name once drawn (or
// "error"), which the browser tests wait for.
'use strict';

// ---- helpers -------------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) if (c) el.append(c);
  return el;
}

async function api(path, options) {
  const res = await fetch(path, Object.assign({ headers: { 'Accept': 'application/json' } }, options || {}));
  let body;
  try { body = await res.json(); } catch (e) { throw new Error(`${res.status} ${res.statusText}`); }
  if (!res.ok) throw new Error(body && body.error ? body.error : `${res.status} ${res.statusText}`);
  return body;
}

function fmt(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') {
    if (Number.isInteger(v)) return String(v);
    if (Math.abs(v) >= 1000) return v.toFixed(0);
    return String(Number(v.toPrecision(4)));
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return '[' + v.map(fmt).join(', ') + ']';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

const pct = v => (v === null || v === undefined) ? '—' : (100 * v).toFixed(1) + '%';
const enc = encodeURIComponent;
function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) for (const x of [].concat(v)) if (x !== undefined && x !== null) u.append(k, x);
  return u.toString();
}
function consoleHref(sql, runs) { return '/console?' + qs({ run: runs, sql }); }
function sqlLink(sql, runs, label) {
  return h('a', { class: 'sqllink', href: consoleHref(sql, runs), title: sql, 'data-sql': sql }, label || 'SQL');
}
const runHref = run => `/runs/${enc(run)}`;
const stepHref = (run, step) => `/runs/${enc(run)}/steps/${step}`;
const envHref = (run, env) => `/runs/${enc(run)}/envs/${enc(env)}`;
const episodeHref = (run, ep) => `/runs/${enc(run)}/episodes/${enc(ep)}`;
const playHref = (run, hinted, unhinted) => `/runs/${enc(run)}/play?` + qs({ hinted, unhinted });

function rows(ds) { return ds.rows.map(r => Object.fromEntries(ds.columns.map((c, i) => [c, r[i]]))); }

function crumbs(...parts) {
  const el = document.getElementById('crumbs');
  el.replaceChildren(...parts.flatMap((p, i) => [i ? ' › ' : '', p]));
}

// ---- tables --------------------------------------------------------------------------------------

// table draws a dataset; numbers link to the console with the dataset's SQL; opts.links maps a column to
// a function of the row giving an href; headers sort.
function table(ds, opts) {
  opts = opts || {};
  const cols = ds.columns.filter(c => !(opts.hide || []).includes(c));
  let data = rows(ds);
  let sortCol = null, sortDir = 1;
  const tbody = h('tbody');
  const draw = () => {
    const sorted = sortCol === null ? data : [...data].sort((a, b) => cmp(a[sortCol], b[sortCol]) * sortDir);
    tbody.replaceChildren(...sorted.map(r => h('tr', {}, cols.map(c => cell(r, c)))));
  };
  const cell = (r, c) => {
    const v = r[c];
    const text = opts.format && opts.format[c] ? opts.format[c](v, r) : fmt(v);
    const link = opts.links && opts.links[c] ? opts.links[c](r) : null;
    if (link) return h('td', {}, h('a', { href: link }, text));
    if (typeof v === 'number') {
      return h('td', { class: 'num' }, h('a', { class: 'num', href: consoleHref(ds.sql, opts.runs), title: 'from: ' + ds.sql }, text));
    }
    return h('td', {}, text);
  };
  const head = h('tr', {}, cols.map(c => h('th', { title: 'sort', onclick: () => {
    sortDir = sortCol === c ? -sortDir : 1; sortCol = c; draw();
  } }, c)));
  draw();
  const wrap = h('div', { class: 'scroll' }, h('table', { class: 'data', 'data-table': opts.name || '' }, h('thead', {}, head), tbody));
  if (ds.truncated) wrap.append(h('p', { class: 'muted' }, `first ${ds.rows.length} rows shown; the CSV has them all`));
  return wrap;
}

function cmp(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

// ---- charts --------------------------------------------------------------------------------------

const COLORS = ['#2754c5', '#c2410c', '#15803d', '#7c3aed', '#b45309', '#0e7490', '#be185d', '#4b5563'];

// chart draws a chart the server laid out (internal/view/charts.go: the axes come from internal/axis, the
// report's axis helper): spec = {name, title, x_label, y_label, sql: [[label, sql]], series: [{name,
// points: [[x, y]]}], x: {min, max, ticks: [{v, label}]}, y: {...}}. Hovering shows every series' value at
// the nearest x; clicking calls opts.onPick(x). The margins fit the widest tick label, so no label is cut
// at an edge.
function chart(spec, opts) {
  opts = opts || {};
  const series = spec.series.map((se, i) => Object.assign({ color: COLORS[i % COLORS.length] }, se));
  const box = h('div', { class: 'chart', 'data-chart': spec.name });
  box.append(h('h3', {}, spec.title, (spec.sql || []).map(([label, sql]) => sqlLink(sql, opts.runs, label))));
  box.append(h('div', { class: 'legend' }, series.map(se => h('span', { class: 'legend-item' },
    h('span', { class: 'swatch', 'data-color': se.color }), se.name))));
  box.querySelectorAll('.swatch').forEach(el => { el.style.background = el.dataset.color; });
  const CH = 6; // px per character of a 10 px tick label (an upper bound for digits and k/M)
  const widest = Math.max(1, ...spec.y.ticks.map(t => t.label.length));
  const lastX = spec.x.ticks.length ? spec.x.ticks[spec.x.ticks.length - 1].label.length : 1;
  const W = 560, H = 200, L = 22 + widest * CH, R = Math.max(12, Math.ceil(lastX * CH / 2) + 4), T = 10, B = 34;
  const x0 = spec.x.min, x1 = spec.x.max > spec.x.min ? spec.x.max : spec.x.min + 1;
  const y0 = spec.y.min, y1 = spec.y.max > spec.y.min ? spec.y.max : spec.y.min + 1;
  // The data sit P px inside the frame, so a point at an end does not cover a tick label.
  const P = 6;
  const X = x => L + P + (x - x0) / (x1 - x0) * (W - L - R - 2 * P);
  const Y = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img' });
  for (const t of spec.y.ticks) {
    svg.append(s('line', { class: 'grid', x1: L, x2: W - R, y1: Y(t.v), y2: Y(t.v) }),
      s('text', { class: 'tick y', x: L - 4, y: Y(t.v) + 3, 'text-anchor': 'end', text: t.label }));
  }
  for (const t of spec.x.ticks) svg.append(s('text', { class: 'tick x', x: X(t.v), y: H - B + 13, 'text-anchor': 'middle', text: t.label }));
  svg.append(s('text', { class: 'label', x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle', text: spec.x_label }));
  svg.append(s('text', { class: 'label', x: 0, y: 0, 'text-anchor': 'middle', transform: `translate(9 ${(T + H - B) / 2}) rotate(-90)`, text: spec.y_label }));
  svg.append(s('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }));
  if (y0 < 0 && y1 > 0) svg.append(s('line', { class: 'zero', x1: L, x2: W - R, y1: Y(0), y2: Y(0) }));
  series.forEach(se => {
    const pts = se.points;
    if (pts.length > 1) {
      svg.append(s('polyline', { class: 'series', fill: 'none', stroke: se.color, 'stroke-width': 1.5, points: pts.map(p => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(' ') }));
    }
    // The points as one path of circles (two arcs each): one element per series, not one per point.
    const r = pts.length > 60 ? 1.5 : pts.length > 3 ? 3 : 4;
    const dots = pts.map(p => `M${(X(p[0]) - r).toFixed(1)},${Y(p[1]).toFixed(1)}a${r},${r} 0 1,0 ${2 * r},0a${r},${r} 0 1,0 ${-2 * r},0`).join('');
    if (dots) svg.append(s('path', { class: 'mark', d: dots, fill: se.color, 'data-points': pts.length }));
  });
  const hover = s('line', { class: 'hover', y1: T, y2: H - B, visibility: 'hidden' });
  svg.append(hover);
  const uniq = [...new Set(series.flatMap(se => se.points.map(p => p[0])))].sort((a, b) => a - b);
  const nearest = evt => {
    const rect = svg.getBoundingClientRect();
    const px = (evt.clientX - rect.left) / rect.width * W;
    const x = x0 + (px - L - P) / (W - L - R - 2 * P) * (x1 - x0);
    let best = uniq[0];
    for (const u of uniq) if (Math.abs(u - x) < Math.abs(best - x)) best = u;
    return best;
  };
  const tip = document.getElementById('tip');
  svg.addEventListener('mousemove', evt => {
    if (!uniq.length) return;
    const x = nearest(evt);
    hover.setAttribute('x1', X(x)); hover.setAttribute('x2', X(x)); hover.setAttribute('visibility', 'visible');
    const lines = [`${spec.x_label || 'step'} ${x}`];
    for (const se of series) {
      const p = se.points.find(q => q[0] === x);
      if (p) lines.push(`${se.name}: ${fmt(p[1])}`);
    }
    if (opts.onPick) lines.push('click: open the pool');
    tip.textContent = lines.join('\n');
    tip.hidden = false;
    tip.style.left = (evt.clientX + 12) + 'px';
    tip.style.top = (evt.clientY + 12) + 'px';
  });
  svg.addEventListener('mouseleave', () => { hover.setAttribute('visibility', 'hidden'); tip.hidden = true; });
  if (opts.onPick) {
    svg.style.cursor = 'pointer';
    svg.addEventListener('click', evt => { tip.hidden = true; if (uniq.length) opts.onPick(nearest(evt)); });
  }
  box.append(svg);
  return box;
}

// chartGroups draws charts under a heading per group, in the order the server listed them.
function chartGroups(charts, opts) {
  const out = [];
  let grid = null, group = null;
  for (const c of charts) {
    if (grid === null || c.group !== group) {
      group = c.group;
      if (group) out.push(h('h2', { 'data-group': group }, group));
      grid = h('div', { class: 'charts' });
      out.push(grid);
    }
    grid.append(chart(c, opts));
  }
  return out;
}

function points(ds, x, y) { return rows(ds).map(r => [r[x], r[y]]); }

// ---- Python highlighting ---------------------------------------------------------------------------

const PY_KEYWORDS = new Set(('False None True and as assert async await break class continue def del elif else except ' +
  'finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case').split(' '));
const PY_BUILTINS = new Set(('abs all any bool dict enumerate filter float int isinstance len list map max min print range ' +
  'reversed round set sorted str sum tuple zip self super ValueError KeyError IndexError Exception TypeError').split(' '));
const PY_TOKEN = /("""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|[rbfuRBFU]{0,2}"(?:\\.|[^"\\\n])*"?|[rbfuRBFU]{0,2}'(?:\\.|[^'\\\n])*'?)|(#[^\n]*)|(@[A-Za-z_][\w.]*)|(\b\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?j?\b|\b0[xXoObB][\da-fA-F_]+\b)|([A-Za-z_]\w*)/g;

// highlightPython returns a <pre> whose text is exactly the program, with spans for tokens.
function highlightPython(code) {
  const pre = h('pre', { class: 'code', 'data-field': 'program' });
  let last = 0, prevWord = '';
  for (const m of code.matchAll(PY_TOKEN)) {
    if (m.index > last) pre.append(code.slice(last, m.index));
    let cls = null;
    if (m[1]) cls = 'py-str';
    else if (m[2]) cls = 'py-com';
    else if (m[3]) cls = 'py-dec';
    else if (m[4]) cls = 'py-num';
    else if (m[5]) {
      if (PY_KEYWORDS.has(m[5])) cls = 'py-kw';
      else if (prevWord === 'def' || prevWord === 'class') cls = 'py-def';
      else if (PY_BUILTINS.has(m[5])) cls = 'py-bi';
    }
    pre.append(cls ? h('span', { class: cls }, m[0]) : m[0]);
    if (m[5]) prevWord = m[5];
    last = m.index + m[0].length;
  }
  if (last < code.length) pre.append(code.slice(last));
  return pre;
}

// ---- pages ---------------------------------------------------------------------------------------

const main = () => document.getElementById('main');

async function runsPage() {
  document.title = 'runs · spade view';
  crumbs(h('a', { href: '/' }, 'runs'));
  const data = await api('/api/runs');
  const m = main();
  m.replaceChildren(h('h1', {}, 'Runs'));
  if (!data.runs.length) { m.append(h('p', { class: 'muted' }, 'The lake has no runs yet.')); return; }
  const picked = new Set();
  const compare = h('button', { disabled: true, onclick: () => go('/compare?' + qs({ run: [...picked] })) }, 'compare selected runs');
  // The last window's figures; Agent tokens per step of it (a sum over a window cut short by the end of
  // the run would read as a collapse).
  const cols = [['band_share', 'band share'], ['solve_rate_nohint', 'solve, no hint'], ['solve_rate_hint', 'solve, hint'], ['regret', 'regret'],
    ['vendi_per_n', 'Vendi/n'], ['acceptance', 'acceptance'], ['agent_tokens_per_step', 'agent tokens/step']];
  const head = h('tr', {}, ['', 'run', 'preset', 'setting', 'steps committed', 'last step', 'stages (steps done)', 'windows'].map(c => h('th', {}, c)),
    cols.map(([c, label]) => h('th', { title: c + ' of the last window of the dashboard' }, label)));
  const body = data.runs.map(run => {
    const dash = rows(run.dashboard);
    const last = Object.assign({}, dash[dash.length - 1] || {});
    if (last.agent_tokens !== undefined && last.agent_tokens !== null) last.agent_tokens_per_step = last.agent_tokens / (last.window_end - last.window_start + 1);
    const box = h('input', { type: 'checkbox', 'data-run': run.run, onchange: e => {
      if (e.target.checked) picked.add(run.run); else picked.delete(run.run);
      compare.disabled = picked.size < 1;
    } });
    return h('tr', { 'data-run': run.run }, h('td', {}, box), h('td', { class: 'name' }, h('a', { href: runHref(run.run) }, run.run)),
      h('td', {}, run.preset), h('td', {}, run.setting), h('td', { class: 'num' }, String(run.steps_committed)),
      h('td', { class: 'num' }, run.last_step < 0 ? '—' : String(run.last_step)),
      h('td', { class: 'stages' }, run.stages.map(st => h('span', { class: 'stage' }, `${st.name} ${st.steps.length}`))),
      h('td', { class: 'num' }, String(dash.length)),
      cols.map(([c]) => h('td', { class: 'num' }, h('a', { class: 'num', href: consoleHref(run.dashboard.sql, [run.run]), title: 'from: ' + run.dashboard.sql }, fmt(last[c])))));
  });
  m.append(h('div', { class: 'scroll' }, h('table', { class: 'data runs', 'data-table': 'runs' }, h('thead', {}, head), h('tbody', {}, body))),
    h('div', { class: 'toolbar' }, compare, h('span', { class: 'muted' }, 'steps committed: steps whose grpo stage is committed (for a run that never trained, its last stage that ran); the last columns: the last window of the dashboard')));
  for (const run of data.runs) {
    m.append(h('h2', {}, 'Dashboard of ', h('a', { href: runHref(run.run) }, run.run), sqlLink(run.dashboard.sql, [run.run])),
      table(run.dashboard, { runs: [run.run], name: 'dashboard-' + run.run }));
  }
}

async function comparePage(params) {
  const runs = params.getAll('run');
  document.title = 'compare · spade view';
  crumbs(h('a', { href: '/' }, 'runs'), 'compare ' + runs.join(', '));
  const data = await api('/api/runs');
  const chosen = data.runs.filter(r => runs.includes(r.run));
  const m = main();
  m.replaceChildren(h('h1', {}, 'Runs side by side: ', runs.join(', ')));
  const cmp = await api('/api/compare?' + qs({ run: runs }));
  const charts = h('div', { class: 'charts' }, cmp.charts.map(c => chart(c, { runs })));
  m.append(configDiffSection(runs), charts, h('div', { class: 'cols' }, chosen.map(r => h('div', {}, h('h2', {}, h('a', { href: runHref(r.run) }, r.run), sqlLink(r.dashboard.sql, [r.run])),
    table(r.dashboard, { runs: [r.run] })))));
}

// configDiffSection is the compare page's table of the configuration keys on which the runs differ
// (GET /api/config/diff), filled in when the answer comes.
function configDiffSection(runs) {
  const sec = h('section', { 'data-section': 'config-diff' }, h('h2', {}, 'Configuration differences'));
  if (runs.length < 2) { sec.append(h('p', { class: 'muted' }, 'pick two or more runs to compare their configurations')); return sec; }
  api('/api/config/diff?' + qs({ run: runs })).then(d => {
    if (d.changes.length === 0) { sec.append(h('p', { class: 'muted' }, 'the runs have the same configuration')); return; }
    sec.append(h('table', { class: 'config-diff' },
      h('thead', {}, h('tr', {}, h('th', {}, 'key'), d.runs.map(r => h('th', {}, r)))),
      h('tbody', {}, d.changes.map(c => h('tr', {}, h('td', {}, h('code', {}, c.key)), c.values.map(v => h('td', {}, v)))))));
  }).catch(err => sec.append(h('p', { class: 'error' }, String(err.message || err))));
  return sec;
}

async function timelinePage(run) {
  document.title = `${run} · spade view`;
  crumbs(h('a', { href: '/' }, 'runs'), h('a', { href: runHref(run) }, run));
  const t = await api(`/api/runs/${enc(run)}/timeline`);
  const m = main();
  const last = t.last_step;
  m.replaceChildren(h('h1', {}, `Run ${run}`, h('span', { class: 'badge' }, t.preset), h('span', { class: 'badge' }, `steps 0–${last}`),
    h('span', { class: 'badge' }, `pool every ${t.refresh_every}`), h('span', { class: 'badge' }, `window ${t.window}`)));
  // Stages done per step: one row per stage, one cell per step; a cell opens the step's pool. The grid
  // has thousands of cells on a long run, so the cells are bare rects and the grid itself handles the
  // clicks and the hover tip.
  const cw = Math.max(3, Math.min(14, Math.floor(1100 / Math.max(1, last + 1)))), rh = 16, lw = 90;
  const grid = s('svg', { width: lw + (last + 1) * cw + 10, height: t.stages.length * rh + 20, 'data-chart': 'stages' });
  const done = t.stages.map(st => new Set(st.steps));
  t.stages.forEach((st, i) => {
    grid.append(s('text', { x: 0, y: i * rh + 12, text: st.name }));
    for (let step = 0; step <= last; step++) {
      grid.append(s('rect', { class: 'cell', x: lw + step * cw, y: i * rh + 2, width: Math.max(1, cw - 1), height: rh - 4,
        fill: done[i].has(step) ? '#15803d' : '#e5e7eb', 'data-step': step, 'data-stage': st.name, 'data-row': i }));
    }
  });
  const tip = document.getElementById('tip');
  grid.addEventListener('click', evt => {
    const cell = evt.target.closest('rect.cell');
    if (cell) { tip.hidden = true; go(stepHref(run, Number(cell.dataset.step))); }
  });
  grid.addEventListener('mousemove', evt => {
    const cell = evt.target.closest('rect.cell');
    if (!cell) { tip.hidden = true; return; }
    const i = Number(cell.dataset.row), step = Number(cell.dataset.step), st = t.stages[i];
    tip.textContent = `step ${step}: ${st.name} ${done[i].has(step) ? 'committed' : 'not committed'} (${st.table})\nclick: open the pool`;
    tip.hidden = false;
    tip.style.left = (evt.clientX + 12) + 'px';
    tip.style.top = (evt.clientY + 12) + 'px';
  });
  grid.addEventListener('mouseleave', () => { tip.hidden = true; });
  for (let step = 0; step <= last; step += Math.max(1, Math.ceil((last + 1) / 20))) {
    grid.append(s('text', { x: lw + step * cw, y: t.stages.length * rh + 14, text: String(step) }));
  }
  m.append(h('h2', {}, 'Stages done per step', h('span', { class: 'sqllink muted' }, 'from the lake: each stage\'s marker table committed at the step; click a step for its pool')),
    h('div', { class: 'grid-wrap' }, grid));
  const S = t.series, pick = x => go(stepHref(run, x));
  const runs = [run];
  m.append(h('h2', {}, 'Per step and window'), ...chartGroups(t.charts || [], { runs, onPick: pick }));
  const pools = [...new Set(rows(S.acceptance).map(r => r.step))];
  m.append(h('h2', {}, 'Pools'), h('p', {}, pools.length ? pools.map(p => [h('a', { href: stepHref(run, p) }, `step ${p}`), ' ']) : h('span', { class: 'muted' }, 'no pool committed')));
}

async function poolPage(run, step) {
  document.title = `${run} step ${step} · spade view`;
  const p = await api(`/api/runs/${enc(run)}/steps/${step}`);
  crumbs(h('a', { href: '/' }, 'runs'), h('a', { href: runHref(run) }, run), `step ${step}`);
  const m = main();
  const D = p.data, runs = [run];
  m.replaceChildren(h('h1', {}, `Pool of step ${step}`, h('span', { class: 'badge' }, `generated at step ${p.pool_step}, played steps ${p.pool_step}–${p.pool_end}`),
    step > 0 ? h('a', { class: 'sqllink', href: stepHref(run, step - 1) }, '‹ step ' + (step - 1)) : null,
    h('a', { class: 'sqllink', href: stepHref(run, step + 1) }, 'step ' + (step + 1) + ' ›')));
  const envs = rows(D.envs);
  const filter = h('input', { type: 'search', placeholder: 'filter: skill, class, label, doc…', 'data-control': 'filter' });
  const sortKeys = [['slot', 'slot'], ['solve_rate_nohint', 'solve rate (no hint)'], ['solve_rate_hint', 'solve rate (hint)'], ['regret', 'regret'],
    ['designer_reward', 'Designer reward'], ['anchor', 'anchor'], ['skill', 'skill'], ['class_name', 'class name']];
  const sort = h('select', { 'data-control': 'sort' }, sortKeys.map(([k, l]) => h('option', { value: k }, 'sort by ' + l)));
  const dir = h('select', { 'data-control': 'dir' }, h('option', { value: '1' }, 'ascending'), h('option', { value: '-1' }, 'descending'));
  const cards = h('div', { class: 'cards' });
  const num = (label, v, f) => [h('dt', {}, label), h('dd', {}, h('a', { class: 'num', href: consoleHref(D.envs.sql, runs), title: 'from: ' + D.envs.sql }, (f || fmt)(v)))];
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = envs.filter(e => !q || [e.skill, e.class_name, e.memory_label, e.doc_id, e.env_id].some(x => String(x || '').toLowerCase().includes(q)));
    shown.sort((a, b) => cmp(a[sort.value], b[sort.value]) * Number(dir.value));
    cards.replaceChildren(...shown.map(e => h('div', { class: 'card', 'data-env': e.env_id },
      h('h3', {}, h('a', { href: envHref(run, e.env_id) }, e.class_name || e.env_id),
        e.class_name_envs > 1 ? h('span', { class: 'badge warn', 'data-flag': 'repeated', title: `class name used by ${e.class_name_envs} envs in ${e.class_name_pools} pools of the run` }, `repeated ×${e.class_name_envs}`) : null,
        e.memory_label ? h('span', { class: 'badge' }, e.memory_label) : null),
      h('dl', {}, h('dt', {}, 'skill'), h('dd', {}, e.skill), h('dt', {}, 'slot'), h('dd', {}, `${e.slot} (attempt ${e.attempt})`),
        h('dt', {}, 'document'), h('dd', {}, e.doc_id || '—'),
        num('solve rate, no hint', e.solve_rate_nohint, pct), num('solve rate, hint', e.solve_rate_hint, pct),
        num('regret', e.regret), num('anchor', e.anchor), num('Designer reward', e.designer_reward),
        h('dt', {}, 'memory label'), h('dd', {}, e.memory_label || '—')))));
    count.textContent = `${shown.length} of ${envs.length} envs`;
  };
  const count = h('span', { class: 'muted' });
  [filter, sort, dir].forEach(el => el.addEventListener('input', draw));
  m.append(h('h2', {}, 'Envs', sqlLink(D.envs.sql, runs)), h('div', { class: 'toolbar' }, filter, sort, dir, count,
    h('span', { class: 'muted' }, `solve rates at step ${step}; regret, anchor and reward: variant ${p.variant}, the pool's final value when committed`)), cards);
  draw();
  // The gate: one row per candidate attempt, its verdict and the failing checks with their detail.
  const gate = rows(D.gate), accepted = new Set(envs.map(e => e.env_id));
  const verdicts = rows(D.candidates).map(c => {
    const checks = gate.filter(g => g.slot === c.slot && g.attempt === c.attempt);
    const failed = checks.filter(g => !g.passed && !g.skipped);
    return { slot: c.slot, attempt: c.attempt, env_id: c.env_id, verdict: accepted.has(c.env_id) ? 'accepted' : (c.parse_error ? 'parse error' : (failed.length ? 'rejected' : 'not accepted')),
      checks: `${checks.filter(g => g.passed).length} passed, ${failed.length} failed, ${checks.filter(g => g.skipped).length} skipped`,
      failing: failed.map(g => g.check).join(', ') || (c.parse_error ? 'parse' : ''),
      detail: failed.map(g => `${g.check}: ${g.error}`).join('\n') || c.parse_error || '' };
  });
  const vds = { sql: D.gate.sql, columns: ['slot', 'attempt', 'env_id', 'verdict', 'checks', 'failing', 'detail'], rows: verdicts.map(v => [v.slot, v.attempt, v.env_id, v.verdict, v.checks, v.failing, v.detail]) };
  m.append(h('h2', {}, 'The gate\'s verdicts per candidate and attempt', sqlLink(D.candidates.sql, runs, 'candidates SQL'), sqlLink(D.gate.sql, runs, 'gate SQL')),
    table(vds, { runs, name: 'gate', links: { env_id: r => accepted.has(r.env_id) ? envHref(run, r.env_id) : null } }));
  m.append(h('h2', {}, 'Repeated class names and code in the run', sqlLink(D.repeated.sql, runs)),
    D.repeated.rows.length ? table(D.repeated, { runs, name: 'repeated' }) : h('p', { class: 'muted' }, 'none'));
}

async function envPage(run, env) {
  document.title = `${env} · spade view`;
  const e = await api(`/api/runs/${enc(run)}/envs/${enc(env)}`);
  const E = e.env, D = e.data, runs = [run];
  crumbs(h('a', { href: '/' }, 'runs'), h('a', { href: runHref(run) }, run), h('a', { href: stepHref(run, E.step) }, `step ${E.step}`), E.class_name || env);
  const m = main();
  m.replaceChildren(h('h1', {}, E.class_name || env, h('span', { class: 'badge' }, E.skill), h('span', { class: 'badge' }, env), sqlLink(e.env_sql, runs)));
  m.append(h('p', { class: 'muted' }, `pool step ${E.step}, slot ${E.slot}, attempt ${E.attempt}, document ${E.doc_id || '—'}, code sha256 ${String(E.code_sha256 || '').slice(0, 12)}`));
  m.append(h('h2', {}, 'Hint'), h('pre', { 'data-field': 'hint' }, E.hint || ''));
  m.append(h('h2', {}, 'Program'), highlightPython(E.code || ''));
  const sample = rows(D.sample)[0], doc = rows(D.corpus)[0];
  m.append(h('h2', {}, 'Corpus excerpt', sqlLink(D.sample.sql, runs, 'sample SQL'), sqlLink(D.corpus.sql, runs, 'corpus SQL')));
  if (sample && sample.doc_id === E.doc_id && sample.excerpt) m.append(h('p', { class: 'muted' }, `the slot's excerpt of ${sample.doc_id}`), h('pre', { 'data-field': 'excerpt' }, sample.excerpt));
  else if (doc) m.append(h('p', { class: 'muted' }, `document ${doc.doc_id} (${doc.domain || ''} ${doc.source || ''})`), h('pre', { 'data-field': 'excerpt' }, doc.text));
  else m.append(h('p', { class: 'muted' }, 'no excerpt recorded (no corpus, or the corpus is not in this lake)'));
  m.append(h('h2', {}, 'Memory examples in the Designer\'s prompt', sqlLink(D.designer_call.sql, runs)));
  m.append(e.memory_section ? h('pre', { 'data-field': 'memory' }, e.memory_section) : h('p', { class: 'muted' }, 'the prompt showed no memory'));
  if (D.memory_refs.rows.length) m.append(h('p', {}, 'memory entries: ', rows(D.memory_refs).map(r => [h('a', { href: envHref(run, r.env_id) }, `${r.class_name} (step ${r.step})`), ' '])));
  m.append(h('h2', {}, 'Designer reward', sqlLink(D.rewards.sql, runs)), table(D.rewards, { runs, name: 'rewards' }));
  // Episodes, with the hinted/unhinted pairs that share a seed.
  const eps = rows(D.episodes);
  const hinted = eps.filter(x => x.hinted), plain = eps.filter(x => !x.hinted);
  m.append(h('h2', {}, 'Plays side by side'));
  const pickH = h('select', { 'data-control': 'hinted' }, hinted.map(x => h('option', { value: x.episode_id }, `hinted · step ${x.step} · seed ${x.seed} · return ${fmt(x.return)}`)));
  const pickU = h('select', { 'data-control': 'unhinted' }, plain.map(x => h('option', { value: x.episode_id }, `no hint · step ${x.step} · seed ${x.seed} · return ${fmt(x.return)}`)));
  // The unhinted pick follows the hinted one: the play with the same seed (paired seeds), else one of
  // the same step. The first hinted play that has a same-seed twin is picked to start with.
  const syncPair = () => {
    const hx = hinted.find(x => x.episode_id === pickH.value);
    const twin = hx && (plain.find(x => x.seed === hx.seed) || plain.find(x => x.step === hx.step));
    if (twin) pickU.value = twin.episode_id;
  };
  const seeds = new Set(plain.map(x => x.seed));
  const paired = hinted.find(x => seeds.has(x.seed));
  if (paired) pickH.value = paired.episode_id;
  pickH.addEventListener('change', syncPair);
  syncPair();
  m.append(hinted.length && plain.length
    ? h('div', { class: 'toolbar' }, pickH, pickU, h('button', { 'data-control': 'play', onclick: () => go(playHref(run, pickH.value, pickU.value)) }, 'read side by side'),
      h('span', { class: 'muted' }, 'the unhinted pick follows the hinted one\'s seed when a paired play exists'))
    : h('p', { class: 'muted' }, 'this env needs both a hinted and an unhinted play to compare'));
  const pairs = new Map(plain.map(x => [x.seed, x]));
  m.append(h('h2', {}, 'Episodes', sqlLink(D.episodes.sql, runs)), table(D.episodes, { runs, name: 'episodes',
    links: { episode_id: r => episodeHref(run, r.episode_id), seed: r => r.hinted && pairs.has(r.seed) ? playHref(run, r.episode_id, pairs.get(r.seed).episode_id) : null } }));
  const call = rows(D.designer_call)[0];
  m.append(h('h2', {}, 'The Designer\'s response'));
  const cand = rows(D.candidate);
  const accepted = cand.find(c => c.attempt === E.attempt);
  m.append(h('details', { open: true }, h('summary', {}, `raw response of attempt ${E.attempt}`, sqlLink(D.candidate.sql, runs)), h('pre', { 'data-field': 'response' }, (accepted && accepted.raw_response) || (call && call.response_text) || '')));
  for (const c of cand.filter(c => c.attempt !== E.attempt)) {
    m.append(h('details', {}, h('summary', {}, `attempt ${c.attempt}` + (c.parse_error ? ` (parse error: ${c.parse_error})` : '')), h('pre', {}, c.raw_response || '')));
  }
  if (call) m.append(h('details', {}, h('summary', {}, `the whole prompt (${call.prompt_tokens} tokens; answer ${call.completion_tokens} tokens in ${fmt(call.latency_ms)} ms)`), h('pre', { 'data-field': 'prompt' }, e.prompt)));
}

// episodeColumn draws one play: outcome and turns. The data-field attributes are what the tests read.
function episodeColumn(run, data, side) {
  const ep = data.episode, turns = rows(data.data.turns), runs = [run];
  const col = h('div', { class: 'side ' + side, 'data-side': side, 'data-episode': ep.episode_id });
  col.append(h('h2', {}, ep.hinted ? 'With the hint' : 'Without the hint', ' ', h('a', { class: 'sqllink', href: episodeHref(run, ep.episode_id) }, ep.episode_id)));
  col.append(h('div', { class: 'outcome', 'data-field': 'outcome', 'data-return': String(ep.return), 'data-success': String(ep.success), 'data-ended-by': ep.ended_by },
    h('strong', {}, ep.success ? 'solved' : 'not solved'), ` · return ${fmt(ep.return)} · ended by ${ep.ended_by} · ${ep.turns} turns · ${ep.tokens} tokens · seed ${ep.seed} · step ${ep.step}`,
    ep.error ? h('div', { class: 'error' }, ep.error) : null, sqlLink(data.episode_sql, runs)));
  for (const t of turns) {
    col.append(h('div', { class: 'turn', 'data-turn': t.turn },
      h('div', { class: 'meta' }, `turn ${t.turn} · reward `, h('a', { class: 'num', href: consoleHref(data.data.turns.sql, runs) }, fmt(t.reward)),
        ` · done ${t.done} · tokens ${fmt(t.prompt_tokens)} in / ${fmt(t.completion_tokens)} out · ${fmt(t.latency_ms)} ms` + (t.finish_reason ? ` · ${t.finish_reason}` : '')),
      h('h3', {}, 'observation'), h('pre', { 'data-field': 'observation' }, t.observation || ''),
      h('h3', {}, 'the Agent\'s answer'), h('pre', { 'data-field': 'answer' }, t.answer ?? '(no call recorded)'),
      h('div', {}, 'parsed action: ', h('code', { 'data-field': 'action' }, t.action || '—'), t.parse_error ? h('span', { class: 'badge bad' }, 'parse error: ' + t.parse_error) : null,
        t.call_error ? h('span', { class: 'badge bad' }, 'call error: ' + t.call_error) : null),
      t.info && t.info !== '{}' ? h('div', { class: 'meta' }, 'info: ' + t.info) : null));
  }
  col.append(h('p', {}, sqlLink(data.data.turns.sql, runs, 'turns SQL')));
  return col;
}

async function episodePage(run, id) {
  document.title = `${id} · spade view`;
  const data = await api(`/api/runs/${enc(run)}/episodes/${enc(id)}`);
  const ep = data.episode, env = rows(data.data.env)[0] || {};
  crumbs(h('a', { href: '/' }, 'runs'), h('a', { href: runHref(run) }, run), h('a', { href: stepHref(run, ep.step) }, `step ${ep.step}`),
    h('a', { href: envHref(run, ep.env_id) }, env.class_name || ep.env_id), id);
  const m = main();
  m.replaceChildren(h('h1', {}, `Episode ${id}`));
  const others = rows(data.data.counterparts);
  if (others.length) {
    m.append(h('p', {}, 'compare with: ', others.map(o => [h('a', { href: ep.hinted ? playHref(run, ep.episode_id, o.episode_id) : playHref(run, o.episode_id, ep.episode_id) },
      `${o.hinted ? 'hinted' : 'unhinted'} seed ${o.seed} step ${o.step}`), ' ']), sqlLink(data.data.counterparts.sql, [run])));
  }
  m.append(episodeColumn(run, data, ep.hinted ? 'hinted' : 'unhinted'));
}

async function playPage(run, params) {
  const hid = params.get('hinted'), uid = params.get('unhinted');
  document.title = `plays · spade view`;
  const [a, b] = await Promise.all([api(`/api/runs/${enc(run)}/episodes/${enc(hid)}`), api(`/api/runs/${enc(run)}/episodes/${enc(uid)}`)]);
  const env = rows(a.data.env)[0] || {};
  crumbs(h('a', { href: '/' }, 'runs'), h('a', { href: runHref(run) }, run), h('a', { href: stepHref(run, a.episode.step) }, `step ${a.episode.step}`),
    h('a', { href: envHref(run, a.episode.env_id) }, env.class_name || a.episode.env_id), 'plays');
  const m = main();
  const same = a.episode.seed === b.episode.seed;
  m.replaceChildren(h('h1', {}, `${env.class_name || a.episode.env_id}: a hinted and an unhinted play`, h('span', { class: same ? 'badge good' : 'badge warn' }, same ? `same seed ${a.episode.seed}` : 'different seeds')));
  if (env.hint) m.append(h('details', {}, h('summary', {}, 'the hint'), h('pre', {}, env.hint)));
  m.append(h('div', { class: 'cols' }, episodeColumn(run, a, 'hinted'), episodeColumn(run, b, 'unhinted')));
}

async function consolePage(params) {
  document.title = 'SQL console · spade view';
  crumbs(h('a', { href: '/' }, 'runs'), 'SQL console');
  const runsData = await api('/api/runs');
  const chosen = new Set(params.getAll('run').flatMap(r => r.split(',')).filter(Boolean));
  const m = main();
  const area = h('textarea', { spellcheck: 'false', 'data-control': 'sql' });
  area.value = params.get('sql') || 'select step, hinted, count(*) as episodes, avg("return") as mean_return\nfrom episodes group by all order by all';
  const boxes = runsData.runs.map(r => h('label', {}, h('input', { type: 'checkbox', value: r.run, checked: chosen.size === 0 || chosen.has(r.run) }), ' ' + r.run + ' '));
  const out = h('div', { 'data-field': 'result' });
  const csv = h('a', { href: '#', 'data-control': 'csv' }, 'download CSV');
  const selected = () => boxes.map(b => b.querySelector('input')).filter(i => i.checked).map(i => i.value);
  const run = async () => {
    const runs = selected();
    history.replaceState(null, '', '/console?' + qs({ run: runs, sql: area.value }));
    csv.href = '/api/query.csv?' + qs({ run: runs, sql: area.value });
    out.replaceChildren(h('p', { class: 'muted' }, 'running…'));
    const t0 = performance.now();
    try {
      const ds = await api('/api/query', { method: 'POST', headers: { 'Content-Type': 'application/json', 'Accept': 'application/json' }, body: JSON.stringify({ runs, sql: area.value }) });
      out.replaceChildren(h('p', { class: 'muted' }, `${ds.rows.length} rows in ${Math.round(performance.now() - t0)} ms`), table(ds, { runs, name: 'result' }));
      document.body.dataset.query = 'ok';
    } catch (err) {
      out.replaceChildren(h('div', { class: 'error', 'data-field': 'error' }, err.message));
      document.body.dataset.query = 'error';
    }
  };
  area.addEventListener('keydown', e => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); } });
  const tables = ['episodes', 'turns', 'envs', 'candidates', 'gate_results', 'llm_calls', 'samples', 'designer_rewards', 'memory', 'ema_state', 'grpo_batches', 'train_metrics', 'embeddings', 'corpus'];
  const models = ['dashboard', 'learnable_band', 'solve_rates', 'regret_curve', 'acceptance', 'gate_failures', 'repeated_envs', 'audits', 'cost', 'vendi_by_window', 'env_outcomes', 'episode_outcomes'];
  const insert = name => h('a', { href: '#', onclick: ev => { ev.preventDefault(); area.value = `select * from ${name} limit 100`; run(); } }, name);
  m.replaceChildren(h('h1', {}, 'SQL console'),
    h('p', { class: 'muted' }, 'Any spade query SQL over the chosen runs\' views and the models of sql/. Read-only: one SELECT, WITH, FROM, DESCRIBE or SHOW query. Ctrl+Enter runs.'),
    h('div', { class: 'toolbar' }, 'runs: ', boxes), area,
    h('div', { class: 'toolbar' }, h('button', { onclick: run, 'data-control': 'run' }, 'run'), csv),
    h('p', { class: 'muted' }, 'tables: ', tables.map(t => [insert(t), ' ']), h('br'), 'models: ', models.map(t => [insert(t), ' '])), out);
  csv.href = '/api/query.csv?' + qs({ run: selected(), sql: area.value });
  if (params.get('sql')) await run();
}

// ---- routing -------------------------------------------------------------------------------------

function go(href) { history.pushState(null, '', href); route(); }

async function route() {
  const path = location.pathname, params = new URLSearchParams(location.search);
  document.body.dataset.ready = '';
  document.getElementById('tip').hidden = true;
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  let page = 'runs';
  try {
    if (parts.length === 0) await runsPage();
    else if (parts[0] === 'console') { page = 'console'; await consolePage(params); }
    else if (parts[0] === 'compare') { page = 'compare'; await comparePage(params); }
    else if (parts[0] === 'runs' && parts.length === 2) { page = 'timeline'; await timelinePage(parts[1]); }
    else if (parts[0] === 'runs' && parts[2] === 'steps') { page = 'pool'; await poolPage(parts[1], Number(parts[3])); }
    else if (parts[0] === 'runs' && parts[2] === 'envs') { page = 'env'; await envPage(parts[1], parts[3]); }
    else if (parts[0] === 'runs' && parts[2] === 'episodes') { page = 'episode'; await episodePage(parts[1], parts[3]); }
    else if (parts[0] === 'runs' && parts[2] === 'play') { page = 'play'; await playPage(parts[1], params); }
    else throw new Error('no page at ' + path);
    document.body.dataset.ready = page;
  } catch (err) {
    main().replaceChildren(h('h1', {}, 'Error'), h('div', { class: 'error', 'data-field': 'error' }, err.message));
    document.body.dataset.ready = 'error';
  }
  window.scrollTo(0, 0);
}

document.addEventListener('click', e => {
  const a = e.target.closest('a');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/') || a.getAttribute('href') === '#') return;
  e.preventDefault();
  go(url.pathname + url.search);
});
window.addEventListener('popstate', route);
route();
